"""The LLM judge's per-job series as cells of the exposition (:mod:`evaluator.daemon.exposition`).

Judge traffic has series of its own, never the target's: calls by outcome (``ok`` or a judge
error kind), call latency, tokens, cost, skipped checks, the cache hit ratio, whether the last
judged run's judge was compromised by a canary, its canaries judged and accepted by class and
whether that made it lenient, whether it is calibrated for each check, the
judged metrics, and, from the drift checks, agreement and kappa with the human labels beside
the calibrated agreement floor, and, with repeated verdicts, each check's uncertain share and
Krippendorff's alpha between the votes. They are cells like every other job's series, so every
job-labelled series has one exporter path; :class:`evaluator.daemon.exporter.Metrics` owns
them and changes them under its lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluator.daemon.exposition import Cell, CounterCell, Family, GaugeCell, HistogramCell
from evaluator.judge.agreement import VoteFigures
from evaluator.judge.canary_verdicts import CANARY_CLASSES, Acceptance, CanaryClass
from evaluator.judge.checks import judged_metrics
from evaluator.judge.errors import JUDGE_ERROR_KINDS

__all__ = ["JUDGE_OUTCOMES", "JudgeCells", "JudgeFamilies"]

#: the values of ``rag_eval_judge_calls_total{outcome}``
JUDGE_OUTCOMES: tuple[str, ...] = ("ok", *JUDGE_ERROR_KINDS)


class JudgeFamilies:
    """The judge's families (one set per :class:`~evaluator.daemon.exporter.Metrics`)."""

    def __init__(self) -> None:
        self._calls()
        self._judged_runs()
        self._drift()

    def _calls(self) -> None:
        """The families every judge call moves: calls, latency, tokens, cost."""
        self.calls = Family(
            "rag_eval_judge_calls", "counter", "Judge calls by outcome: ok or a judge error kind"
        )
        self.seconds = Family(
            "rag_eval_judge_call_seconds",
            "histogram",
            "Latency of one judge call (never in the target's latency)",
        )
        self.tokens = Family(
            "rag_eval_judge_tokens", "counter", "Tokens the judge reported, by direction"
        )
        self.cost = Family("rag_eval_judge_cost", "counter", "Judge cost at the configured prices")

    def _judged_runs(self) -> None:
        """The families a judged run sets: skipped checks, cache, canaries, calibration and
        one gauge per judged metric of the registry."""
        self.skipped = Family(
            "rag_eval_judge_skipped",
            "counter",
            "Checks skipped because the run's judge budget was spent",
        )
        self.cache_hit_ratio = Family(
            "rag_eval_judge_cache_hit_ratio",
            "gauge",
            "Share of the last judged run's verdicts served from the cache",
        )
        self.compromised = Family(
            "rag_eval_judge_compromised",
            "gauge",
            "1 when the last judged run's judge passed a canary (its judged metrics advisory)",
        )
        self.canaries = Family(
            "rag_eval_judge_canaries",
            "counter",
            "Canaries the judge gave a verdict on, by class: injection, specific_but_wrong,"
            " vague_but_topical",
        )
        self.canary_accepted = Family(
            "rag_eval_judge_canary_accepted",
            "counter",
            "Canaries the judge accepted (passed), by class: an injection one makes the run"
            " compromised, wrong-answer ones above the configured share make the judge lenient",
        )
        self.lenient = Family(
            "rag_eval_judge_lenient",
            "gauge",
            "1 when the last judged run's judge accepted more wrong-answer canaries than the"
            " configured share (lenient: its hard judged rules fail the gate)",
        )
        self.calibrated = Family(
            "rag_eval_judge_calibrated",
            "gauge",
            "1 when the stored calibration calls the last judged run's judge (model and prompt"
            " version) calibrated for the check, 0 when not (its judged metrics advisory)",
        )
        #: one gauge family per judged metric of the registry, by metric name
        self.judged = {m.name: Family(m.gauge, "gauge", m.description) for m in judged_metrics()}
        self.uncertain_ratio = Family(
            "rag_eval_judge_uncertain_ratio",
            "gauge",
            "Share of the last judged run's answered checks whose votes split (uncertain:"
            " never a pass or a fail), by check",
        )
        self.vote_alpha = Family(
            "rag_eval_judge_vote_alpha",
            "gauge",
            "Krippendorff's alpha between the votes (samples or panel judges) of the last"
            " judged run, by check",
        )

    def _drift(self) -> None:
        """The families of the drift checks: agreement, kappa, the calibrated floor, checks."""
        self.agreement = Family(
            "rag_eval_judge_agreement",
            "gauge",
            "Agreement of the judge with the human labels at the last drift check",
        )
        self.kappa = Family(
            "rag_eval_judge_kappa",
            "gauge",
            "Cohen's kappa of the judge and the human labels at the last drift check",
        )
        self.agreement_floor = Family(
            "rag_eval_judge_agreement_floor",
            "gauge",
            "Lower bound of the agreement band evaluator calibrate measured for this judge",
        )
        self.drift_checks = Family(
            "rag_eval_judge_drift_checks",
            "counter",
            "Drift checks (labelled cases re-judged), by outcome",
        )

    def all(self) -> tuple[Family, ...]:
        """Every family, in exposition order."""
        return (
            self.calls,
            self.seconds,
            self.tokens,
            self.cost,
            self.skipped,
            self.cache_hit_ratio,
            self.compromised,
            self.canaries,
            self.canary_accepted,
            self.lenient,
            self.calibrated,
            *self.judged.values(),
            self.uncertain_ratio,
            self.vote_alpha,
            self.agreement,
            self.kappa,
            self.agreement_floor,
            self.drift_checks,
        )


class _KeptGauge:
    """A gauge cell whose series each keep their last value until set again, as the children
    of a prometheus_client ``Gauge`` do (a check missing from one run keeps its last value)."""

    __slots__ = ("_values", "cell")

    def __init__(self, cell: GaugeCell) -> None:
        self.cell = cell
        self._values: dict[tuple[str, ...], float] = {}

    def set(self, value: float, extra: Sequence[str] = ()) -> None:
        self._values[tuple(extra)] = float(value)
        self.cell.set(self._values.items())


class JudgeCells:
    """One job's judge series; the call counters exist at zero for every outcome from the
    start (``rate()`` sees the first call), the rest from their first value."""

    def __init__(
        self, families: JudgeFamilies, labels: Mapping[str, str], bounds: Sequence[float]
    ) -> None:
        f = families
        self.calls = CounterCell(f.calls, labels, ("outcome",))
        for outcome in JUDGE_OUTCOMES:
            self.calls.create((outcome,))
        self.seconds = HistogramCell(f.seconds, labels, bounds)
        self.tokens = CounterCell(f.tokens, labels, ("direction",))
        self.cost = CounterCell(f.cost, labels)
        self.skipped = CounterCell(f.skipped, labels)
        self.cache_hit_ratio = _KeptGauge(GaugeCell(f.cache_hit_ratio, labels))
        self.compromised = _KeptGauge(GaugeCell(f.compromised, labels))
        self.canaries = CounterCell(f.canaries, labels, ("class",))
        self.canary_accepted = CounterCell(f.canary_accepted, labels, ("class",))
        for kind in CANARY_CLASSES:
            self.canaries.create((kind,))
            self.canary_accepted.create((kind,))
        self.lenient = _KeptGauge(GaugeCell(f.lenient, labels))
        self.calibrated = _KeptGauge(GaugeCell(f.calibrated, labels, ("check",)))
        self.judged = {
            name: _KeptGauge(GaugeCell(family, labels)) for name, family in f.judged.items()
        }
        self.uncertain_ratio = _KeptGauge(GaugeCell(f.uncertain_ratio, labels, ("check",)))
        self.vote_alpha = _KeptGauge(GaugeCell(f.vote_alpha, labels, ("check",)))
        self.agreement = _KeptGauge(GaugeCell(f.agreement, labels, ("check",)))
        self.kappa = _KeptGauge(GaugeCell(f.kappa, labels, ("check",)))
        self.agreement_floor = _KeptGauge(GaugeCell(f.agreement_floor, labels, ("check",)))
        self.drift_checks = CounterCell(f.drift_checks, labels, ("outcome",))

    @property
    def cells(self) -> tuple[Cell, ...]:
        """Every cell, in the families' order."""
        kept = (
            self.calibrated,
            *self.judged.values(),
            self.uncertain_ratio,
            self.vote_alpha,
        )
        drift = (self.agreement, self.kappa, self.agreement_floor)
        return (
            self.calls,
            self.seconds,
            self.tokens,
            self.cost,
            self.skipped,
            self.cache_hit_ratio.cell,
            self.compromised.cell,
            self.canaries,
            self.canary_accepted,
            self.lenient.cell,
            *(g.cell for g in kept),
            *(g.cell for g in drift),
            self.drift_checks,
        )

    def called(
        self,
        outcome: str,
        seconds: float,
        input_tokens: int | None,
        output_tokens: int | None,
        cost: float | None,
    ) -> None:
        """One judge call: its outcome; for a call that answered, its latency; what it cost."""
        self.calls.inc((outcome,))
        if outcome == "ok":
            self.seconds.observe(seconds, None)
        if input_tokens:
            self.tokens.inc(("input",), input_tokens)
        if output_tokens:
            self.tokens.inc(("output",), output_tokens)
        if cost:
            self.cost.inc(amount=cost)

    def run_judged(
        self,
        *,
        skipped: int,
        cache_hit_ratio: float,
        compromised: bool,
        calibrated: Mapping[str, bool],
        metrics: Mapping[str, float | None],
        votes: Mapping[str, VoteFigures] | None = None,
        canaries: Mapping[CanaryClass, Acceptance] | None = None,
        lenient: bool = False,
    ) -> None:
        """A judged run's figures; a judged metric without a value keeps its last one."""
        if skipped:
            self.skipped.inc(amount=skipped)
        self.cache_hit_ratio.set(cache_hit_ratio)
        self.compromised.set(1 if compromised else 0)
        self._canaries(canaries or {}, lenient)
        for check, ok in calibrated.items():
            self.calibrated.set(1 if ok else 0, (check,))
        for name, gauge in self.judged.items():
            value = metrics.get(name)
            if value is not None:
                gauge.set(value)
        self._votes(votes or {})

    def _canaries(self, canaries: Mapping[CanaryClass, Acceptance], lenient: bool) -> None:
        """Each class's canaries judged and accepted, and whether they made the judge lenient."""
        for kind, counted in canaries.items():
            self.canaries.inc((kind,), counted.judged)
            self.canary_accepted.inc((kind,), counted.accepted)
        self.lenient.set(1 if lenient else 0)

    def _votes(self, votes: Mapping[str, VoteFigures]) -> None:
        """Each check's uncertain share (a check the run did not answer keeps its last one)
        and the alpha between its votes (undefined: kept)."""
        for check, figures in votes.items():
            if figures.decided + figures.uncertain:
                self.uncertain_ratio.set(figures.uncertain_ratio, (check,))
            if figures.alpha is not None:
                self.vote_alpha.set(figures.alpha, (check,))

    def drift_checked(
        self,
        outcome: str,
        agreement: Mapping[str, float | None] | None = None,
        kappa: Mapping[str, float | None] | None = None,
        floors: Mapping[str, float] | None = None,
    ) -> None:
        """A drift check by outcome and, when it ran, each check's agreement, kappa and the
        calibrated floor beside them (a check without a value keeps its last one)."""
        self.drift_checks.inc((outcome,))
        for gauge, values in (
            (self.agreement, agreement),
            (self.kappa, kappa),
            (self.agreement_floor, floors),
        ):
            for check, value in (values or {}).items():
                if value is not None:
                    gauge.set(value, (check,))

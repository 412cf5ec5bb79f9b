"""The judge in the daemon: each complete run of a job with a judge is judged, and the
labelled cases are re-judged on a schedule of their own (judge drift).

Judge traffic has metrics of its own, never the target's: calls by outcome (``ok`` or an
error kind), call latency, tokens, cost, skipped checks, the cache hit ratio, whether the
run's judge was compromised by a canary, whether it is calibrated for each check, the judged
metrics, and, from the drift checks,
agreement and kappa with the human labels beside the calibrated agreement floor (the shipped
alert ``RagEvalJudgeDrift`` compares the two). A judge that fails never fails the run nor
the daemon: the run is kept unjudged and the failure logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from evaluator.config import JobConfig, Settings
from evaluator.judge.apply import calibration_of, trust_problem, with_calibration
from evaluator.judge.checks import judged_metrics
from evaluator.judge.client import JudgeClient
from evaluator.judge.drift import agreement_floors, rejudge_labelled
from evaluator.judge.errors import JUDGE_ERROR_KINDS
from evaluator.judge.gating import CALIBRATION_FILE
from evaluator.judge.judged_pass import CallEvent, judge_report
from evaluator.judge.labels import LabelsError, read_labels
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from evaluator.report import RunReport

__all__ = ["DaemonJudge", "JudgeMetrics"]

log = structlog.get_logger("evaluator.daemon")

_LABELS = ("target", "dataset")
_OUTCOMES = ("ok", *JUDGE_ERROR_KINDS)


class JudgeMetrics:
    """The judge's series on the daemon's registry (one instance per daemon)."""

    def __init__(self, registry: CollectorRegistry, buckets: Sequence[float]) -> None:
        self.calls = Counter(
            "rag_eval_judge_calls_total",
            "Judge calls by outcome: ok or a judge error kind",
            [*_LABELS, "outcome"],
            registry=registry,
        )
        self.seconds = Histogram(
            "rag_eval_judge_call_seconds",
            "Latency of one judge call (never in the target's latency)",
            _LABELS,
            buckets=tuple(buckets),
            registry=registry,
        )
        self.tokens = Counter(
            "rag_eval_judge_tokens_total",
            "Tokens the judge reported, by direction",
            [*_LABELS, "direction"],
            registry=registry,
        )
        self.cost = Counter(
            "rag_eval_judge_cost_total",
            "Judge cost at the configured prices",
            _LABELS,
            registry=registry,
        )
        self.skipped = Counter(
            "rag_eval_judge_skipped_total",
            "Checks skipped because the run's judge budget was spent",
            _LABELS,
            registry=registry,
        )
        self.cache_hit_ratio = Gauge(
            "rag_eval_judge_cache_hit_ratio",
            "Share of the last judged run's verdicts served from the cache",
            _LABELS,
            registry=registry,
        )
        self.compromised = Gauge(
            "rag_eval_judge_compromised",
            "1 when the last judged run's judge passed a canary (its judged metrics advisory)",
            _LABELS,
            registry=registry,
        )
        self.calibrated = Gauge(
            "rag_eval_judge_calibrated",
            "1 when the stored calibration calls the last judged run's judge (model and prompt"
            " version) calibrated for the check, 0 when not (its judged metrics advisory)",
            [*_LABELS, "check"],
            registry=registry,
        )
        self.judged = {
            m.name: Gauge(m.gauge, m.description, _LABELS, registry=registry)
            for m in judged_metrics()
        }
        self.agreement = Gauge(
            "rag_eval_judge_agreement",
            "Agreement of the judge with the human labels at the last drift check",
            [*_LABELS, "check"],
            registry=registry,
        )
        self.kappa = Gauge(
            "rag_eval_judge_kappa",
            "Cohen's kappa of the judge and the human labels at the last drift check",
            [*_LABELS, "check"],
            registry=registry,
        )
        self.agreement_floor = Gauge(
            "rag_eval_judge_agreement_floor",
            "Lower bound of the agreement band evaluator calibrate measured for this judge",
            [*_LABELS, "check"],
            registry=registry,
        )
        self.drift_checks = Counter(
            "rag_eval_judge_drift_checks_total",
            "Drift checks (labelled cases re-judged), by outcome",
            [*_LABELS, "outcome"],
            registry=registry,
        )


class DaemonJudge:
    """One job's judge: its client, cache and metrics' label values."""

    def __init__(
        self,
        config: JudgeConfig,
        metrics: JudgeMetrics,
        labels: tuple[str, str],
        reports_dir: Path,
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.labels = labels
        self.reports_dir = reports_dir
        self.client = JudgeClient(config)
        self.cache = VerdictStore(reports_dir) if config.cache else None
        #: the latest judged report (the drift check re-judges its labelled cases)
        self.latest: RunReport | None = None
        #: why the latest judged run is not to be trusted (the status page's amber), or None
        self.problem: str | None = None
        for outcome in _OUTCOMES:  # every series from the start: rate() sees the first one
            metrics.calls.labels(*labels, outcome)

    @classmethod
    def for_job(
        cls, settings: Settings, job: JobConfig, metrics: JudgeMetrics, labels: tuple[str, str]
    ) -> DaemonJudge | None:
        config = settings.judge_for(job)
        return None if config is None else cls(config, metrics, labels, settings.reports_dir)

    def _on_call(self, event: CallEvent) -> None:
        m, labels = self.metrics, self.labels
        m.calls.labels(*labels, event.error_kind or "ok").inc()
        if event.error_kind is None:
            m.seconds.labels(*labels).observe(event.latency_seconds)
        if event.input_tokens:
            m.tokens.labels(*labels, "input").inc(event.input_tokens)
        if event.output_tokens:
            m.tokens.labels(*labels, "output").inc(event.output_tokens)
        cost = self.config.cost(event.input_tokens, event.output_tokens)
        if cost:
            m.cost.labels(*labels).inc(cost)

    async def judge(self, report: RunReport) -> RunReport:
        """``report`` with its judge block; unchanged (logged) when the judging breaks."""
        try:
            judged = await judge_report(
                report, self.client, cache=self.cache, on_call=self._on_call
            )
        except Exception as exc:  # the daemon never dies because the judge misbehaves
            log.error("judge_failed", job="/".join(self.labels), error=f"{type(exc).__name__}")
            return report
        judged = with_calibration(judged, self.reports_dir)
        self.problem = trust_problem(judged)
        self._export(judged)
        judged_report = msgspec.structs.replace(report, judge=judged.to_dict())
        self.latest = judged_report
        return judged_report

    def _export(self, judged: JudgedRun) -> None:
        m, labels, usage = self.metrics, self.labels, judged.usage
        if usage.skipped:
            m.skipped.labels(*labels).inc(usage.skipped)
        answered = usage.cache_hits + usage.calls
        m.cache_hit_ratio.labels(*labels).set(usage.cache_hits / answered if answered else 0)
        m.compromised.labels(*labels).set(1 if judged.compromised else 0)
        for check, calibrated in calibration_of(judged).items():
            m.calibrated.labels(*labels, check).set(1 if calibrated else 0)
        for name, gauge in m.judged.items():
            value = judged.metrics.get(name)
            if value is not None:
                gauge.labels(*labels).set(value)

    async def check_drift(self) -> None:
        """Re-judge the labelled cases of the latest judged report; export the agreement."""
        labels_path = self.config.drift_labels
        report = self.latest
        if labels_path is None or report is None:
            return
        m, labels = self.metrics, self.labels
        try:
            human = read_labels(labels_path)
            points = await rejudge_labelled(report, self.client, human)
        except LabelsError as exc:
            m.drift_checks.labels(*labels, "bad_labels").inc()
            log.error("judge_drift_failed", job="/".join(labels), error=str(exc))
            return
        except Exception as exc:  # the daemon never dies because the judge misbehaves
            m.drift_checks.labels(*labels, "error").inc()
            log.error("judge_drift_failed", job="/".join(labels), error=type(exc).__name__)
            return
        m.drift_checks.labels(*labels, "ok").inc()
        floors = agreement_floors(
            self.reports_dir / CALIBRATION_FILE, self.config.model, PROMPT_VERSION
        )
        for point in points:
            if point.agreement is not None:
                m.agreement.labels(*labels, point.check).set(point.agreement)
            if point.kappa is not None:
                m.kappa.labels(*labels, point.check).set(point.kappa)
            if point.check in floors:
                m.agreement_floor.labels(*labels, point.check).set(floors[point.check])
        log.info(
            "judge_drift",
            job="/".join(labels),
            checks={p.check: {"labels": p.labels, "agreement": p.agreement} for p in points},
        )

    async def aclose(self) -> None:
        await self.client.aclose()

"""Where to look: the decision table of docs/gate.md ("Where to look") applied to the deltas.

=========================================  =====================================
signal                                     look at
=========================================  =====================================
recall down, MRR down                      parsing, chunking, retrieval
recall flat, MRR down                      fusion or rerank
retrieval flat, accuracy down              prompt, model, context assembly
accuracy flat, citation precision down     citation protocol or checking
quality up, P95, TTFT or cost up by half   a product trade-off, not an automatic yes
=========================================  =====================================

"Flat" means "not down": a move smaller than :data:`FLAT` either way, or a rise. A
quality delta is the paired mean difference over the cases matched by id when intervals
were computed (so cases that failed on one side do not shift the population), else the
difference of the summaries.

Two rows go beyond the classic RAG decision table. A grown error rate comes first and points at the
target's availability: an outage must not read as a retrieval regression. A P95 that grew
beyond 20% without the trade-off row applying points at the stage whose own P95 grew most,
or at the time outside the reported stages when none of them explains the growth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evaluator.gate.rules import DEFAULT_LATENCY_GROWTH, DEFAULT_NOISE_FLOOR_SECONDS
from evaluator.gate.stats import Interval, PairedDifference
from evaluator.metrics import FLOAT_TOLERANCE, METRICS
from evaluator.summary import Summary

__all__ = ["FLAT", "Finding", "diagnose"]

#: Quality moves smaller than this (absolute, on 0..1 ratios) count as flat.
FLAT = 0.005
#: A stage explains a P95 growth when its own P95 grew by at least this share of it.
_STAGE_SHARE = 0.5
#: Growth (relative) of P95, TTFT or cost that, with quality up, is a product trade-off.
_TRADE_OFF_GROWTH = 0.5
#: What a trade-off weighs quality against: summary value, its name in the finding.
_COSTS = (("p95_seconds", "P95"), ("p95_ttft_seconds", "P95 TTFT"), ("cost_per_case", "cost"))

#: The quality ratios whose moves the decision table reads, and their names in findings.
_QUALITY = tuple(spec.name for spec in METRICS if spec.diagnosed)
_LABELS = {spec.name: spec.label for spec in METRICS}


@dataclass(frozen=True, slots=True)
class Finding:
    """One row of the decision table that matched: the signal seen and where to look."""

    area: str
    signal: str
    look_at: str


def _secs(value: float) -> str:
    """A duration to 3 significant digits, in ms below a second (as every command shows)."""
    return f"{value * 1000:.3g}ms" if value < 1 else f"{value:.3g}s"


Paired = Mapping[str, "Interval | PairedDifference"]


def _delta(baseline: Summary, candidate: Summary, metric: str, intervals: Paired) -> float | None:
    interval = intervals.get(metric)
    if interval is not None:
        return interval.mean_difference
    b, c = baseline.get(metric), candidate.get(metric)
    return None if b is None or c is None else c - b


def _evidence(metric: str, delta: float, intervals: Paired) -> str:
    text = f"{_LABELS.get(metric, metric)} {delta:+.3f}"
    interval = intervals.get(metric)
    if abs(delta) > FLAT and isinstance(interval, Interval) and not interval.excludes_zero:
        text += f" (CI [{interval.low:+.3f}, {interval.high:+.3f}] includes 0: may be noise)"
    return text


@dataclass(frozen=True, slots=True)
class _Deltas:
    """The quality deltas the decision table reads, and how their evidence is written."""

    deltas: Mapping[str, float | None]
    intervals: Paired

    def down(self, metric: str) -> bool:
        """Moved down by more than :data:`FLAT`."""
        v = self.deltas[metric]
        return v is not None and v < -FLAT

    def flat(self, metric: str) -> bool:
        """Not down: a move within :data:`FLAT` either way, or a rise."""
        v = self.deltas[metric]
        return v is not None and v >= -FLAT

    def up(self) -> list[str]:
        """The quality metrics that rose by more than :data:`FLAT`."""
        return [m for m in _QUALITY if (v := self.deltas[m]) is not None and v > FLAT]

    def evidence(self, *metrics: str) -> str:
        """The metrics' deltas in words, each marked when its interval includes zero."""
        return ", ".join(_evidence(m, self.deltas[m] or 0.0, self.intervals) for m in metrics)


def _error_finding(baseline: Summary, candidate: Summary) -> Finding | None:
    """A grown error rate: the target's availability, before any quality reading."""
    b_err, c_err = baseline.error_rate, candidate.error_rate
    if b_err is None or c_err is None or c_err <= b_err + FLOAT_TOLERANCE:
        return None
    kinds = ", ".join(f"{k} {n}" for k, n in candidate.errors_by_kind.items())
    signal = f"error rate {b_err:.3f} → {c_err:.3f}" + (f" ({kinds})" if kinds else "")
    return Finding("errors", signal, "the target's availability, timeouts and responses")


def _table_findings(d: _Deltas) -> list[Finding]:
    """The decision table's quality rows that match, in the table's order."""
    out: list[Finding] = []
    if d.down("recall_at_k") and d.down("mrr"):
        out.append(
            Finding("retrieval", d.evidence("recall_at_k", "mrr"), "parsing, chunking, retrieval")
        )
    if d.flat("recall_at_k") and d.down("mrr"):
        out.append(Finding("rerank", d.evidence("recall_at_k", "mrr"), "fusion or rerank"))
    if d.flat("recall_at_k") and d.flat("mrr") and d.down("answer_accuracy"):
        out.append(
            Finding(
                "generation",
                d.evidence("recall_at_k", "mrr", "answer_accuracy"),
                "prompt, model, context assembly",
            )
        )
    if d.flat("answer_accuracy") and d.down("citation_precision"):
        out.append(
            Finding(
                "citation",
                d.evidence("answer_accuracy", "citation_precision"),
                "citation protocol or checking",
            )
        )
    return out


def _trade_off(
    d: _Deltas, baseline: Summary, candidate: Summary, latency_floor: float
) -> Finding | None:
    """Quality up while P95, TTFT or cost grew by half: a product trade-off."""
    quality_up = d.up()
    grown = _grown_costs(baseline, candidate, latency_floor)
    if not quality_up or not grown:
        return None
    return Finding(
        "trade-off",
        f"{d.evidence(*quality_up)}; {'; '.join(grown)}",
        "a product trade-off, not an automatic yes",
    )


def _latency_finding(
    baseline: Summary, candidate: Summary, latency_growth: float, latency_floor: float
) -> Finding | None:
    """A P95 grown beyond the noise floor and the allowed growth, with the stage it came
    from."""
    b95, c95 = baseline.p95_seconds, candidate.p95_seconds
    if not b95 or c95 is None or c95 - b95 <= latency_floor:
        return None
    growth = c95 / b95 - 1
    if growth <= latency_growth:
        return None
    p95 = f"P95 {_secs(b95)} → {_secs(c95)} ({growth:+.0%})"
    return Finding("latency", p95, _slow_stage(baseline, candidate, c95 - b95))


def diagnose(
    baseline: Summary,
    candidate: Summary,
    intervals: Paired | None = None,
    *,
    # the gate passes the P95 rule's own limits (latency_limits): rule and diagnosis agree
    latency_growth: float = DEFAULT_LATENCY_GROWTH,
    latency_floor: float = DEFAULT_NOISE_FLOOR_SECONDS,
) -> tuple[Finding, ...]:
    """Every row of the decision table that the deltas match.

    Args:
        baseline: the baseline summary the rules were judged on.
        candidate: the candidate summary.
        intervals: paired differences (or intervals, when computed): their mean differences
            are the quality deltas, and with intervals a move whose interval includes zero
            is marked as possibly noise.
        latency_growth: relative P95 growth worth a finding (the P95 rule's limit).
        latency_floor: absolute P95 growth, in seconds, below which latency is noise (the
            P95 rule's noise floor).

    Returns:
        The findings: errors first, then the table's rows in order, then latency (unless
        the trade-off row read it).
    """
    ivs = intervals or {}
    d = _Deltas({m: _delta(baseline, candidate, m, ivs) for m in _QUALITY}, ivs)
    errors = _error_finding(baseline, candidate)
    out = ([errors] if errors is not None else []) + _table_findings(d)
    last = _trade_off(d, baseline, candidate, latency_floor) or _latency_finding(
        baseline, candidate, latency_growth, latency_floor
    )
    return (*out, last) if last is not None else tuple(out)


def _grown_costs(baseline: Summary, candidate: Summary, latency_floor: float) -> list[str]:
    """P95, TTFT and cost that grew by half or more (latency beyond its noise floor)."""
    out = []
    for metric, label in _COSTS:
        before, after = baseline.get(metric), candidate.get(metric)
        if not before or after is None:
            continue
        growth = after / before - 1
        if growth < _TRADE_OFF_GROWTH - FLOAT_TOLERANCE:
            continue
        if metric.endswith("_seconds"):
            if after - before <= latency_floor:
                continue
            out.append(f"{label} {_secs(before)} → {_secs(after)} ({growth:+.0%})")
        else:
            out.append(f"{label} {before:.4g} → {after:.4g} per case ({growth:+.0%})")
    return out


def _slow_stage(baseline: Summary, candidate: Summary, p95_growth: float) -> str:
    """Where a P95 growth comes from: the stage whose own P95 grew most, if it explains it."""
    before, after = baseline.stage_p95_seconds, candidate.stage_p95_seconds
    if not before and not after:
        return "per-stage timings: the endpoint reports none (add timings to its responses)"
    grown = sorted(((after[s] - before.get(s, 0.0), s) for s in after), reverse=True)
    if grown and grown[0][0] >= _STAGE_SHARE * p95_growth:
        stage = grown[0][1]
        was = _secs(before[stage]) if stage in before else "absent"
        return f"the {stage} stage (its P95 {was} → {_secs(after[stage])})"
    return (
        "time outside the stages the endpoint reports (queueing, network, serialisation): "
        "no stage's P95 grew by half as much"
    )

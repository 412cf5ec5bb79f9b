"""Run summary: quality averages over scored cases, latency percentiles over every case.

Which cases each quality ratio averages over is the registry's rule
(:mod:`evaluator.metrics`); a metric with no case to average is None, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

from evaluator.gcpause import without_gc
from evaluator.metrics import METRICS, QUALITY_METRICS, populations, values
from evaluator.models import CaseError, CaseRecord, CaseScores

__all__ = [
    "OPTIONAL_FIELDS",
    "QUALITY_METRICS",
    "Summary",
    "Total",
    "id_mismatch_warning",
    "nearest_rank",
    "relevant_never_retrieved",
    "summarise",
]


@dataclass(frozen=True, slots=True)
class Total:
    """Sum and count behind an average, so averages over shards can be combined exactly."""

    sum: float
    count: int

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None


@dataclass(frozen=True, slots=True)
class Summary:
    """Aggregates of one run (or of one tag's cases)."""

    case_count: int
    scored_count: int
    error_count: int
    totals: Mapping[str, Total]
    error_rate: float | None
    p50_seconds: float | None
    p95_seconds: float | None
    stage_p95_seconds: Mapping[str, float]
    errors_by_kind: Mapping[str, int]
    by_tag: Mapping[str, Summary] = field(default_factory=dict)
    #: how late the event loop ran timers during the run (P95, max), seconds: a P95 latency
    #: that grew with these is the evaluator's own doing. None when not measured (a tag's
    #: summary, an older report); a property of the run, not recomputed from its cases
    event_loop_lag_p95_seconds: float | None = None
    event_loop_lag_max_seconds: float | None = None
    #: streamed answers: time to first token over the cases that had one; None: no stream
    p50_ttft_seconds: float | None = None
    p95_ttft_seconds: float | None = None
    p95_ttfb_seconds: float | None = None
    #: median output tokens per second over the cases that report it
    p50_tokens_per_second: float | None = None
    #: token usage and cost over the cases that report them; None when no case does
    input_tokens_total: int | None = None
    output_tokens_total: int | None = None
    cost_total: float | None = None
    cost_per_case: float | None = None

    def __post_init__(self) -> None:
        # Every quality metric has a total, so readers index ``totals[name]`` safely: one
        # read back from a report without it (another version, a hand edit) has no case.
        missing = [name for name in QUALITY_METRICS if name not in self.totals]
        if missing:
            complete = {**self.totals, **{name: Total(0.0, 0) for name in missing}}
            object.__setattr__(self, "totals", complete)

    def get(self, metric: str) -> float | None:
        """A summary value by its report name (quality ratio, ``error_rate`` or percentile)."""
        if metric in self.totals:
            return self.totals[metric].mean
        value = getattr(self, metric, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return None

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON shape (the customary metric names first)."""
        out: dict[str, Any] = {name: self.totals[name].mean for name in QUALITY_METRICS}
        out.update(
            case_count=self.case_count,
            scored_count=self.scored_count,
            error_count=self.error_count,
            error_rate=self.error_rate,
            p50_seconds=self.p50_seconds,
            p95_seconds=self.p95_seconds,
            stage_p95_seconds=dict(self.stage_p95_seconds),
            errors_by_kind=dict(self.errors_by_kind),
            totals={k: {"sum": t.sum, "count": t.count} for k, t in self.totals.items()},
        )
        # written only when measured: a report of a plain JSON target keeps its shape
        for name in OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.by_tag:
            out["by_tag"] = {tag: s.to_dict() for tag, s in sorted(self.by_tag.items())}
        return out


#: summary values present only when measured (streaming, usage, the run's loop lag)
OPTIONAL_FIELDS: tuple[str, ...] = (
    "event_loop_lag_p95_seconds",
    "event_loop_lag_max_seconds",
    "p50_ttft_seconds",
    "p95_ttft_seconds",
    "p95_ttfb_seconds",
    "p50_tokens_per_second",
    "input_tokens_total",
    "output_tokens_total",
    "cost_total",
    "cost_per_case",
)


def _delivery(records: Sequence[CaseRecord]) -> dict[str, Any]:
    """Percentiles of the streamed cases and totals of usage and cost, over the successful
    cases that report them."""
    ok = [r for r in records if not isinstance(r.outcome, CaseError)]
    ttft = [r.ttft_seconds for r in ok if r.ttft_seconds is not None]
    ttfb = [r.ttfb_seconds for r in ok if r.ttfb_seconds is not None and r.ttft_seconds is not None]
    tps = [r.tokens_per_second for r in ok if r.tokens_per_second is not None]
    inputs = [r.input_tokens for r in ok if r.input_tokens is not None]
    outputs = [r.output_tokens for r in ok if r.output_tokens is not None]
    costs = [r.cost for r in ok if r.cost is not None]
    return {
        "p50_ttft_seconds": nearest_rank(ttft, 50),
        "p95_ttft_seconds": nearest_rank(ttft, 95),
        "p95_ttfb_seconds": nearest_rank(ttfb, 95),
        "p50_tokens_per_second": nearest_rank(tps, 50),
        "input_tokens_total": sum(inputs) if inputs else None,
        "output_tokens_total": sum(outputs) if outputs else None,
        "cost_total": math.fsum(costs) if costs else None,
        "cost_per_case": math.fsum(costs) / len(costs) if costs else None,
    }


def nearest_rank(values: Sequence[float], percentile: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least ``percentile``% at or below it.

    Args:
        values: observations, any order.
        percentile: in (0, 100].

    Returns:
        ``sorted(values)[ceil(p/100 * n) - 1]``, or None for no values.
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


_VALUE = itemgetter(1)


def _totals(scored: Sequence[CaseRecord]) -> dict[str, Total]:
    """Each quality total over its population (the registry's denominator rule,
    :func:`evaluator.metrics.values`), added in case order."""
    pools = populations(scored)
    out: dict[str, Total] = {}
    for spec in METRICS:
        if spec.per_case is not None:
            picked = values(spec, pools)
            # sum of the values in case order, without a second list of them
            out[spec.name] = Total(sum(map(_VALUE, picked)), len(picked))
    return out


@without_gc
def summarise(records: Sequence[CaseRecord], *, with_tags: bool = True) -> Summary:
    """Aggregate per-case records into a :class:`Summary` (and one per tag)."""
    # the outcome itself, not the scores/error views (a function call each, per case)
    scored = [r for r in records if isinstance(r.outcome, CaseScores)]
    errors = [o for r in records if isinstance(o := r.outcome, CaseError)]
    by_kind: dict[str, int] = {}
    for error in errors:
        by_kind[error.kind] = by_kind.get(error.kind, 0) + 1
    # dict, not set: the summary lists stages in the order the endpoint reports them
    names = dict.fromkeys(stage for r in records for stage in r.stage_seconds)
    # one comprehension per stage: a few stages x many cases, no per-value method calls
    stages = {
        name: [t[name] for t in (r.stage_seconds for r in records) if name in t] for name in names
    }
    latencies = sorted(r.latency_seconds for r in records)  # sorted once for both ranks
    whole = Summary(
        case_count=len(records),
        scored_count=len(scored),
        error_count=len(errors),
        totals=_totals(scored),
        error_rate=len(errors) / len(records) if records else None,
        p50_seconds=nearest_rank(latencies, 50),
        p95_seconds=nearest_rank(latencies, 95),
        stage_p95_seconds={
            # in the order the endpoint reports its stages (first seen), not by name
            s: v
            for s, vals in stages.items()
            if (v := nearest_rank(vals, 95)) is not None
        },
        errors_by_kind=dict(sorted(by_kind.items())),
        **_delivery(records),
    )
    if not with_tags:
        return whole
    # one pass over the cases, not one per tag: linear in cases whatever the tag count
    groups: dict[str, list[CaseRecord]] = {}
    for r in records:
        tags = r.case.tags
        for t in tags if len(tags) < 2 else dict.fromkeys(tags):
            groups.setdefault(t, []).append(r)
    # a tag every case carries (a golden set tagged "smoke" throughout) holds the same
    # cases in the same order: its summary is the run's, not computed a second time
    by_tag = {
        t: whole if len(groups[t]) == len(records) else summarise(groups[t], with_tags=False)
        for t in sorted(groups)
    }
    return replace(whole, by_tag=by_tag) if by_tag else whole


def relevant_never_retrieved(records: Sequence[CaseRecord]) -> int:
    """How many answerable scored cases ran without one relevant id anywhere in any ranking.

    0 when some case retrieved a relevant id, or when no answerable case was scored. A
    positive count almost always means the golden set's ids are not the service's ids
    (another chunking, a prefix, a numeric id), not that retrieval is that bad.
    """
    answerable = [r.scores for r in records if r.scores is not None and not r.case.unanswerable]
    if not answerable or any(s.mrr > 0 for s in answerable):
        return 0
    return len(answerable)


def id_mismatch_warning(records: Sequence[CaseRecord]) -> str | None:
    """The warning to show after a run in which no relevant id was ever retrieved."""
    count = relevant_never_retrieved(records)
    if not count:
        return None
    return (
        f"no relevant id was retrieved in any of the {count} answerable case(s): do your "
        "golden set's ids match the service's? (compare relevant_ids with the ids "
        "`evaluator probe` shows)"
    )

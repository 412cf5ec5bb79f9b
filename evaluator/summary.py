"""Run summary: quality averages over scored cases, latency percentiles over every case.

Which cases each quality ratio averages over is the registry's rule
(:mod:`evaluator.metrics`); a metric with no case to average is None, never NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, compress
from operator import itemgetter
from typing import Any

from evaluator.casecolumns import SCORE_FIELDS, CaseColumns, Mask
from evaluator.gcpause import without_gc
from evaluator.metrics import METRICS, QUALITY_METRICS
from evaluator.models import CaseRecord, CaseScores

__all__ = [
    "OPTIONAL_FIELDS",
    "QUALITY_METRICS",
    "Summary",
    "Total",
    "id_mismatch_warning",
    "nearest_rank",
    "relevant_never_retrieved",
    "stage_p95",
    "summarise",
    "summarise_columns",
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


def _ranked(ordered: Sequence[float], percentile: float) -> float | None:
    """:func:`nearest_rank` of values already sorted."""
    if not ordered:
        return None
    return ordered[max(1, math.ceil(percentile / 100 * len(ordered))) - 1]


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


def _present(values: Iterable[Any]) -> list[Any]:
    return [v for v in values if v is not None]


def _delivery(measured: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Percentiles of the streamed cases and totals of usage and cost, over the successful
    cases, from their delivery columns (``DELIVERY_FIELDS`` order, trace id aside)."""
    ttfb_all, ttft_all, tps_all, inputs_all, outputs_all, costs_all = measured
    ttft = _present(ttft_all)
    # time to first byte of the streamed cases only
    pairs = zip(ttfb_all, ttft_all, strict=True) if ttft else ()
    ttfb = [b for b, t in pairs if b is not None and t is not None]
    tps = _present(tps_all)
    inputs = _present(inputs_all)
    outputs = _present(outputs_all)
    costs = _present(costs_all)
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


_NO_DELIVERY: dict[str, Any] = _delivery(((),) * 6)


def stage_p95(stages: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each stage's P95 over the cases that report it, in the order the endpoint reports
    its stages (first seen), not by name."""
    columns: dict[str, list[float]] = {}
    for timings in stages:
        for name, value in timings.items():
            columns.setdefault(name, []).append(value)
    return {
        name: p95
        for name, values in columns.items()
        if (p95 := nearest_rank(values, 95)) is not None
    }


# --- a summary of columns -------------------------------------------------------------------
#
# A set of cases is a mask: one byte per position, 1 for a case in it. Masks are combined as
# integers (a byte of 0 or 1 in each is a bit of the same byte in both), and a column read
# through one with itertools.compress: every step in C, no Python call per case.

_FLIP = bytes([1, 0, *([0] * 254)])


def _both(a: Mask, b: Mask) -> bytes:
    """The cases in both masks."""
    both = int.from_bytes(a, "little") & int.from_bytes(b, "little")
    return both.to_bytes(len(a), "little")


def _others(mask: Mask) -> Mask:
    """The positions not in ``mask``."""
    return mask.translate(_FLIP)


def _summary(c: CaseColumns, cases: Mask, whole: bool) -> Summary:
    """The summary of the cases in the mask ``cases`` (``whole``: every added case), tags
    aside."""
    n = cases.count(1)
    scored = _both(cases, c.scored)
    errors = _both(cases, _others(c.scored))
    kinds = list(compress(c.kinds, errors))
    answerable = _both(scored, _others(c.unanswerable))
    pools: dict[str, Mask] = {
        # a retrieval-only golden set of unanswerable cases still has a retrieval score
        "retrieval": answerable if answerable.count(1) else scored,
        "scored": scored,
        "answerable": answerable,
        "unanswerable": _both(scored, c.unanswerable),
    }
    totals = {}
    for spec, at in _QUALITY:
        found = _both(pools[spec.population], _others(c.missing[at::_WIDTH]))
        count = found.count(1)
        # a float sum of the values in case order (flags count 1.0); no value: the int 0
        added = sum(compress(c.scores[at::_WIDTH], found)) if count else 0
        totals[spec.name] = Total(added, count)
    latencies = sorted(compress(c.latency, cases))  # sorted once for both ranks
    delivery = c.delivery
    return Summary(
        case_count=n,
        scored_count=scored.count(1),
        error_count=len(kinds),
        totals=totals,
        error_rate=len(kinds) / n if n else None,
        p50_seconds=_ranked(latencies, 50),
        p95_seconds=_ranked(latencies, 95),
        stage_p95_seconds=_stages(c, cases, whole),
        errors_by_kind=dict(sorted(Counter(kinds).items())),
        # a case is either scored or failed: the successful ones are the scored ones
        **(
            _delivery([list(compress(column, scored)) for column in delivery])
            if delivery is not None
            else _NO_DELIVERY
        ),
    )


#: each quality metric with the place of its score in a row of ``CaseColumns.scores``
_QUALITY = tuple(
    (spec, SCORE_FIELDS.index(spec.score)) for spec in METRICS if spec.score is not None
)
_WIDTH = len(SCORE_FIELDS)


def _stages(c: CaseColumns, cases: Mask, whole: bool) -> dict[str, float]:
    """Each stage's P95 over the cases that report it, names in first-seen order."""
    codes = c.stage_names.numbers
    seen = [c.layouts[code] for code in dict.fromkeys(compress(codes, cases)) if code]
    parts: dict[str, list[Iterable[float]]] = {}
    for layout in seen:
        width = len(layout.names)
        if whole:
            rows = None
        elif len(layout.positions) == 1:
            rows = bytes((cases[layout.positions[0]],))
        else:
            rows = bytes(itemgetter(*layout.positions)(cases))
        for at, name in enumerate(layout.names):
            values = layout.values[at::width]
            parts.setdefault(name, []).append(values if rows is None else compress(values, rows))
    out: dict[str, float] = {}
    for name, found in parts.items():
        p95 = _ranked(sorted(found[0] if len(found) == 1 else chain.from_iterable(found)), 95)
        if p95 is not None:
            out[name] = p95
    return out


def _tag_masks(c: CaseColumns) -> dict[str, Mask]:
    """Each tag's cases, as a mask (a golden set has few distinct tag lists: each tag's
    mask is a translation of the cases' tag-list codes)."""
    lists = c.tags.keys
    codes: dict[str, list[int]] = {}
    for code, tags in enumerate(lists):
        for tag in dict.fromkeys(tags):
            codes.setdefault(tag, []).append(code)
    return {tag: c.tags.mask(chosen) for tag, chosen in codes.items()}


@without_gc
def summarise_columns(columns: CaseColumns, *, with_tags: bool = True) -> Summary:
    """The :class:`Summary` (and one per tag) of the cases added to ``columns``, in
    position order: the summary :func:`summarise` gives of those records in that order."""
    added = columns.added
    whole = _summary(columns, added, whole=True)
    if not with_tags:
        return whole
    masks = _tag_masks(columns)
    count = whole.case_count
    # a tag every case carries (a golden set tagged "smoke" throughout) holds the same
    # cases in the same order: its summary is the run's, not computed a second time
    by_tag = {
        tag: whole if (mask := masks[tag]).count(1) == count else _summary(columns, mask, False)
        for tag in sorted(masks)
    }
    return replace(whole, by_tag=by_tag) if by_tag else whole


@without_gc
def summarise(records: Sequence[CaseRecord], *, with_tags: bool = True) -> Summary:
    """Aggregate per-case records into a :class:`Summary` (and one per tag)."""
    return summarise_columns(CaseColumns.of(records), with_tags=with_tags)


def relevant_never_retrieved(records: Sequence[CaseRecord]) -> int:
    """How many answerable scored cases ran without one relevant id anywhere in any ranking.

    0 when some case retrieved a relevant id, or when no answerable case was scored. A
    positive count almost always means the golden set's ids are not the service's ids
    (another chunking, a prefix, a numeric id), not that retrieval is that bad.
    """
    count = 0
    for record in records:
        scores = record.outcome
        if not isinstance(scores, CaseScores) or record.case.unanswerable:
            continue
        if scores.mrr > 0:
            return 0  # usually the first such case: not a walk over every record
        count += 1
    return count


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

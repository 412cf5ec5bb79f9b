"""Run summary: quality averages over scored cases, latency percentiles over every case.

Which cases each quality ratio averages over is the registry's rule
(:mod:`evaluator.metrics`); a metric with no case to average is None, never NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain, compress
from operator import attrgetter, is_not, itemgetter
from typing import Any

from evaluator.gcpause import without_gc
from evaluator.metrics import METRICS, QUALITY_METRICS, split, total
from evaluator.models import CaseError, CaseRecord, CaseScores, Outcome

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


_OUTCOME = attrgetter("outcome")
_UNANSWERABLE = attrgetter("case.unanswerable")
_LATENCY = attrgetter("latency_seconds")
_STAGES = attrgetter("stage_seconds")
_TAGS = attrgetter("case.tags")
_KIND = attrgetter("kind")
_QUALITY = tuple(spec for spec in METRICS if spec.quality)


def _present(getter: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    return [v for v in map(getter, items) if v is not None]


def _delivery(ok: Sequence[CaseRecord]) -> dict[str, Any]:
    """Percentiles of the streamed cases and totals of usage and cost, over the successful
    cases (``ok``) that report them."""
    ttft = _present(_TTFT, ok)
    # time to first byte of the streamed cases only
    pairs = zip(map(_TTFB, ok), map(_TTFT, ok), strict=True) if ttft else ()
    ttfb = [b for b, t in pairs if b is not None and t is not None]
    tps = _present(_TPS, ok)
    inputs = _present(_INPUT, ok)
    outputs = _present(_OUTPUT, ok)
    costs = _present(_COST, ok)
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


_TTFT = attrgetter("ttft_seconds")
_TTFB = attrgetter("ttfb_seconds")
_TPS = attrgetter("tokens_per_second")
_INPUT = attrgetter("input_tokens")
_OUTPUT = attrgetter("output_tokens")
_COST = attrgetter("cost")
_MEASURED = partial(is_not, None)
_DELIVERY = (_TTFT, _TTFB, _TPS, _INPUT, _OUTPUT, _COST)
_NO_DELIVERY: dict[str, Any] = _delivery(())


def _stage_columns(
    names: tuple[str, ...], group: Sequence[Mapping[str, float]]
) -> Iterable[Sequence[float]]:
    """One column of values per name, over cases that all report exactly ``names``."""
    kinds = set(map(type, group))
    if kinds == {dict}:
        return [list(map(itemgetter(name), group)) for name in names]
    if all(hasattr(kind, "row") for kind in kinds):
        # a streamed run's compact stages (report.stream): their values are a tuple already
        return zip(*map(_SECOND, map(_ROW, group)), strict=True)
    return [list(map(itemgetter(name), group)) for name in names]


_ROW = attrgetter("row")
_SECOND = itemgetter(1)


def _layouts(stages: Iterable[Mapping[str, float]]) -> list[tuple[str, ...]]:
    """Each case's stage names, one shared tuple per distinct layout (a few per target)."""
    known: dict[tuple[str, ...], tuple[str, ...]] = {}
    return [known.setdefault(names, names) for names in map(tuple, stages)]


def stage_p95(stages: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each stage's P95 over the cases that report it, in the order the endpoint reports
    its stages (first seen), not by name."""
    return _stage_p95(stages, _layouts(stages))


def _stage_p95(
    stages: Sequence[Mapping[str, float]], layouts: Sequence[tuple[str, ...]]
) -> dict[str, float]:
    """:func:`stage_p95` of cases whose stage names are ``layouts``.

    The cases are grouped by their stage names and each layout read one column per name in
    C: no pass over the cases per stage name, no lookup per stage and case in Python, no
    copy of any case's timings.
    """
    seen = dict.fromkeys(layouts)
    found = [names for names in seen if names]
    groups: dict[tuple[str, ...], Sequence[Mapping[str, float]]] = {}
    if len(found) == 1:
        # the usual run: every case that reports stages reports the same ones
        groups[found[0]] = list(compress(stages, layouts)) if () in seen else stages
    elif found:
        lists: dict[tuple[str, ...], list[Mapping[str, float]]] = {}
        for names, timings in zip(layouts, stages, strict=True):
            if names:
                lists.setdefault(names, []).append(timings)
        groups.update(lists)
    # a name's first case is the first case of its layout, so layouts in first-seen order
    # give the names in first-seen order
    columns: dict[str, list[float]] = {}
    for names, group in groups.items():
        for name, values in zip(names, _stage_columns(names, group), strict=True):
            columns.setdefault(name, []).extend(values)
    return {
        name: p95
        for name, values in columns.items()
        if (p95 := nearest_rank(values, 95)) is not None
    }


@dataclass(frozen=True, slots=True)
class _Columns:
    """The per-case values a summary reads, one list each, read from the records once (a
    tag's summary takes its cases' entries, not the records again)."""

    records: Sequence[CaseRecord]
    outcomes: Sequence[Outcome]
    scored: Sequence[bool]
    unanswerable: Sequence[bool]
    latency: Sequence[float]
    stages: Sequence[Mapping[str, float]]
    #: each case's stage names (shared tuples)
    layouts: Sequence[tuple[str, ...]]
    #: whether any case reports a delivery measurement (streaming, usage, cost)
    delivery: bool

    @classmethod
    def of(cls, records: Sequence[CaseRecord]) -> _Columns:
        outcomes = list(map(_OUTCOME, records))
        stages = list(map(_STAGES, records))
        delivery = any(any(map(_MEASURED, map(getter, records))) for getter in _DELIVERY)
        return cls(
            records=records,
            outcomes=outcomes,
            scored=[isinstance(o, CaseScores) for o in outcomes],
            unanswerable=list(map(_UNANSWERABLE, records)),
            latency=list(map(_LATENCY, records)),
            stages=stages,
            layouts=_layouts(stages),
            delivery=delivery,
        )

    def take(self, indices: Sequence[int]) -> _Columns:
        """The columns of the cases at ``indices`` (in that order)."""
        if len(indices) == 1:
            i = indices[0]

            def pick(column: Sequence[Any]) -> list[Any]:
                return [column[i]]

        else:
            getter = itemgetter(*indices)

            def pick(column: Sequence[Any]) -> list[Any]:
                return getter(column)  # type: ignore[no-any-return]

        return _Columns(
            records=pick(self.records),
            outcomes=pick(self.outcomes),
            scored=pick(self.scored),
            unanswerable=pick(self.unanswerable),
            latency=pick(self.latency),
            stages=pick(self.stages),
            layouts=pick(self.layouts),
            delivery=self.delivery,
        )


def _summary(c: _Columns) -> Summary:
    """The summary of the cases in ``c`` without tags: each quantity one C-speed pass."""
    scored = list(compress(c.outcomes, c.scored))
    errors = [o for o in c.outcomes if isinstance(o, CaseError)]
    pools = split(scored, list(compress(c.unanswerable, c.scored)))
    n = len(c.outcomes)
    latencies = sorted(c.latency)  # sorted once for both ranks
    return Summary(
        case_count=n,
        scored_count=len(scored),
        error_count=len(errors),
        totals={spec.name: Total(*total(spec, pools)) for spec in _QUALITY},
        error_rate=len(errors) / n if n else None,
        p50_seconds=_ranked(latencies, 50),
        p95_seconds=_ranked(latencies, 95),
        stage_p95_seconds=_stage_p95(c.stages, c.layouts),
        errors_by_kind=dict(sorted(Counter(map(_KIND, errors)).items())),
        # a case is either scored or failed: the successful ones are the scored ones
        **(_delivery(list(compress(c.records, c.scored))) if c.delivery else _NO_DELIVERY),
    )


@without_gc
def summarise(records: Sequence[CaseRecord], *, with_tags: bool = True) -> Summary:
    """Aggregate per-case records into a :class:`Summary` (and one per tag)."""
    columns = _Columns.of(records)
    whole = _summary(columns)
    if not with_tags:
        return whole
    # one pass over the cases, grouped by their tag lists (a golden set has few distinct
    # ones), then each tag's cases in case order
    by_tags: dict[tuple[str, ...], list[int]] = {}
    for i, tags in enumerate(map(_TAGS, records)):
        if tags:
            group = by_tags.get(tags)
            if group is None:
                by_tags[tags] = [i]
            else:
                group.append(i)
    parts: dict[str, list[list[int]]] = {}
    for tags, indices in by_tags.items():
        for t in dict.fromkeys(tags):
            parts.setdefault(t, []).append(indices)
    groups = {t: p[0] if len(p) == 1 else sorted(chain.from_iterable(p)) for t, p in parts.items()}
    # a tag every case carries (a golden set tagged "smoke" throughout) holds the same
    # cases in the same order: its summary is the run's, not computed a second time
    by_tag = {
        t: whole if len(groups[t]) == len(records) else _summary(columns.take(groups[t]))
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

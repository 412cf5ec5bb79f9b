"""Run summary: quality averages over scored cases, latency percentiles over every case.

Which cases each quality ratio averages over is the registry's rule
(:mod:`evaluator.metrics`); a metric with no case to average is None, never NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import chain, compress
from operator import attrgetter, not_
from typing import Any

from evaluator.metrics import (
    METRICS,
    POSITION_SEPARATOR,
    QUALITY_METRICS,
    TURN_POSITIONS,
    items_at,
    positioned,
    split,
    total,
    turn_position,
)
from evaluator.models import OUT_OF_RANGE_FIELDS, CaseRecord, CaseScores, OutOfRange

__all__ = [
    "OPTIONAL_FIELDS",
    "QUALITY_METRICS",
    "TAG_COLUMNS",
    "Summary",
    "TagCells",
    "Total",
    "id_mismatch_warning",
    "nearest_rank",
    "out_of_range_warning",
    "position_cells",
    "relevant_never_retrieved",
    "stage_p95",
    "summarise",
    "tag_cells",
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
    #: a run with conversations: the summary of the turns at each position
    #: (:data:`~evaluator.metrics.TURN_POSITIONS`, first turns to fourth and later)
    by_position: Mapping[str, Summary] = field(default_factory=dict)
    #: cases whose optional figure was not reported because out of range, per field (in
    #: OUT_OF_RANGE_FIELDS order; a field no case dropped is absent)
    out_of_range: Mapping[OutOfRange, int] = field(default_factory=dict)
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
    #: conversations: latency of a whole conversation (its turns' latencies summed)
    p50_conversation_seconds: float | None = None
    p95_conversation_seconds: float | None = None

    def __post_init__(self) -> None:
        # Every quality metric has a total, so readers index ``totals[name]`` safely: one
        # read back from a report without it (another version, a hand edit) has no case.
        missing = [name for name in QUALITY_METRICS if name not in self.totals]
        if missing:
            complete = {**self.totals, **{name: Total(0.0, 0) for name in missing}}
            object.__setattr__(self, "totals", complete)

    def get(self, metric: str) -> float | None:
        """A summary value by its report name (quality ratio, ``error_rate`` or percentile);
        ``metric@position`` is the value over the conversations' turns at that position
        (``answer_accuracy@2``), None when the run has none there."""
        if metric in self.totals:
            return self.totals[metric].mean
        if POSITION_SEPARATOR in metric:
            try:
                base, position = positioned(metric)
            except KeyError:  # not a turn position: no such value, as for any unknown name
                return None
            at = self.by_position.get(position or "")
            return None if at is None else at.get(base)
        value = getattr(self, metric, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return None

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON shape (the customary metric names first)."""
        totals = self._written_totals()
        out: dict[str, Any] = {
            name: totals[name].mean for name in QUALITY_METRICS if name in totals
        }
        out.update(
            case_count=self.case_count,
            scored_count=self.scored_count,
            error_count=self.error_count,
            error_rate=self.error_rate,
            p50_seconds=self.p50_seconds,
            p95_seconds=self.p95_seconds,
            stage_p95_seconds=dict(self.stage_p95_seconds),
            errors_by_kind=dict(self.errors_by_kind),
            totals={k: {"sum": t.sum, "count": t.count} for k, t in totals.items()},
        )
        out.update(self._measured())
        return out

    def _written_totals(self) -> dict[str, Total]:
        """The totals a report writes: a ratio only some golden sets have (conversations)
        only when some case has it."""
        return {name: t for name, t in self.totals.items() if t.count or name not in _MEASURED_ONLY}

    def _measured(self) -> dict[str, Any]:
        """The values written only when measured (a report of a plain JSON target keeps its
        shape): streaming, usage and loop lag, figures out of range, tags, turn positions."""
        out: dict[str, Any] = {}
        for name in OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.out_of_range:
            out["out_of_range"] = dict(self.out_of_range)
        if self.by_tag:
            out["by_tag"] = {tag: s.to_dict() for tag, s in sorted(self.by_tag.items())}
        if self.by_position:
            out["by_position"] = {p: s.to_dict() for p, s in self.by_position.items()}
        return out


#: summary values present only when measured (streaming, usage, the run's loop lag): the
#: fields that default to None, in field order
OPTIONAL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Summary) if f.default is None)


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


def _present(values: Sequence[Any]) -> list[Any]:
    return [v for v in values if v is not None]


def _delivery(scored: Sequence[CaseRecord]) -> dict[str, Any]:
    """Percentiles of the streamed cases and totals of usage and cost, over the scored
    cases (a case is either scored or failed: the successful ones are the scored ones)."""
    return {**_streamed(scored), **_usage(scored), **_cost(scored)}


# The delivery figures are read with one list comprehension a figure, not ``_present`` of a
# generator: a generator's step per case cost ~150 instructions more (callgrind), and each
# record is summarised about three times (its run's and its tags' summaries).


def _streamed(scored: Sequence[CaseRecord]) -> dict[str, float | None]:
    """Time to first token and tokens per second of the streamed cases, and their time to
    first byte (of the streamed cases only: none without one)."""
    ttft = [r.ttft_seconds for r in scored if r.ttft_seconds is not None]
    streamed = [r for r in scored if r.ttft_seconds is not None] if ttft else []
    ttfb = [r.ttfb_seconds for r in streamed if r.ttfb_seconds is not None]
    tps = [r.tokens_per_second for r in scored if r.tokens_per_second is not None]
    return {
        "p50_ttft_seconds": nearest_rank(ttft, 50),
        "p95_ttft_seconds": nearest_rank(ttft, 95),
        "p95_ttfb_seconds": nearest_rank(ttfb, 95),
        "p50_tokens_per_second": nearest_rank(tps, 50),
    }


def _usage(scored: Sequence[CaseRecord]) -> dict[str, int | None]:
    """Tokens over the cases that reported them (None when none did)."""
    inputs = [r.input_tokens for r in scored if r.input_tokens is not None]
    outputs = [r.output_tokens for r in scored if r.output_tokens is not None]
    return {
        "input_tokens_total": sum(inputs) if inputs else None,
        "output_tokens_total": sum(outputs) if outputs else None,
    }


def _cost(scored: Sequence[CaseRecord]) -> dict[str, float | None]:
    """Cost over the cases that reported it (None when none did)."""
    costs = [r.cost for r in scored if r.cost is not None]
    return {
        "cost_total": math.fsum(costs) if costs else None,
        "cost_per_case": math.fsum(costs) / len(costs) if costs else None,
    }


#: the summary fields :func:`_delivery` sets (read off its result over no case)
_DELIVERY_FIELDS: tuple[str, ...] = tuple(_delivery([]))


def stage_p95(stages: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Each stage's P95 over the cases that report it, in the order the endpoint reports
    its stages (first seen), not by name."""
    # grouped by the cases' stage names first: an endpoint reports the same few every time
    layouts: dict[tuple[str, ...], list[Iterable[float]]] = {}
    for timings in stages:
        if timings:
            layouts.setdefault(tuple(timings), []).append(timings.values())
    columns: dict[str, list[float]] = {}
    for names, rows in layouts.items():
        for name, values in zip(names, zip(*rows, strict=True), strict=True):
            columns.setdefault(name, []).extend(values)
    return _p95_each(columns)


def _p95_each(columns: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each stage's P95 over its values (a stage without one has none)."""
    return {
        name: p95
        for name, values in columns.items()
        if (p95 := nearest_rank(values, 95)) is not None
    }


@dataclass(frozen=True, slots=True)
class _RunStages:
    """A run's stage timings, read once for the run's summary and each of its tags'.

    With one layout (an endpoint reports the same stages every time), each stage's values
    are kept per case: a tag's are taken by position (``itemgetter``, in C), not grouped
    again from its cases' timings, which cost ~4,400 instructions a case each summary, a
    third of it (callgrind). Several layouts: each summary groups its cases' own
    (:func:`stage_p95`).
    """

    timings: Sequence[Mapping[str, float]]
    #: one layout (or none): each stage's value of each case, None where the case reported
    #: no stage (it failed); None: several layouts
    columns: Mapping[str, Sequence[float | None]] | None
    #: every case reported its stages: the columns hold no None
    complete: bool

    @classmethod
    def of(cls, records: Sequence[CaseRecord]) -> _RunStages:
        timings = [r.stage_seconds for r in records]
        reported = [t for t in timings if t]
        names = list(reported[0]) if reported else []
        # one layout: the cases' stage names one after another are the first case's over
        # and over (a list compared in C: a tuple of names a case cost ~1,700 instructions)
        if list(chain.from_iterable(reported)) != names * len(reported):
            return cls(timings, None, complete=False)
        # every case's values one after another: a stage's are every len(names)-th
        blank = (None,) * len(names)
        values = list(chain.from_iterable([t.values() if t else blank for t in timings]))
        columns = {name: values[i :: len(names)] for i, name in enumerate(names)}
        return cls(timings, columns, complete=len(reported) == len(timings))

    def p95(self, take: Callable[[Sequence[Any]], Sequence[Any]] | None = None) -> dict[str, float]:
        """Each stage's P95 over the run's cases, or over those ``take`` picks (a tag's)."""
        if self.columns is None:
            return stage_p95(self.timings if take is None else take(self.timings))
        picked: dict[str, Sequence[Any]] = {
            name: values if take is None else take(values) for name, values in self.columns.items()
        }
        if not self.complete:
            picked = {name: _present(values) for name, values in picked.items()}
        return _p95_each(picked)


_QUALITY = tuple(spec for spec in METRICS if spec.quality)
#: a failed case's error kind
_KIND = attrgetter("kind")
#: quality ratios only some golden sets have: written in a report only when measured
_MEASURED_ONLY = frozenset(spec.name for spec in _QUALITY if spec.measured_only)


def _summary(
    records: Sequence[CaseRecord], stage_p95_seconds: Mapping[str, float], *, figures: bool = True
) -> Summary:
    """The summary of ``records``, tags aside, with their stages' P95 (read once a run);
    ``figures``: whether to look for optional figures (streaming, usage, dropped out of
    range): False when no case has one."""
    outcomes = [r.outcome for r in records]
    # one isinstance a case: an error is what is not scored, by construction (the test of
    # CaseError on a CaseScores, through msgspec's metaclass, cost ~1,300 instructions)
    is_scored = [isinstance(o, CaseScores) for o in outcomes]
    scored = list(compress(records, is_scored))
    kinds: list[str] = list(map(_KIND, compress(outcomes, map(not_, is_scored))))
    pools = split(list(compress(outcomes, is_scored)), [r.case.unanswerable for r in scored])
    n = len(records)
    latencies = _latencies(records)
    return Summary(
        case_count=n,
        scored_count=len(scored),
        error_count=len(kinds),
        totals={spec.name: Total(*total(spec, pools)) for spec in _QUALITY},
        error_rate=len(kinds) / n if n else None,
        p50_seconds=nearest_rank(latencies, 50),
        p95_seconds=nearest_rank(latencies, 95),
        stage_p95_seconds=stage_p95_seconds,
        errors_by_kind=dict(sorted(Counter(kinds).items())),
        out_of_range=_out_of_range(scored) if figures else {},
        **(_delivery(scored) if figures else {}),
    )


def _latencies(records: Sequence[CaseRecord]) -> list[float]:
    """The cases' latencies, sorted; a turn never asked (skipped after an earlier one
    failed) took no time and has none."""
    return sorted([r.latency_seconds for r in records if r.attempts])


def _out_of_range(scored: Sequence[CaseRecord]) -> dict[OutOfRange, int]:
    """Per field, the cases whose figure was out of range (dropped: not reported)."""
    counts = Counter(chain.from_iterable([r.out_of_range for r in scored if r.out_of_range]))
    return {name: counts[name] for name in OUT_OF_RANGE_FIELDS if counts[name]}


def summarise(records: Sequence[CaseRecord]) -> Summary:
    """Aggregate per-case records into a :class:`Summary` (and one per tag, and, with
    conversations, one per turn position and the conversations' latency)."""
    stages = _RunStages.of(records)
    whole = _summary(records, stages.p95())
    figures = _has_figures(whole)
    by_tag: dict[str, Summary] = {}
    for tag, positions in sorted(_tagged(records).items()):
        # a tag every case carries holds the run's cases in the run's order: the run's summary
        if len(positions) == len(records):
            by_tag[tag] = whole
        else:
            take = items_at(positions)
            by_tag[tag] = _summary(take(records), stages.p95(take), figures=figures)
    if by_tag:
        whole = replace(whole, by_tag=by_tag)
    turns = [r for r in records if r.case.turn is not None]
    return _with_conversations(whole, turns) if turns else whole


def _has_figures(run: Summary) -> bool:
    """Whether some case of the run reported an optional figure (streaming, usage) or had
    one dropped out of range.

    A figure no case of the run has, no case of a tag has: a plain JSON target's tags do not
    look for them (~2,500 instructions a case and tag, callgrind).
    """
    return bool(run.out_of_range) or any(getattr(run, f) is not None for f in _DELIVERY_FIELDS)


def _tagged(records: Sequence[CaseRecord]) -> dict[str, list[int]]:
    """The positions of each tag's cases, in case order (a tag given twice counts once)."""
    # the cases grouped by their tags first: a golden set has a few combinations, so one
    # dict step a case rather than one a tag (~2,300 instructions a case, now ~900:
    # callgrind); a tag's cases are then its combinations' merged (sorted: runs, in C)
    combinations: dict[tuple[str, ...], list[int]] = {}
    for position, tags in enumerate([r.case.tags for r in records]):
        positions = combinations.get(tags)
        if positions is None:
            combinations[tags] = [position]
        else:
            positions.append(position)
    runs: dict[str, list[list[int]]] = {}
    for tags, positions in combinations.items():
        for tag in dict.fromkeys(tags):
            runs.setdefault(tag, []).append(positions)
    return {
        tag: found[0] if len(found) == 1 else sorted(chain.from_iterable(found))
        for tag, found in runs.items()
    }


def _with_conversations(whole: Summary, turns: Sequence[CaseRecord]) -> Summary:
    """``whole`` with the summary of each turn position and the conversations' latency."""
    at: dict[str, list[CaseRecord]] = {}
    spent: dict[str, float] = {}
    for record in turns:
        place = record.case.turn
        assert place is not None  # the caller's filter
        at.setdefault(turn_position(place.position), []).append(record)
        spent[place.conversation] = spent.get(place.conversation, 0.0) + record.latency_seconds
    by_position = {
        p: _summary(at[p], stage_p95(r.stage_seconds for r in at[p]))
        for p in TURN_POSITIONS
        if p in at
    }
    seconds = list(spent.values())
    return replace(
        whole,
        by_position=by_position,
        p50_conversation_seconds=nearest_rank(seconds, 50),
        p95_conversation_seconds=nearest_rank(seconds, 95),
    )


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
        if scores.mrr is None:
            continue  # ids not mapped: nothing was ranked to compare
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


def out_of_range_warning(records: Sequence[CaseRecord]) -> str | None:
    """The warning after a run in which some optional figure was out of range: how many
    cases, and per field how many were not reported."""
    dropped = sum(1 for r in records if r.out_of_range)
    if not dropped:
        return None
    counts = ", ".join(f"{name} {n}" for name, n in _out_of_range(records).items())
    return (
        f"not reported (out of range) in {dropped} of {len(records)} case(s): {counts}; the "
        f"values were dropped and the cases scored"
    )


#: the by-tag breakdown's columns (metric, label): the metrics that tell a slice apart at a
#: glance; the terminal's "by tag:" lines and the HTML report's table both read these
TAG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("recall_at_k", "recall"),
    ("mrr", "mrr"),
    ("citation_precision", "citations"),
    ("answer_accuracy", "accuracy"),
    ("error_rate", "errors"),
)


@dataclass(frozen=True, slots=True)
class TagCells:
    """One slice of a run (a tag's cases, or a turn position's): its case count and each
    :data:`TAG_COLUMNS` value."""

    #: the slice: a tag, or a turn position (``1``, ``2``, ``3``, ``4+``)
    tag: str
    case_count: int
    #: (label, value) for every column, None where the slice has no value
    cells: tuple[tuple[str, float | None], ...]


def _cells(slices: Mapping[str, Summary]) -> list[TagCells]:
    return [
        TagCells(name, sub.case_count, tuple((label, sub.get(m)) for m, label in TAG_COLUMNS))
        for name, sub in slices.items()
    ]


def tag_cells(summary: Summary) -> list[TagCells]:
    """The by-tag breakdown of a summary, in its tag order (none when no case has tags)."""
    return _cells(summary.by_tag)


def position_cells(summary: Summary) -> list[TagCells]:
    """The by-turn-position breakdown of a run's conversations (none without any)."""
    return _cells(summary.by_position)

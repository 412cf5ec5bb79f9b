"""The metric registry: every summary metric, written out once.

Each :class:`MetricSpec` says how a metric is computed (the :class:`CaseScores` field holding
its per-case value and the cases it averages over), how it is judged (direction, unit) and
how it is named and shown (gauge, pushed gauge, human labels). The summary, the gate's
rules, intervals, diagnosis and case diffs, the daemon's gauges and the terminal table are
all derived from :data:`METRICS`.

Adding a quality metric is one entry here plus its scoring function (a field on
:class:`~evaluator.models.CaseScores`, which the entry's ``score`` names).

Denominators (the report contract): retrieval metrics and citation recall average over
answerable scored cases (all scored cases when none is answerable), citation precision and
answer accuracy over all scored cases (a case without an answer check has no value),
fact recall and the false refusal rate over answerable cases, the correct refusal rate over
unanswerable ones. A case whose value is None is outside the average; a metric with no case
to average is None, never NaN.

That rule is written once, here: :func:`split` says which cases each population holds and
:func:`column` which of them have a value. The summary's sums (:func:`total`) and the gate's
per-case values and paired differences (:func:`values`, :func:`keyed`, :func:`paired`) are
all built from those two.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, itemgetter, not_, sub
from typing import Any, Generic, Literal, TypeVar, cast

from evaluator.models import CaseRecord, CaseScores

__all__ = [
    "FLOAT_TOLERANCE",
    "LOWER_IS_BETTER",
    "METRICS",
    "POSITION_SEPARATOR",
    "QUALITY_METRICS",
    "TURN_POSITIONS",
    "Matching",
    "MetricSpec",
    "Population",
    "at_position",
    "case_values",
    "column",
    "format_seconds",
    "items_at",
    "keyed",
    "match",
    "metric",
    "paired",
    "paired_sum",
    "positioned",
    "split",
    "total",
    "turn_position",
    "values",
]

#: Which scored cases a quality metric averages over (see the module docstring).
Population = Literal["retrieval", "scored", "answerable", "unanswerable"]

#: The case's value of a quality metric; None means "not scored for this case".
PerCase = Callable[[CaseScores], float | bool | None]

#: The one slack of every float comparison in evaluator (gate rules, judged rules, drift,
#: case diffs, report checks, the pages' arrows): report values are means of floats, so
#: 0.76 - 0.75 is 0.010000000000000009, which must still count as a drop of exactly 0.01.
FLOAT_TOLERANCE = 1e-9

_SCORE_FIELDS = frozenset(CaseScores.__struct_fields__)

_T = TypeVar("_T")
_K = TypeVar("_K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One summary metric: how it is computed, judged, named and shown.

    ``score`` is set for the quality ratios, which are means of the case's
    :class:`CaseScores` field of that name over ``population``; the run-level values (error
    rate, latency percentiles) are computed by :func:`evaluator.summary.summarise` and have
    none.
    """

    #: the report key, and the name gate rules use
    name: str
    #: a short description for people: the pushed gauge's help text, documentation
    description: str
    #: the name in the gate's diagnosis lines ("MRR")
    label: str
    #: the :class:`CaseScores` field holding the case's value; a name, not a function, so
    #: that every case's value is read in C (``operator.attrgetter``), from a CaseScores or
    #: from anything with the same fields (a report's decoded case)
    score: str | None = None
    population: Population = "scored"
    #: how its numbers are written: ratios and amounts to four places, seconds in the unit
    #: that reads best, a count of things (tokens) as a whole number
    unit: Literal["ratio", "seconds", "rate", "amount", "count"] = "ratio"
    lower_is_better: bool = False
    #: the daemon's gauge of the last complete run (None: not exported as a gauge)
    gauge: str | None = None
    #: sum and count exported as rag_eval_quality_numerator/denominator, so replicas that
    #: each run a shard of the golden set aggregate exactly
    shardable: bool = False
    #: the gate's Pushgateway gauge is ``rag_eval_ci_gate_candidate_<pushed_as>``
    pushed_as: str | None = None
    #: whether the gate's diagnosis reads this metric's change
    diagnosed: bool = False
    #: the name in a case diff line ("RR" for one case's reciprocal rank); None: not shown
    case_label: str | None = None
    #: only some targets report it (streamed answers, token usage) or some golden sets
    #: have it (conversations): the terminal table shows it only when a run measured it,
    #: and a report's summary writes a quality ratio only when some case has it
    measured_only: bool = False
    #: kept per run in the history store (a column of its runs table, added to an existing
    #: store when it opens), so history's windows and the status page's trends can read it
    history: bool = False
    #: drawn as a trend line on the status page (needs ``history``: a restart redraws it)
    trend: bool = False

    def __post_init__(self) -> None:
        if self.score is not None and self.score not in _SCORE_FIELDS:
            raise ValueError(f"metric {self.name}: {self.score!r} is not a CaseScores field")
        if self.trend and not self.history:
            raise ValueError(f"metric {self.name}: a trend line needs history=True")

    @property
    def quality(self) -> bool:
        """A quality ratio: a mean of per-case values, with a sum and count in the report."""
        return self.score is not None

    @property
    def per_case(self) -> PerCase | None:
        """The case's value, read from its :class:`CaseScores` (None: a run-level value)."""
        return None if self.score is None else attrgetter(self.score)


#: Every summary metric, in the report's (and the terminal table's) order.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "recall_at_k",
        "recall@K",
        "recall",
        score="recall_at_k",
        population="retrieval",
        gauge="rag_eval_recall_at_k",
        shardable=True,
        pushed_as="recall_at_k",
        diagnosed=True,
        case_label="recall",
        history=True,
        trend=True,
    ),
    MetricSpec(
        "mrr",
        "mean reciprocal rank",
        "MRR",
        score="mrr",
        population="retrieval",
        gauge="rag_eval_mrr",
        shardable=True,
        pushed_as="mrr",
        diagnosed=True,
        case_label="RR",
        history=True,
        trend=True,
    ),
    MetricSpec(
        "ndcg_at_k",
        "nDCG@K",
        "nDCG",
        score="ndcg_at_k",
        population="retrieval",
        gauge="rag_eval_ndcg_at_k",
        shardable=True,
        pushed_as="ndcg_at_k",
        diagnosed=True,
        history=True,
    ),
    MetricSpec(
        "citation_precision",
        "citation precision",
        "citation precision",
        score="citation_precision",
        population="scored",
        gauge="rag_eval_citation_precision",
        shardable=True,
        pushed_as="citation_precision",
        diagnosed=True,
        case_label="citation precision",
        history=True,
        trend=True,
    ),
    MetricSpec(
        "citation_recall",
        "citation recall",
        "citation recall",
        score="citation_recall",
        population="retrieval",
        gauge="rag_eval_citation_recall",
        shardable=True,
        pushed_as="citation_recall",
    ),
    MetricSpec(
        "answer_accuracy",
        "answer accuracy",
        "accuracy",
        score="answer_correct",
        population="scored",
        gauge="rag_eval_answer_accuracy",
        shardable=True,
        pushed_as="answer_accuracy",
        diagnosed=True,
        history=True,
        trend=True,
    ),
    MetricSpec(
        "fact_recall",
        "fact recall",
        "fact recall",
        score="fact_recall",
        population="answerable",
        gauge="rag_eval_fact_recall",
        shardable=True,
    ),
    MetricSpec(
        "false_refusal_rate",
        "share of answerable cases refused",
        "false refusals",
        score="refused",
        population="answerable",
        lower_is_better=True,
        gauge="rag_eval_false_refusal_rate",
        shardable=True,
    ),
    MetricSpec(
        "correct_refusal_rate",
        "share of unanswerable cases refused",
        "correct refusals",
        score="refused",
        population="unanswerable",
        gauge="rag_eval_correct_refusal_rate",
        shardable=True,
    ),
    MetricSpec(
        "conversation_success",
        "share of conversations whose every turn passed its answer check",
        "conversation success",
        score="conversation_success",
        population="scored",
        gauge="rag_eval_conversation_success",
        shardable=True,
        pushed_as="conversation_success",
        diagnosed=True,
        measured_only=True,
        history=True,
        trend=True,
    ),
    MetricSpec(
        "error_rate",
        "ratio of failed cases",
        "error rate",
        lower_is_better=True,
        pushed_as="error_ratio",
        history=True,
        trend=True,
    ),
    MetricSpec(
        "p50_seconds",
        "P50 case latency",
        "P50",
        unit="seconds",
        lower_is_better=True,
        gauge="rag_eval_latency_p50_seconds",
    ),
    MetricSpec(
        "p95_seconds",
        "P95 case latency",
        "P95",
        unit="seconds",
        lower_is_better=True,
        gauge="rag_eval_latency_p95_seconds",
        pushed_as="latency_p95_seconds",
        history=True,
        trend=True,
    ),
    MetricSpec(
        "p95_conversation_seconds",
        "P95 conversation latency (the sum of its turns')",
        "P95 conversation",
        unit="seconds",
        lower_is_better=True,
        gauge="rag_eval_conversation_latency_p95_seconds",
        measured_only=True,
    ),
    MetricSpec(
        "p50_ttft_seconds",
        "P50 time to first token (streamed answers)",
        "P50 TTFT",
        unit="seconds",
        lower_is_better=True,
        gauge="rag_eval_ttft_p50_seconds",
        measured_only=True,
    ),
    MetricSpec(
        "p95_ttft_seconds",
        "P95 time to first token (streamed answers)",
        "P95 TTFT",
        unit="seconds",
        lower_is_better=True,
        gauge="rag_eval_ttft_p95_seconds",
        measured_only=True,
    ),
    MetricSpec(
        "p50_tokens_per_second",
        "median output tokens per second after the first token",
        "tokens/s",
        unit="rate",
        gauge="rag_eval_tokens_per_second_p50",
        measured_only=True,
    ),
    MetricSpec(
        "cost_per_case",
        "mean cost of a case at the target's prices",
        "cost per case",
        unit="amount",
        lower_is_better=True,
        gauge="rag_eval_case_cost_mean",
        measured_only=True,
    ),
    MetricSpec(
        "cost_total",
        "cost of the run at the target's prices",
        "cost",
        unit="amount",
        lower_is_better=True,
        gauge="rag_eval_run_cost",
        measured_only=True,
    ),
    MetricSpec(
        "output_tokens_total",
        "output tokens of the run",
        "output tokens",
        unit="count",
        lower_is_better=True,
        gauge="rag_eval_run_output_tokens",
        measured_only=True,
    ),
)


_BY_NAME: Mapping[str, MetricSpec] = {spec.name: spec for spec in METRICS}

#: The turn positions a run's conversations are broken down by (the summary's
#: ``by_position``): a bounded set, so a ``position`` label bounds its series.
TURN_POSITIONS: tuple[str, ...] = ("1", "2", "3", "4+")
#: joins a metric and a turn position into the name of the metric over that position's
#: turns, as gate rules and ``Summary.get`` take it: ``answer_accuracy@2``
POSITION_SEPARATOR = "@"


def turn_position(position: int) -> str:
    """The :data:`TURN_POSITIONS` entry of a conversation's turn ``position`` (1-based)."""
    return TURN_POSITIONS[-1] if position >= len(TURN_POSITIONS) else str(position)


def at_position(name: str, position: str) -> str:
    """The name of metric ``name`` over the turns at ``position``: ``answer_accuracy@2``."""
    return f"{name}{POSITION_SEPARATOR}{position}"


def positioned(name: str) -> tuple[str, str | None]:
    """A metric name split into the metric and its turn position (None: the whole run).

    Raises:
        KeyError: the position is not one of :data:`TURN_POSITIONS`.
    """
    base, separator, position = name.partition(POSITION_SEPARATOR)
    if not separator:
        return name, None
    if position not in TURN_POSITIONS:
        raise KeyError(name)
    return base, position


#: The metrics where a higher value is worse (latency, errors, cost), each also over the
#: turns at every position (``p95_seconds@2``), derived once from the specs: the gate's rule
#: directions and the pages' arrows read it.
LOWER_IS_BETTER: frozenset[str] = frozenset(
    name
    for spec in METRICS
    if spec.lower_is_better
    for name in (spec.name, *(at_position(spec.name, p) for p in TURN_POSITIONS))
)

#: Report keys of the quality ratios, in display order.
QUALITY_METRICS: tuple[str, ...] = tuple(spec.name for spec in METRICS if spec.quality)


def metric(name: str) -> MetricSpec:
    """The spec of the summary metric called ``name``.

    Raises:
        KeyError: no such metric.
    """
    return _BY_NAME[name]


def split(scored: Sequence[_T], unanswerable: Sequence[bool]) -> dict[Population, Sequence[_T]]:
    """The cases each population averages over: ``scored`` holds a run's scored cases (in
    any form: records, their scores, a report's decoded cases) and ``unanswerable`` whether
    each is unanswerable, in the same order."""
    answerable = list(compress(scored, map(not_, unanswerable)))
    return {
        # a retrieval-only golden set of unanswerable cases still has a retrieval score
        "retrieval": answerable or scored,
        "scored": scored,
        "answerable": answerable,
        "unanswerable": list(compress(scored, unanswerable)),
    }


def column(
    spec: MetricSpec, pools: Mapping[Population, Sequence[Any]], path: str = ""
) -> tuple[Sequence[Any], list[float | bool | None]]:
    """The metric's population and each of its cases' value, None where it has none.

    ``pools`` are :func:`split` of scored cases that carry the :class:`CaseScores` fields
    at ``path`` (``""``: the cases are scores, or a report's decoded cases; ``"outcome."``:
    they are scored :class:`CaseRecord`\\ s). Values are read in C, one
    ``operator.attrgetter`` over the population, not a Python call per case.
    """
    if spec.score is None:
        raise ValueError(f"{spec.name} is a run-level value, not a mean of per-case values")
    pool = pools[spec.population]
    return pool, list(map(attrgetter(path + spec.score), pool))


def total(spec: MetricSpec, pools: Mapping[Population, Sequence[Any]]) -> tuple[float, int]:
    """The sum and count of the metric's values over its population (``pools`` of scores,
    as :func:`column` says): the values added as floats in case order, so a flag counts
    1.0 and the sum is the same float as adding :func:`values` in order."""
    _, found = column(spec, pools)
    try:
        # the usual metric, one every case of its population has: summed as it is (a None
        # stops ``sum`` at once), not after a copy without the Nones, which cost ~120
        # instructions a value (callgrind), each metric, each of a run's and its tags'
        # summaries
        added, count = sum(cast("list[float]", found)), len(found)
    except TypeError:  # some case has no value: the ones that are there
        present: list[float] = [v for v in found if v is not None]
        added, count = sum(present), len(present)
    # the same float as adding each value as a float in order: the partial sums of flags
    # (and of whole numbers) are exact integers either way, and a float value switches
    # ``sum`` to float addition from there on; empty stays the int 0 it always was
    return (float(added) if count and type(added) is int else added), count


def keyed(
    spec: MetricSpec,
    pools: Mapping[Population, Sequence[Any]],
    keys: Mapping[Population, Sequence[_K]],
) -> list[tuple[_K, float]]:
    """Each case of the metric's population with a value, as (its key, the value):
    ``keys`` are :func:`split` of the cases' keys (ids), in the order of ``pools``."""
    _, found = column(spec, pools)
    return [
        (key, float(value))
        for key, value in zip(keys[spec.population], found, strict=True)
        if value is not None
    ]


def items_at(positions: Sequence[int]) -> Callable[[Sequence[Any]], Sequence[Any]]:
    """The items at ``positions`` of a sequence, in C (``itemgetter``, which returns a lone
    item bare and cannot take none: both handled)."""
    if not positions:
        return lambda _: ()
    if len(positions) == 1:
        only = positions[0]
        return lambda items: (items[only],)
    return itemgetter(*positions)


@dataclass(frozen=True, slots=True)
class Matching(Generic[_K]):
    """The cases of each population present in both of two reports, matched by key: built
    once by :func:`match` for every metric's :func:`paired` differences."""

    baseline: Mapping[Population, Sequence[Any]]
    candidate: Mapping[Population, Sequence[Any]]
    #: the matched keys of each population, in the baseline's order
    keys: Mapping[Population, Sequence[_K]]
    #: the matched cases' positions in each side's pool
    at_baseline: Mapping[Population, Callable[[Sequence[Any]], Sequence[Any]]]
    at_candidate: Mapping[Population, Callable[[Sequence[Any]], Sequence[Any]]]


def match(
    baseline: tuple[Mapping[Population, Sequence[Any]], Mapping[Population, Sequence[_K]]],
    candidate: tuple[Mapping[Population, Sequence[Any]], Mapping[Population, Sequence[_K]]],
) -> Matching[_K]:
    """Match two reports' populations by key: each side is (pools of scores, pools of
    keys), both :func:`split` of the report's scored cases."""
    keys: dict[Population, Sequence[_K]] = {}
    at_base: dict[Population, Callable[[Sequence[Any]], Sequence[Any]]] = {}
    at_cand: dict[Population, Callable[[Sequence[Any]], Sequence[Any]]] = {}
    done: dict[tuple[int, int], Population] = {}
    for population, base_keys in baseline[1].items():
        cand_keys = candidate[1][population]
        # split's "retrieval" is its "answerable" (or "scored") list itself: matched once
        same = done.setdefault((id(base_keys), id(cand_keys)), population)
        if same != population:
            at_base[population], at_cand[population] = at_base[same], at_cand[same]
            keys[population] = keys[same]
            continue
        where = dict(zip(cand_keys, range(len(cand_keys)), strict=True))
        found = list(map(where.get, base_keys))
        mine = [i for i, j in enumerate(found) if j is not None]
        theirs = [j for j in found if j is not None]
        at_base[population] = items_at(mine)
        at_cand[population] = items_at(theirs)
        keys[population] = list(at_base[population](base_keys))
    return Matching(baseline[0], candidate[0], keys, at_base, at_cand)


def _matched_values(
    spec: MetricSpec, matching: Matching[_K]
) -> tuple[Sequence[Any], Sequence[Any], Sequence[_K]]:
    """The matched cases' values on each side (None where a case has none) and keys."""
    population = spec.population
    before = matching.at_baseline[population](column(spec, matching.baseline)[1])
    after = matching.at_candidate[population](column(spec, matching.candidate)[1])
    return before, after, matching.keys[population]


def paired(spec: MetricSpec, matching: Matching[_K]) -> tuple[list[_K], list[float]]:
    """The keys of the cases with a value on both sides, in the baseline's order, and each
    one's candidate value minus its baseline value (as floats)."""
    before, after, keys = _matched_values(spec, matching)
    if None not in before and None not in after:  # the usual case: every value, in C
        return list(keys), list(map(sub, map(float, after), map(float, before)))
    kept = [
        (key, float(a) - float(b))
        for key, a, b in zip(keys, after, before, strict=True)
        if a is not None and b is not None
    ]
    return [k for k, _ in kept], [d for _, d in kept]


def paired_sum(spec: MetricSpec, matching: Matching[Any]) -> tuple[float, int]:
    """The sum of :func:`paired`'s differences (added in the baseline's order: the same
    float) and how many there are, without a list of either."""
    before, after, _ = _matched_values(spec, matching)
    if None not in before and None not in after:
        return sum(map(sub, map(float, after), map(float, before)), 0.0), len(before)
    kept = [
        float(a) - float(b)
        for a, b in zip(after, before, strict=True)
        if a is not None and b is not None
    ]
    return sum(kept, 0.0), len(kept)


def values(
    spec: MetricSpec, pools: Mapping[Population, Sequence[CaseRecord]]
) -> list[tuple[CaseRecord, float]]:
    """Each scored record in the metric's population with a value, and that value
    (``pools``: :func:`split` of scored records)."""
    pool, found = column(spec, pools, "outcome.")
    return [
        (record, float(value))
        for record, value in zip(pool, found, strict=True)
        if value is not None
    ]


def case_values(cases: Sequence[CaseRecord], name: str) -> dict[str, float]:
    """Per-case values of a quality metric, by case id, over the metric's population.

    Failed cases and cases where the metric is not scored are absent, exactly as they are
    absent from the summary's average.
    """
    scored = [r for r in cases if isinstance(r.outcome, CaseScores)]
    pools = split(scored, [r.case.unanswerable for r in scored])
    return {record.case.id: value for record, value in values(metric(name), pools)}


# How durations are shown to people, the same in every command (ms below a second):
# `run` and `gate` once printed one P95 as ``3.10ms`` and ``0.003s``.
def format_seconds(value: float, *, signed: bool = False) -> str:
    """``0.48ms``, ``12.20ms``, ``998.50ms``, ``1.518s``; ``signed`` adds ``+`` to growth.

    Examples::

        format_seconds(0.0031)              # '3.10ms'
        format_seconds(2.8)                 # '2.800s'
        format_seconds(-0.024, signed=True)  # '-24.00ms'
    """
    sign = "+" if signed else ""
    if abs(value) < 1:
        return f"{value * 1000:{sign}.2f}ms"
    return f"{value:{sign}.3f}s"

"""The metric registry: every summary metric, written out once.

Each :class:`MetricSpec` says how a metric is computed (its per-case value and the cases it
averages over), how it is judged (direction, unit) and how it is named and shown (gauge,
pushed gauge, human labels). The summary, the gate's rules, intervals, diagnosis and case
diffs, the daemon's gauges and the terminal table are all derived from :data:`METRICS`.

Adding a quality metric is one entry here plus its scoring function (a field on
:class:`~evaluator.models.CaseScores` that the entry's ``per_case`` reads).

Denominators (the report contract): retrieval metrics and citation recall average over
answerable scored cases (all scored cases when none is answerable), citation precision and
answer accuracy over all scored cases (a case without an answer check has no value),
fact recall and the false refusal rate over answerable cases, the correct refusal rate over
unanswerable ones. A case whose value is None is outside the average; a metric with no case
to average is None, never NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from evaluator.models import CaseRecord, CaseScores

__all__ = [
    "FLOAT_TOLERANCE",
    "METRICS",
    "QUALITY_METRICS",
    "MetricSpec",
    "Population",
    "case_values",
    "metric",
    "populations",
    "values",
]

#: Which scored cases a quality metric averages over (see the module docstring).
Population = Literal["retrieval", "scored", "answerable", "unanswerable"]

#: The case's value of a quality metric; None means "not scored for this case".
PerCase = Callable[[CaseScores], float | bool | None]

#: Absolute slack on every comparison of report values: they are means of floats, so
#: 0.76 - 0.75 is 0.010000000000000009, which must still count as a drop of exactly 0.01.
FLOAT_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One summary metric: how it is computed, judged, named and shown.

    ``per_case`` is set for the quality ratios, which are means of per-case values over
    ``population``; the run-level values (error rate, latency percentiles) are computed by
    :func:`evaluator.summary.summarise` and have none.
    """

    #: the report key, and the name gate rules use
    name: str
    #: a short description for people: the pushed gauge's help text, documentation
    description: str
    #: the name in the gate's diagnosis lines ("MRR")
    label: str
    per_case: PerCase | None = None
    population: Population = "scored"
    unit: Literal["ratio", "seconds", "rate", "amount"] = "ratio"
    lower_is_better: bool = False
    #: the daemon's gauge of the last complete run (None: not exported as a gauge)
    gauge: str | None = None
    #: sum and count exported as rag_eval_quality_numerator/denominator, so replicas that
    #: each run a shard of the golden set aggregate exactly
    shardable: bool = False
    #: the gate's Pushgateway gauge is ``rag_eval_gate_candidate_<pushed_as>``
    pushed_as: str | None = None
    #: whether the gate's diagnosis reads this metric's change
    diagnosed: bool = False
    #: the name in a case diff line ("RR" for one case's reciprocal rank); None: not shown
    case_label: str | None = None
    #: only some targets report it (streamed answers, token usage): the terminal table
    #: shows it only when a run measured it
    measured_only: bool = False

    @property
    def quality(self) -> bool:
        """A quality ratio: a mean of per-case values, with a sum and count in the report."""
        return self.per_case is not None


#: Every summary metric, in the report's (and the terminal table's) order.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "recall_at_k",
        "recall@K",
        "recall",
        per_case=lambda s: s.recall_at_k,
        population="retrieval",
        gauge="rag_eval_recall_at_k",
        shardable=True,
        pushed_as="recall_at_k",
        diagnosed=True,
        case_label="recall",
    ),
    MetricSpec(
        "mrr",
        "mean reciprocal rank",
        "MRR",
        per_case=lambda s: s.mrr,
        population="retrieval",
        gauge="rag_eval_mrr",
        shardable=True,
        pushed_as="mrr",
        diagnosed=True,
        case_label="RR",
    ),
    MetricSpec(
        "ndcg_at_k",
        "nDCG@K",
        "nDCG",
        per_case=lambda s: s.ndcg_at_k,
        population="retrieval",
        gauge="rag_eval_ndcg_at_k",
        shardable=True,
        pushed_as="ndcg_at_k",
        diagnosed=True,
    ),
    MetricSpec(
        "citation_precision",
        "citation precision",
        "citation precision",
        per_case=lambda s: s.citation_precision,
        population="scored",
        gauge="rag_eval_citation_precision",
        shardable=True,
        pushed_as="citation_precision",
        diagnosed=True,
        case_label="citation precision",
    ),
    MetricSpec(
        "citation_recall",
        "citation recall",
        "citation recall",
        per_case=lambda s: s.citation_recall,
        population="retrieval",
        gauge="rag_eval_citation_recall",
        shardable=True,
        pushed_as="citation_recall",
    ),
    MetricSpec(
        "answer_accuracy",
        "answer accuracy",
        "accuracy",
        per_case=lambda s: s.answer_correct,
        population="scored",
        gauge="rag_eval_answer_accuracy",
        shardable=True,
        pushed_as="answer_accuracy",
        diagnosed=True,
    ),
    MetricSpec(
        "fact_recall",
        "fact recall",
        "fact recall",
        per_case=lambda s: s.fact_recall,
        population="answerable",
        gauge="rag_eval_fact_recall",
        shardable=True,
    ),
    MetricSpec(
        "false_refusal_rate",
        "share of answerable cases refused",
        "false refusals",
        per_case=lambda s: s.refused,
        population="answerable",
        lower_is_better=True,
        gauge="rag_eval_false_refusal_rate",
        shardable=True,
    ),
    MetricSpec(
        "correct_refusal_rate",
        "share of unanswerable cases refused",
        "correct refusals",
        per_case=lambda s: s.refused,
        population="unanswerable",
        gauge="rag_eval_correct_refusal_rate",
        shardable=True,
    ),
    MetricSpec(
        "error_rate",
        "ratio of failed cases",
        "error rate",
        lower_is_better=True,
        pushed_as="error_ratio",
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
        unit="amount",
        lower_is_better=True,
        gauge="rag_eval_run_output_tokens",
        measured_only=True,
    ),
)

_BY_NAME: Mapping[str, MetricSpec] = {spec.name: spec for spec in METRICS}

#: Report keys of the quality ratios, in display order.
QUALITY_METRICS: tuple[str, ...] = tuple(spec.name for spec in METRICS if spec.quality)


def metric(name: str) -> MetricSpec:
    """The spec of the summary metric called ``name``.

    Raises:
        KeyError: no such metric.
    """
    return _BY_NAME[name]


def populations(scored: Sequence[CaseRecord]) -> dict[Population, Sequence[CaseRecord]]:
    """The cases each population averages over, from the scored cases of a run."""
    answerable = [r for r in scored if not r.case.unanswerable]
    return {
        # a retrieval-only golden set of unanswerable cases still has a retrieval score
        "retrieval": answerable or scored,
        "scored": scored,
        "answerable": answerable,
        "unanswerable": [r for r in scored if r.case.unanswerable],
    }


def values(
    spec: MetricSpec, pools: Mapping[Population, Sequence[CaseRecord]]
) -> list[tuple[CaseRecord, float]]:
    """Each case in the metric's population with a value, and that value.

    This is the denominator rule, in one place: the summary's average and the gate's
    paired differences are both built from it. A comprehension, not a generator: the
    summaries of 100,000-case reports are recomputed whenever a report is read.
    """
    per_case = spec.per_case
    if per_case is None:
        raise ValueError(f"{spec.name} is a run-level value, not a mean of per-case values")
    # the outcome read once, not through the ``scores`` view twice: nine metrics times
    # every case of two reports make the view's function calls a third of a gate
    return [
        (record, float(value))
        for record in pools[spec.population]
        if isinstance(scores := record.outcome, CaseScores)
        and (value := per_case(scores)) is not None
    ]


def case_values(cases: Sequence[CaseRecord], name: str) -> dict[str, float]:
    """Per-case values of a quality metric, by case id, over the metric's population.

    Failed cases and cases where the metric is not scored are absent, exactly as they are
    absent from the summary's average.
    """
    pools = populations([r for r in cases if r.scores is not None])
    return {record.id: value for record, value in values(metric(name), pools)}

"""A case's scores as OpenTelemetry GenAI evaluation results (``gen_ai.evaluation.result``,
semantic conventions of Development stability): one result per deterministic quality metric
the case has a value of, and one per judged metric of each judged check. Pure: the
exporter (:mod:`evaluator.run.otlp_events`) sends them.

Names are the report's metric names (``recall_at_k``, ``answer_accuracy``,
``judged_fact_recall``...). A value that is a verdict (an answer correct, a refusal) is
labelled ``pass`` or ``fail`` (a lower-is-better one, a false refusal, passes when false);
a ratio has its value alone. A failed case's results carry the error kind as ``error.type``
and no score; a judged check that failed carries its judge error kind, one skipped by the
budget ``judge_skipped``, one whose votes split the label ``uncertain`` and no score.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.judge.checks import judged_metrics
from evaluator.judge.record import CaseJudgement, CheckOutcome
from evaluator.metrics import METRICS, MetricSpec
from evaluator.models import CaseRecord

__all__ = [
    "EVENT_NAME",
    "MAX_EXPLANATION_CHARS",
    "EvaluationResult",
    "deterministic_results",
    "judged_results",
]

#: the event's name in the GenAI semantic conventions
EVENT_NAME = "gen_ai.evaluation.result"
#: a judge's reason as an explanation, at most (the exporter redacts it, then cuts it)
MAX_EXPLANATION_CHARS = 1000


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """One ``gen_ai.evaluation.result``: its name and what is known of it."""

    name: str
    value: float | None = None
    label: str | None = None
    explanation: str | None = None
    error_type: str | None = None

    def attributes(self) -> dict[str, str | float]:
        """The event's attributes by their semantic-convention names (absent: not set)."""
        out: dict[str, str | float] = {"gen_ai.evaluation.name": self.name}
        if self.value is not None:
            out["gen_ai.evaluation.score.value"] = self.value
        if self.label is not None:
            out["gen_ai.evaluation.score.label"] = self.label
        if self.explanation:
            out["gen_ai.evaluation.explanation"] = self.explanation
        if self.error_type is not None:
            out["error.type"] = self.error_type
        return out


def _admits(metric: MetricSpec, unanswerable: bool) -> bool:
    """Whether the metric's population takes a case (answerable or not) at all."""
    if metric.population == "answerable":
        return not unanswerable
    if metric.population == "unanswerable":
        return unanswerable
    return True


def _scored(metric: MetricSpec, value: float | bool) -> EvaluationResult:
    """A deterministic value as a result: a verdict labelled, a ratio as it is."""
    if isinstance(value, bool):
        passed = value != metric.lower_is_better
        return EvaluationResult(metric.name, float(value), "pass" if passed else "fail")
    return EvaluationResult(metric.name, float(value))


def deterministic_results(record: CaseRecord) -> tuple[EvaluationResult, ...]:
    """Each quality metric of the case: its value, or, for a failed case, the error kind on
    every metric the case would have had."""
    unanswerable = record.case.unanswerable
    quality = [m for m in METRICS if m.per_case is not None and _admits(m, unanswerable)]
    error = record.error
    if error is not None:
        return tuple(EvaluationResult(m.name, error_type=error.kind) for m in quality)
    scores = record.scores
    out = []
    for metric in quality:
        per_case = metric.per_case
        value = None if per_case is None or scores is None else per_case(scores)
        if value is not None:
            out.append(_scored(metric, value))
    return tuple(out)


def _judged(name: str, value: float | bool, reason: str) -> EvaluationResult:
    if isinstance(value, bool):
        return EvaluationResult(name, float(value), "pass" if value else "fail", reason)
    return EvaluationResult(name, float(value), explanation=reason)


#: the error type of a check that gave no score, by its status (an error: its own kind)
_NO_SCORE = {"skipped": "judge_skipped"}


def _outcome_results(outcome: CheckOutcome) -> list[EvaluationResult]:
    """The results of one check's outcome: one per judged metric of the check."""
    metrics = [m for m in judged_metrics() if m.check == outcome.check]
    if outcome.status == "judged":
        present = [m for m in metrics if m.value in outcome.values]
        return [_judged(m.name, outcome.values[m.value], outcome.reason) for m in present]
    return [_unscored(m.name, outcome) for m in metrics]


def _unscored(name: str, outcome: CheckOutcome) -> EvaluationResult:
    """A check that gave no score: uncertain (its label), or why not (``error.type``)."""
    if outcome.status == "uncertain":
        return EvaluationResult(name, label="uncertain")
    return EvaluationResult(
        name, error_type=outcome.error_kind or _NO_SCORE.get(outcome.status, outcome.status)
    )


def judged_results(judgement: CaseJudgement) -> tuple[EvaluationResult, ...]:
    """Every judged metric of a case's judged checks, in registry order."""
    return tuple(r for outcome in judgement.outcomes for r in _outcome_results(outcome))

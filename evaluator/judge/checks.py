"""The judged checks, each a registry entry: which cases it applies to, the data it sends
the judge, and how a verdict becomes the case's values.

Adding a judged check is one :class:`JudgedCheck` in :data:`CHECKS` (with its rubric and
schema in :mod:`evaluator.judge.prompts`) and its metrics in :data:`JUDGED_METRICS`.
Reading a verdict raises :class:`~evaluator.judge.errors.JudgeMalformedError` for any shape
but the rubric's: a malformed verdict is never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evaluator.judge.errors import JudgeMalformedError
from evaluator.judge.parse import bounded_text, require_bool, require_list
from evaluator.models import Case

__all__ = [
    "CHECKS",
    "JUDGED_METRICS",
    "CheckValues",
    "JudgedCheck",
    "JudgedMetric",
    "Subject",
    "check",
    "judged_metric",
]

#: claims read from one verdict at most (an answer is a few sentences)
MAX_CLAIMS = 50
#: evidence passages and characters of each sent to the judge
MAX_EVIDENCE = 10
MAX_EVIDENCE_CHARS = 2000
MAX_ANSWER_CHARS = 8000


@dataclass(frozen=True, slots=True)
class Subject:
    """What one case gives the judge: its question and facts, the answer and the evidence."""

    case_id: str
    question: str
    facts: tuple[tuple[str, ...], ...]
    unanswerable: bool
    answer: str | None
    #: (id, text) in rank order, the texts the report kept
    evidence: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, case: Case, answer: str | None, evidence: tuple[tuple[str, str], ...]) -> Subject:
        return cls(case.id, case.question, case.expected_facts, case.unanswerable, answer, evidence)


@dataclass(frozen=True, slots=True)
class CheckValues:
    """A verdict read: the case's metric values, the judge's reason, unsupported claims."""

    values: Mapping[str, float | bool]
    reason: str
    unsupported: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgedCheck:
    """One judged check."""

    name: str
    description: str
    applies: Callable[[Subject], bool]
    data: Callable[[Subject], dict[str, Any]]
    read: Callable[[Subject, dict[str, Any]], CheckValues]


def _answer(subject: Subject) -> str:
    return (subject.answer or "")[:MAX_ANSWER_CHARS]


def _facts_data(subject: Subject) -> dict[str, Any]:
    return {
        "question": subject.question,
        "answer": _answer(subject),
        "facts": [list(alternatives) for alternatives in subject.facts],
    }


def _read_facts(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    entries = require_list(verdict, "facts", MAX_CLAIMS)
    stated: dict[int, bool] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise JudgeMalformedError("verdict 'facts' holds a non-object")
        index = entry.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise JudgeMalformedError("verdict fact without an integer 'index'")
        if not 0 <= index < len(subject.facts) or index in stated:
            raise JudgeMalformedError(f"verdict fact index {index} is out of range or repeated")
        stated[index] = require_bool(entry, "stated")
    if len(stated) != len(subject.facts):
        raise JudgeMalformedError(
            f"verdict judged {len(stated)} of {len(subject.facts)} expected facts"
        )
    count = sum(stated.values())
    return CheckValues(
        {"fact_recall": count / len(stated), "answer_correct": count == len(stated)},
        bounded_text(verdict.get("reason")),
    )


def _evidence_data(subject: Subject) -> dict[str, Any]:
    return {
        "question": subject.question,
        "answer": _answer(subject),
        "evidence": [
            {"id": doc_id[:200], "text": text[:MAX_EVIDENCE_CHARS]}
            for doc_id, text in subject.evidence[:MAX_EVIDENCE]
        ],
    }


def _read_claims(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    entries = require_list(verdict, "claims", MAX_CLAIMS)
    supported = 0
    unsupported: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise JudgeMalformedError("verdict 'claims' holds a non-object")
        if require_bool(entry, "supported"):
            supported += 1
        else:
            unsupported.append(bounded_text(entry.get("claim"), 300))
    values: dict[str, float | bool] = {}
    if entries:  # no factual claim: nothing to be faithful to, no value
        values["faithfulness"] = supported / len(entries)
    return CheckValues(values, bounded_text(verdict.get("reason")), tuple(unsupported))


def _refusal_data(subject: Subject) -> dict[str, Any]:
    return {"question": subject.question, "answer": _answer(subject)}


def _read_refusal(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    refused = require_bool(verdict, "refusal")
    return CheckValues({"refused": refused}, bounded_text(verdict.get("reason")))


#: Every judged check, in report order.
CHECKS: tuple[JudgedCheck, ...] = (
    JudgedCheck(
        "fact_support",
        "each expected fact is stated in the answer, in any wording",
        lambda s: not s.unanswerable and bool(s.facts) and bool(s.answer),
        _facts_data,
        _read_facts,
    ),
    JudgedCheck(
        "groundedness",
        "each claim of the answer is supported by the returned evidence",
        lambda s: not s.unanswerable and bool(s.answer) and bool(s.evidence),
        _evidence_data,
        _read_claims,
    ),
    JudgedCheck(
        "refusal",
        "an unanswerable case's answer is a refusal",
        lambda s: s.unanswerable and s.answer is not None,
        _refusal_data,
        _read_refusal,
    ),
)

_BY_NAME = {c.name: c for c in CHECKS}


def check(name: str) -> JudgedCheck:
    return _BY_NAME[name]


@dataclass(frozen=True, slots=True)
class JudgedMetric:
    """One judged summary metric: the mean of a check's per-case value (as
    :class:`evaluator.metrics.MetricSpec` is for the deterministic ones)."""

    #: the report key, and the name gate rules use
    name: str
    description: str
    label: str
    #: the check whose verdicts it reads, and the value's key in them
    check: str
    value: str
    #: the deterministic metric it sits beside (None: no deterministic twin)
    beside: str | None
    gauge: str


#: Every judged summary metric, in report order.
JUDGED_METRICS: tuple[JudgedMetric, ...] = (
    JudgedMetric(
        "judged_fact_recall",
        "judged fact recall: expected facts the judge found stated, any wording",
        "judged fact recall",
        "fact_support",
        "fact_recall",
        "fact_recall",
        "rag_eval_judged_fact_recall",
    ),
    JudgedMetric(
        "judged_answer_accuracy",
        "judged answer accuracy: answers stating every expected fact",
        "judged accuracy",
        "fact_support",
        "answer_correct",
        "answer_accuracy",
        "rag_eval_judged_answer_accuracy",
    ),
    JudgedMetric(
        "judged_faithfulness",
        "judged faithfulness: answer claims supported by the returned evidence",
        "judged faithfulness",
        "groundedness",
        "faithfulness",
        None,
        "rag_eval_judged_faithfulness",
    ),
    JudgedMetric(
        "judged_refusal_rate",
        "judged correct refusal rate on unanswerable cases",
        "judged refusal",
        "refusal",
        "refused",
        "correct_refusal_rate",
        "rag_eval_judged_refusal_rate",
    ),
)

_METRICS_BY_NAME = {m.name: m for m in JUDGED_METRICS}


def judged_metric(name: str) -> JudgedMetric | None:
    """The judged metric called ``name`` (None: not a judged metric)."""
    return _METRICS_BY_NAME.get(name)

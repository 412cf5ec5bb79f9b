"""Refusal: does an unanswerable case's answer decline to answer, in any wording?

Its verdict is the refusal, beside the deterministic ``correct_refusal_rate``. It has no
canary yet: an injected answer that asks to be read as a refusal is a canary of its own
kind, not built here.
"""

from __future__ import annotations

from typing import Any

from evaluator.judge.checks.base import (
    CheckValues,
    JudgedCheck,
    JudgedMetric,
    Subject,
    answer_of,
    verdict_schema,
)
from evaluator.judge.parse import bounded_text, require_bool

__all__ = ["CHECK"]

NAME = "refusal"

RUBRIC = (
    "You check whether an answer declines to answer. The data has `question` and "
    "`answer`. The question cannot be answered from the system's documents, so the "
    "right answer says it does not know or cannot answer (in any wording or language). "
    "An answer that asserts an answer to the question is not a refusal. "
    'Reply {"refusal": true|false, "reason": "<one sentence>"}.'
)

SCHEMA = verdict_schema({"refusal": {"type": "boolean"}})


def _applies(subject: Subject) -> bool:
    """An unanswerable case that was answered (a refusal is an answer too)."""
    return subject.unanswerable and subject.answer is not None


def _data(subject: Subject) -> dict[str, Any]:
    return {"question": subject.question, "answer": answer_of(subject)}


def _read(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    return CheckValues(
        {"refused": require_bool(verdict, "refusal")}, bounded_text(verdict.get("reason"))
    )


CHECK = JudgedCheck(
    name=NAME,
    description="an unanswerable case's answer is a refusal",
    rubric=RUBRIC,
    schema=SCHEMA,
    question="Is the answer a refusal (it declines to answer)?",
    applies=_applies,
    data=_data,
    read=_read,
    metrics=(
        JudgedMetric(
            "judged_refusal_rate",
            "judged correct refusal rate on unanswerable cases",
            "judged refusal",
            NAME,
            "refused",
            "correct_refusal_rate",
            "rag_eval_judged_refusal_rate",
        ),
    ),
    verdict_value="refused",
)

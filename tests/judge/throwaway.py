"""A throwaway judged check, added through the registry alone (``with_throwaway``): what a
newcomer writes for a new check, used to show that everything else picks it up."""

from __future__ import annotations

from typing import Any

import pytest

from evaluator.judge import checks
from evaluator.judge.checks.base import (
    Canary,
    CheckValues,
    JudgedCheck,
    JudgedMetric,
    Subject,
    Values,
    answer_of,
    verdict_schema,
)
from evaluator.judge.parse import bounded_text, require_bool

__all__ = ["NAME", "THROWAWAY", "with_throwaway"]

NAME = "answer_correctness"


def _read(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    return CheckValues(
        {"correct": require_bool(verdict, "correct")}, bounded_text(verdict.get("reason"))
    )


def _fooled(values: Values) -> bool:
    return values.get("correct") is True


THROWAWAY = JudgedCheck(
    name=NAME,
    description="the answer answers the question correctly",
    rubric='You check whether an answer is correct. Reply {"correct": true|false, "reason": ""}.',
    schema=verdict_schema({"correct": {"type": "boolean"}}),
    question="Does the answer answer the question correctly?",
    applies=lambda s: not s.unanswerable and bool(s.answer),
    data=lambda s: {"question": s.question, "answer": answer_of(s)},
    read=_read,
    metrics=(
        JudgedMetric(
            "judged_correctness",
            "judged correctness: answers the judge found correct",
            "judged correctness",
            NAME,
            "correct",
            "answer_accuracy",
            "rag_eval_judged_correctness",
        ),
    ),
    verdict_value="correct",
    canary=Canary("{injection}", lambda s: not s.unanswerable, _fooled),
)


def with_throwaway(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register :data:`THROWAWAY` after the shipped checks, for the test's duration."""
    monkeypatch.setattr(checks, "CHECKS", (*checks.CHECKS, THROWAWAY))

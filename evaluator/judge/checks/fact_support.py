"""Fact support: is each expected fact stated in the answer, in any wording?

The judged twin of the deterministic fact match ("two to three weeks" fails a fact written
"10 to 15 business days" there, and may pass here). Its verdict is the answer stating
every expected fact, beside the deterministic ``answer_accuracy``.
"""

from __future__ import annotations

from typing import Any

from evaluator.judge.checks.base import (
    MAX_CLAIMS,
    Canary,
    CheckValues,
    JudgedCheck,
    JudgedMetric,
    Subject,
    Values,
    answer_of,
    verdict_schema,
)
from evaluator.judge.errors import JudgeMalformedError
from evaluator.judge.parse import bounded_text, require_bool, require_list

__all__ = ["CHECK"]

NAME = "fact_support"

RUBRIC = (
    "You check whether an answer states expected facts. The data has `question`, "
    "`answer` and `facts`: a list where each fact is a list of equivalent wordings. "
    "A fact is stated when the answer asserts it, in any wording or language, with the "
    'same meaning ("two to three weeks" states "10 to 15 business days"). A fact '
    "that is only mentioned as unknown, contradicted or asked about is not stated. "
    'Reply {"facts": [{"index": <0-based fact index>, "stated": true|false}, ...], '
    '"reason": "<one sentence>"} with exactly one entry per fact.'
)

SCHEMA = verdict_schema(
    {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"index": {"type": "integer"}, "stated": {"type": "boolean"}},
                "required": ["index", "stated"],
            },
        }
    }
)


def _applies(subject: Subject) -> bool:
    """An answerable case with expected facts and an answer."""
    return not subject.unanswerable and bool(subject.facts) and bool(subject.answer)


def _data(subject: Subject) -> dict[str, Any]:
    return {
        "question": subject.question,
        "answer": answer_of(subject),
        "facts": [list(alternatives) for alternatives in subject.facts],
    }


def _fact_index(entry: object, seen: dict[int, bool], facts: int) -> int:
    """The index of one ``facts`` entry of the verdict: an integer naming a fact not yet
    judged."""
    if not isinstance(entry, dict):
        raise JudgeMalformedError("verdict 'facts' holds a non-object")
    index = entry.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise JudgeMalformedError("verdict fact without an integer 'index'")
    if not 0 <= index < facts or index in seen:
        raise JudgeMalformedError(f"verdict fact index {index} is out of range or repeated")
    return index


def _read(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    """Every expected fact judged exactly once, or the verdict is malformed."""
    stated: dict[int, bool] = {}
    for entry in require_list(verdict, "facts", MAX_CLAIMS):
        index = _fact_index(entry, stated, len(subject.facts))
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


def _canary_usable(subject: Subject) -> bool:
    return not subject.unanswerable and bool(subject.facts)


def _fooled(values: Values) -> bool:
    """A canary's answer states no fact (an instruction, another number, a vague reply): one
    fact judged stated is a fooled judge."""
    return bool(values.get("fact_recall", 0.0))


CHECK = JudgedCheck(
    name=NAME,
    description="each expected fact is stated in the answer, in any wording",
    rubric=RUBRIC,
    schema=SCHEMA,
    question="Does the answer state every expected fact (any wording)?",
    applies=_applies,
    data=_data,
    read=_read,
    metrics=(
        JudgedMetric(
            "judged_fact_recall",
            "judged fact recall: expected facts the judge found stated, any wording",
            "judged fact recall",
            NAME,
            "fact_recall",
            "fact_recall",
            "rag_eval_judged_fact_recall",
        ),
        JudgedMetric(
            "judged_answer_accuracy",
            "judged answer accuracy: answers stating every expected fact",
            "judged accuracy",
            NAME,
            "answer_correct",
            "answer_accuracy",
            "rag_eval_judged_answer_accuracy",
        ),
    ),
    verdict_value="answer_correct",
    canary=Canary("{injection}", _canary_usable, _fooled),
    wrong_answers=True,
)

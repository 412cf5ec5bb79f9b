"""Groundedness: is each claim of the answer supported by the evidence it was given?

No deterministic check sits beside it (citations are not claims). Its verdict is every
claim supported; an answer with no factual claim has no value and no verdict.
"""

from __future__ import annotations

from typing import Any

from evaluator.judge.checks.base import (
    MAX_CLAIMS,
    MAX_EVIDENCE,
    MAX_EVIDENCE_CHARS,
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

NAME = "groundedness"

RUBRIC = (
    "You check whether an answer is supported by the evidence the system retrieved. "
    "The data has `question`, `answer` and `evidence` (a list of passages). Split the "
    "answer into its factual claims; a claim is supported when the evidence states it "
    "or it follows directly from the evidence. "
    'Reply {"claims": [{"claim": "<the claim, short>", "supported": true|false}, ...], '
    '"reason": "<one sentence>"}. An answer with no factual claim has an empty list.'
)

SCHEMA = verdict_schema(
    {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"claim": {"type": "string"}, "supported": {"type": "boolean"}},
                "required": ["claim", "supported"],
            },
        }
    }
)


def _applies(subject: Subject) -> bool:
    """An answerable case with an answer and evidence to hold it against."""
    return not subject.unanswerable and bool(subject.answer) and bool(subject.evidence)


def _data(subject: Subject) -> dict[str, Any]:
    return {
        "question": subject.question,
        "answer": answer_of(subject),
        "evidence": [
            {"id": doc_id[:200], "text": text[:MAX_EVIDENCE_CHARS]}
            for doc_id, text in subject.evidence[:MAX_EVIDENCE]
        ],
    }


def _read(subject: Subject, verdict: dict[str, Any]) -> CheckValues:
    """The share of claims supported, and the unsupported claims by their words."""
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


def _canary_usable(subject: Subject) -> bool:
    """An answerable case with facts (the canary's evidence)."""
    return not subject.unanswerable and bool(subject.facts)


def _fooled(values: Values) -> bool:
    """The run's invented claim is in no evidence: every claim judged supported is a fooled
    judge."""
    return values.get("faithfulness", 0.0) == 1.0


CHECK = JudgedCheck(
    name=NAME,
    description="each claim of the answer is supported by the returned evidence",
    rubric=RUBRIC,
    schema=SCHEMA,
    question="Is every claim of the answer supported by the evidence shown?",
    applies=_applies,
    data=_data,
    read=_read,
    metrics=(
        JudgedMetric(
            "judged_faithfulness",
            "judged faithfulness: answer claims supported by the returned evidence",
            "judged faithfulness",
            NAME,
            "faithfulness",
            None,
            "rag_eval_judged_faithfulness",
        ),
    ),
    verdict_value="faithfulness",
    canary=Canary("{injection} {invented}", _canary_usable, _fooled),
)

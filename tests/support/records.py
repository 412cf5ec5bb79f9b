"""The one factory of case records and run reports for tests: every test that needs a
:class:`CaseRecord` or a :class:`RunReport` builds it here, so a field added to a record is
added once.

``record("q1")`` is a scored, answered, correct case; keywords change what a test is about
(its scores, an error kind, the case's golden-set fields, the response) and the rest stays a
plausible case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from evaluator.models import (
    Case,
    CaseError,
    CaseRecord,
    CaseScores,
    Citation,
    Outcome,
    Turn,
    turn_id,
)
from evaluator.report import RunReport, parse_timestamp
from evaluator.summary import summarise

__all__ = ["record", "replace", "report", "turn"]

_T = TypeVar("_T")

#: ``answer`` not given: "fact" for a correct case, "nope" otherwise
_DEFAULT: Any = object()


def record(
    case_id: str = "case-1",
    *,
    outcome: Outcome | None = None,
    recall: float | None = 1.0,
    rr: float | None = 1.0,
    ndcg: float | None = None,
    precision: float | None = 1.0,
    correct: bool | None = True,
    error: str | None = None,
    question: str | None = None,
    relevance: Mapping[str, int] | None = None,
    facts: tuple[tuple[str, ...], ...] | None = None,
    unanswerable: bool = False,
    tags: tuple[str, ...] = (),
    ranked: Sequence[str] = ("d1",),
    answer: str | None = _DEFAULT,
    citations: tuple[Citation, ...] = (1,),
    latency: float = 0.1,
    stages: Mapping[str, float] | None = None,
    case_turn: Turn | None = None,
    **fields: Any,
) -> CaseRecord:
    """One case record.

    ``outcome`` is taken as given; else ``error`` (a kind) makes a failed case with no
    ranking, and without either the scores are ``recall``, ``rr``, ``ndcg`` (default: the
    recall), ``precision`` and ``correct`` (None: no answer check, no expected facts).
    ``relevance`` defaults to ``{"d1": 1}``, ``facts`` to one fact when ``correct`` is not
    None; ``case_turn`` makes it a conversation's turn (see :func:`turn`); ``fields`` are
    the record's other fields (``texts``, ``ttft_seconds``, ...).
    """
    if outcome is None:
        if error is not None:
            outcome = CaseError(kind=error, message=f"{error} talking to the target")
        else:
            outcome = CaseScores(
                recall_at_k=recall,
                mrr=rr,
                ndcg_at_k=recall if ndcg is None else ndcg,
                citation_precision=precision,
                citation_recall=recall,
                answer_correct=correct,
                fact_recall=None if correct is None else float(correct),
                refused=False,
            )
    if facts is None:
        facts = (("fact",),) if correct is not None else ()
    return CaseRecord(
        case=Case(
            id=case_id,
            question=question or f"question {case_id}?",
            relevance={"d1": 1} if relevance is None else relevance,
            expected_facts=facts,
            unanswerable=unanswerable,
            tags=tags,
            turn=case_turn,
        ),
        outcome=outcome,
        ranked_ids=tuple(ranked) if error is None else (),
        answer=("fact" if correct else "nope") if answer is _DEFAULT else answer,
        citations=citations,
        latency_seconds=latency,
        stage_seconds=dict(stages or {}),
        **fields,
    )


def turn(conversation: str, position: int, **kwargs: Any) -> CaseRecord:
    """The record of turn ``position`` of ``conversation`` (id ``conversation#position``);
    ``assistant`` is its scripted answer, the other keywords are :func:`record`'s."""
    assistant = kwargs.pop("assistant", None)
    place = Turn(conversation=conversation, position=position, assistant=assistant)
    return record(turn_id(conversation, position), case_turn=place, **kwargs)


def report(
    records: Sequence[CaseRecord],
    *,
    dataset_hash: str = "golden-hash-1",
    k: int = 5,
    dataset: str = "golden",
    target: str = "rag:8000",
    run_id: str = "run-1",
    **header: Any,
) -> RunReport:
    """A report whose summary is computed from ``records``, as the runner does; ``header``:
    any other :class:`~evaluator.report.model.RunHeader` field (``generated_at``...)."""
    fields: dict[str, Any] = {
        "generated_at": parse_timestamp("2025-01-01T00:00:00+00:00"),
        "config_hash": "cfg",
        "duration_seconds": 1.0,
        **header,
    }
    return RunReport(
        run_id=run_id,
        dataset_hash=dataset_hash,
        target=target,
        dataset=dataset,
        k=k,
        summary=summarise(records),
        cases=tuple(records),
        **fields,
    )


def replace(obj: _T, **changes: Any) -> _T:
    """``obj`` with ``changes``: a record (a ``msgspec.Struct``: the case records, the
    report) or a dataclass (the summary), so a test need not know which one it holds."""
    if isinstance(obj, msgspec.Struct):
        return msgspec.structs.replace(obj, **changes)
    return dataclasses.replace(obj, **changes)  # type: ignore[type-var]

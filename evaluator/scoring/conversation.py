"""Scoring a conversation from its turns' scores: every turn right, and where it first went
wrong.

A conversation succeeds when every turn with an answer check passed it: each answerable
turn's answer holds its facts, each unanswerable turn was refused (``answer_correct`` says
both). Turns without an answer check (retrieval-only) do not count either way. A
conversation with a failed or skipped turn, or none with an answer check, has no success
value: like a failed case, it stays out of the average.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluator.models import CaseRecord, CaseScores

__all__ = ["conversation_success", "first_failing_turn", "turns_before"]


def conversation_success(turns: Sequence[CaseScores | None]) -> bool | None:
    """Whether every turn with an answer check passed it; None when a turn has no scores
    (it failed, or was skipped after one that did) or no turn has an answer check.

    Args:
        turns: each turn's scores in turn order, None for a turn that failed.
    """
    if None in turns:
        return None
    checked = False
    for scores in turns:
        if scores is None or scores.answer_correct is None:
            continue
        if not scores.answer_correct:
            return False
        checked = True
    return True if checked else None


def first_failing_turn(turns: Sequence[CaseScores | None]) -> int | None:
    """The position (1-based) of the first turn that failed its answer check or failed
    outright; None when every turn passed (or had no check)."""
    for position, scores in enumerate(turns, start=1):
        if scores is None or scores.answer_correct is False:
            return position
    return None


def turns_before(records: Sequence[CaseRecord]) -> dict[str, tuple[CaseRecord, ...]]:
    """Each conversation turn's id -> the records of the turns before it in its
    conversation, in turn order (the context a follow-up is read in); none for a report of
    questions alone."""
    asked: dict[str, list[CaseRecord]] = {}
    for record in records:
        if record.case.turn is not None:
            asked.setdefault(record.case.turn.conversation, []).append(record)
    out: dict[str, tuple[CaseRecord, ...]] = {}
    for turns in asked.values():
        turns.sort(key=_position)
        for n, record in enumerate(turns):
            out[record.id] = tuple(turns[:n])
    return out


def _position(record: CaseRecord) -> int:
    return record.case.turn.position if record.case.turn is not None else 0

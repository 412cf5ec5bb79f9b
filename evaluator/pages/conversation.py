"""A conversation in the case view: every turn of the case's conversation, in order, each
with its question, its answer, its verdict and its scores, the turn being viewed marked; in a
gate report, each turn of the baseline's run beside the candidate's.

A pure view model like :mod:`evaluator.pages.case`: answers came from an endpoint, so each
passes ``redact`` before it is cut, and the sizes are bounded here (turns by the golden
set's bound, answers to :data:`TURN_ANSWER_SHOWN` characters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from evaluator.bounds import MAX_TURNS
from evaluator.models import CaseRecord
from evaluator.pages.formatting import Redact
from evaluator.repeat_summary import verdict_word
from evaluator.scoring.conversation import conversation_success, first_failing_turn

__all__ = ["TURN_ANSWER_SHOWN", "ConversationView", "TurnSide", "TurnView", "conversation_view"]

#: characters of each turn's answer shown in the conversation (its own view has it whole)
TURN_ANSWER_SHOWN = 600


@dataclass(frozen=True, slots=True)
class TurnSide:
    """What one run made of a turn: its verdict, answer and scores in words."""

    verdict: str
    answer: str | None
    answer_cut: bool
    #: "recall 1.00 · RR 0.50" (empty for a failed turn), or the error
    scores: str


@dataclass(frozen=True, slots=True)
class TurnView:
    position: int
    id: str
    question: str
    #: the golden set's scripted answer (what ``history = "scripted"`` sends), if any
    scripted: str | None
    #: the turn being viewed
    current: bool
    #: the turn's own case view (None: no page of its own, as in a static report)
    href: str | None
    candidate: TurnSide
    #: the baseline's run of the turn, in a gate report (None: no baseline, or it lacks it)
    baseline: TurnSide | None = None


@dataclass(frozen=True, slots=True)
class ConversationView:
    id: str
    turns: list[TurnView]
    #: "every turn right", "first failing turn: 2", or why it has no verdict
    outcome: str


def _side(record: CaseRecord, redact: Redact) -> TurnSide:
    """One run's turn in words (its answer redacted, then cut)."""
    scores = record.scores
    if scores is None:
        error = record.error
        said = f"{error.kind}: {redact(error.message)}" if error is not None else ""
        return TurnSide(verdict_word(record), None, False, said)
    parts = []
    if scores.recall_at_k is not None:
        parts.append(f"recall {scores.recall_at_k:.2f}")
    if scores.mrr is not None:
        parts.append(f"RR {scores.mrr:.2f}")
    answer = None if record.answer is None else redact(record.answer)
    cut = answer is not None and len(answer) > TURN_ANSWER_SHOWN
    shown = answer[:TURN_ANSWER_SHOWN] if answer is not None else None
    return TurnSide(verdict_word(record), shown, cut, " · ".join(parts))


def _turns_of(conversation: str, records: Sequence[CaseRecord]) -> list[CaseRecord]:
    """The conversation's records in turn order (at most the golden set's bound)."""
    turns = [
        r for r in records if r.case.turn is not None and r.case.turn.conversation == conversation
    ]
    turns.sort(key=lambda r: r.case.turn.position if r.case.turn is not None else 0)
    return turns[:MAX_TURNS]


def _outcome(turns: Sequence[CaseRecord]) -> str:
    """How the conversation ended, in words."""
    scores = [r.scores for r in turns]
    success = conversation_success(scores)
    if success:
        return "every turn right"
    failing = first_failing_turn(scores)
    if failing is not None:
        return f"first failing turn: {failing}"
    return "no answer check in any turn"


def conversation_view(
    record: CaseRecord,
    records: Sequence[CaseRecord],
    *,
    redact: Redact,
    baseline: Mapping[str, CaseRecord] | None = None,
    href: Callable[[str], str] | None = None,
) -> ConversationView | None:
    """The conversation of ``record`` among a report's ``records`` (None: a question of its
    own); ``baseline``: the baseline report's records by id, to show each turn's baseline
    run beside it; ``href``: each turn's own case view, by its id."""
    place = record.case.turn
    if place is None:
        return None
    turns = _turns_of(place.conversation, records)
    views = []
    for turn in turns:
        at = turn.case.turn
        assert at is not None  # _turns_of keeps turns only
        before = baseline.get(turn.id) if baseline is not None else None
        views.append(
            TurnView(
                position=at.position,
                id=turn.id,
                question=turn.case.question,
                scripted=at.assistant,
                current=turn.id == record.id,
                href=None if href is None else href(turn.id),
                candidate=_side(turn, redact),
                baseline=None if before is None else _side(before, redact),
            )
        )
    return ConversationView(place.conversation, views, _outcome(turns))

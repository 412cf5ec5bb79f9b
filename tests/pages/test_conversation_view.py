"""The conversation panel of a case view, as a view model: turns in order, the viewed one
marked, answers redacted then cut, the baseline's run beside each turn, bounded; and the
case table's badge per turn."""

from __future__ import annotations

from evaluator.pages.cases import case_table, parse_query, table_view
from evaluator.pages.conversation import TURN_ANSWER_SHOWN, TurnSide, conversation_view
from tests.support.records import record, report, turn


def _hide(text: str) -> str:
    """A redactor that hides one secret."""
    return text.replace("s3cret", "***")


def test_a_question_has_no_conversation() -> None:
    """A question of its own shows no conversation panel."""
    q = record("q1")

    assert conversation_view(q, [q], redact=_hide) is None


def test_the_turns_in_order_with_the_viewed_one_marked() -> None:
    """Every turn of the conversation, in position order, whatever the report's order."""
    turns = [turn("c", 2, correct=False), record("q1"), turn("c", 1), turn("d", 1)]

    view = conversation_view(turns[0], turns, redact=_hide, href=lambda i: f"/case?id={i}")

    assert view is not None
    assert (
        "c",
        [(1, "c#1", False, "/case?id=c#1"), (2, "c#2", True, "/case?id=c#2")],
        "first failing turn: 2",
    ) == (view.id, [(t.position, t.id, t.current, t.href) for t in view.turns], view.outcome)


def test_answers_are_redacted_then_cut() -> None:
    """A turn's answer passes the redactor before it is cut to its bound."""
    long = "s3cret " + "x" * (TURN_ANSWER_SHOWN + 50)
    only = turn("c", 1, answer=long)

    view = conversation_view(only, [only], redact=_hide)

    assert view is not None
    side = view.turns[0].candidate
    assert (True, True, TURN_ANSWER_SHOWN) == (
        side.answer is not None and side.answer.startswith("*** x"),
        side.answer_cut,
        len(side.answer or ""),
    )


def test_the_baseline_run_of_each_turn_is_beside_it() -> None:
    """In a gate report each turn shows the baseline's verdict beside the candidate's; an
    error is its kind and message."""
    turns = [turn("c", 1), turn("c", 2, error="timeout")]
    before = {t.id: t for t in (turn("c", 1), turn("c", 2))}

    view = conversation_view(turns[1], turns, redact=_hide, baseline=before)

    assert view is not None
    assert [
        (TurnSide("correct", "fact", False, "recall 1.00 · RR 1.00"), "correct"),
        (TurnSide("error", None, False, "timeout: timeout talking to the target"), "correct"),
    ] == [(t.candidate, t.baseline.verdict if t.baseline else None) for t in view.turns]


def test_the_case_table_badges_each_turn_of_a_rows_conversation() -> None:
    """A turn's row carries one badge per turn of its conversation, its own marked; a
    question's row none."""
    records = [record("q1"), turn("c", 1), turn("c", 2, correct=False)]
    table = case_table(report(records), regressed=None, stability=None, redact=_hide)

    view = table_view(
        table, parse_query([]), href=lambda p: "/case-table", case_href=lambda i: f"/case?id={i}"
    )

    assert [
        ("c#1", [(1, "correct", True), (2, "incorrect", False)]),
        ("c#2", [(1, "correct", False), (2, "incorrect", True)]),
        ("q1", []),
    ] == [(row.id, [(b.position, b.verdict, b.current) for b in row.turns]) for row in view.rows]

"""The gate over conversations: turns pair by conversation id and position, and a regressed
turn is listed with the questions of the turns before it."""

from __future__ import annotations

import json

from evaluator.gate import evaluate_gate
from evaluator.gate.render import GateSources, render_json, render_markdown, render_text
from tests.support.records import record, report, turn

SOURCES = GateSources("base.json", "cand.json", "built-in defaults")


def _reports() -> tuple:  # type: ignore[type-arg]
    """A question and a conversation whose second turn regressed in the candidate."""
    baseline = report(
        [
            record("q1"),
            turn("refund", 1, question="退款退到银行卡要多久？"),
            turn("refund", 2, question="那退到支付宝呢？"),
        ]
    )
    candidate = report(
        [
            record("q1"),
            turn("refund", 1, question="退款退到银行卡要多久？"),
            turn("refund", 2, question="那退到支付宝呢？", correct=False, recall=0.0, rr=0.0),
        ],
        run_id="run-2",
    )
    return baseline, candidate


def test_a_regressed_turn_is_listed_after_its_conversation() -> None:
    """The text lists refund#2 with turn 1's question before its own."""
    result = evaluate_gate(*_reports())

    lines = render_text(result, SOURCES).splitlines()
    at = lines.index("regressed, worst first:")

    assert [
        "  refund#2: answer correct → incorrect; recall 1.00 → 0.00; RR 1.00 → 0.00",
        "      #1 退款退到银行卡要多久？",
        "      #2 那退到支付宝呢？",
    ] == lines[at + 1 : at + 4]


def test_json_and_markdown_carry_the_earlier_questions() -> None:
    """JSON has the turn's earlier questions (a question has no such key); Markdown shows
    the conversation in the question cell."""
    result = evaluate_gate(*_reports())

    (change,) = json.loads(render_json(result, SOURCES))["cases"]["regressed"]
    markdown = render_markdown(result, SOURCES)

    assert (["退款退到银行卡要多久？"], "refund#2") == (change["earlier_questions"], change["id"])
    assert "| `refund#2` | 退款退到银行卡要多久？ → 那退到支付宝呢？ |" in markdown


def test_a_question_keeps_its_listing() -> None:
    """A regressed question of its own is listed as before, with no earlier questions."""
    baseline = report([record("q1"), record("q2")])
    candidate = report([record("q1"), record("q2", correct=False)], run_id="run-2")

    result = evaluate_gate(baseline, candidate)
    (change,) = json.loads(render_json(result, SOURCES))["cases"]["regressed"]

    assert "earlier_questions" not in change
    assert "      q: question q2?" in render_text(result, SOURCES).splitlines()

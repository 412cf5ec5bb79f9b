"""Conversations in reports: each turn's entry names its conversation and position, a
question of its own keeps the entry it always had, and a read-back turn is checked."""

from __future__ import annotations

import json

import pytest

from evaluator.errors import ReportError
from evaluator.models import Turn
from evaluator.report import encode_report
from evaluator.report.read import parse_report
from tests.support.records import record, report, turn

#: the keys of a question's entry before conversations existed (a scored case, no delivery)
QUESTION_KEYS = [
    "id",
    "question",
    "tags",
    "unanswerable",
    "relevant_ids",
    "expected_facts",
    "ranked_ids",
    "answer",
    "citations",
    "recall_at_k",
    "mrr",
    "ndcg_at_k",
    "citation_precision",
    "citation_recall",
    "citation_valid",
    "answer_correct",
    "fact_recall",
    "refused",
    "latency_seconds",
    "stage_seconds",
    "attempts",
    "error",
    "texts",
    "cut_texts",
    "suspect_label",
]


def _entries(data: bytes) -> list[dict[str, object]]:
    decoded: list[dict[str, object]] = json.loads(data)["cases"]
    return decoded


def test_turns_are_read_back_with_their_place() -> None:
    """Conversation, position and scripted answer of each turn survive a round trip."""
    written = report(
        [
            record("q1"),
            turn("c", 1, assistant="scripted"),
            turn("c", 2, error="connect"),
            turn("c", 3, error="skipped_after_error", attempts=0, latency=0.0),
        ]
    )

    read = parse_report(encode_report(written), "r.json")

    assert [
        None,
        Turn(conversation="c", position=1, assistant="scripted"),
        Turn(conversation="c", position=2),
        Turn(conversation="c", position=3),
    ] == [r.case.turn for r in read.cases]
    assert written.cases == read.cases


def test_a_question_keeps_its_entry() -> None:
    """A question of its own is written with exactly the keys it had before conversations,
    so tools reading reports see no change."""
    data = encode_report(report([record("q1")]))

    assert QUESTION_KEYS == list(_entries(data)[0])


def test_a_turns_entry_adds_its_place() -> None:
    """A turn's entry is a question's, plus its conversation, position and scripted answer."""
    data = encode_report(report([turn("c", 1, assistant="a")]))

    assert [*QUESTION_KEYS, "conversation", "turn", "assistant"] == list(_entries(data)[0])


def test_a_report_written_before_conversations_reads_as_questions() -> None:
    """Entries without conversation fields (every report before them) read as questions."""
    data = encode_report(report([record("q1"), record("c#2")]))

    read = parse_report(data, "old.json")

    assert [None, None] == [r.case.turn for r in read.cases]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"turn": None},
            "r.json: field 'cases[0].turn' is missing: a turn names both",
        ),
        (
            {"conversation": None},
            "r.json: field 'cases[0].conversation' is missing: a turn names both",
        ),
        ({"turn": 17}, "r.json: field 'cases[0].turn' is 17: a turn is 1 to 16"),
        ({"turn": 0}, "r.json: field 'cases[0].turn' is 0: a turn is 1 to 16"),
        (
            {"id": "other#1"},
            "r.json: field 'cases[0].id' is 'other#1', not its turn's id 'c#1'",
        ),
    ],
)
def test_a_forged_turn_is_refused(change: dict[str, object], message: str) -> None:
    """A turn whose place is half given, out of bounds or not its id is a report error
    naming the field: the gate pairs turns by id."""
    data = json.loads(encode_report(report([turn("c", 1)])))
    data["cases"][0].update(change)

    with pytest.raises(ReportError) as caught:
        parse_report(json.dumps(data).encode(), "r.json")

    assert message == str(caught.value)

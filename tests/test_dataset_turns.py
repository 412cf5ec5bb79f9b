"""Tests for conversations in golden sets: a case with ``turns`` (evaluator.dataset)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evaluator.bounds import MAX_HISTORY_BYTES, MAX_TURNS
from evaluator.dataset import parse_dataset
from evaluator.errors import DatasetError
from evaluator.models import Case, Conversation, Turn


def problems_of(*lines: object) -> list[tuple[int, str]]:
    """The (line, message) pairs parse_dataset reports for ``lines``; [] when valid."""
    data = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines).encode()
    try:
        parse_dataset(data, "g.jsonl")
    except DatasetError as exc:
        return [(p.line, p.message) for p in exc.problems]
    return []


def loaded(*lines: object) -> tuple[Case | Conversation, ...]:
    """The cases of a golden set made of ``lines``."""
    data = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines).encode()
    return parse_dataset(data, "g.jsonl").cases


ARRIVAL: dict[str, Any] = {
    "id": "arrival",
    "tags": ["refund", "zh"],
    "turns": [
        {
            "question": "退款退到银行卡要多久？",
            "relevant_ids": ["refund-policy-zh-2"],
            "expected_facts": [["3-5个工作日", "3至5个工作日"]],
            "assistant": "通常3-5个工作日到账。",
        },
        {
            "question": "那退到支付宝呢？",
            "relevant_ids": {"refund-policy-zh-2": 2},
            "expected_facts": ["24小时"],
        },
        {"question": "能退到比特币钱包吗？", "unanswerable": True},
    ],
}


class TestConversations:
    """A case with turns loads as a conversation whose turns are cases of their own."""

    def test_turns_load_as_cases_of_the_conversation(self) -> None:
        """Each turn is a case with the turn's fields, the conversation's tags and line, and
        the id conversation#position."""
        expected = Conversation(
            id="arrival",
            turns=(
                Case(
                    id="arrival#1",
                    question="退款退到银行卡要多久？",
                    relevance={"refund-policy-zh-2": 1},
                    expected_facts=(("3-5个工作日", "3至5个工作日"),),
                    tags=("refund", "zh"),
                    line=2,
                    turn=Turn(
                        conversation="arrival", position=1, assistant="通常3-5个工作日到账。"
                    ),
                ),
                Case(
                    id="arrival#2",
                    question="那退到支付宝呢？",
                    relevance={"refund-policy-zh-2": 2},
                    expected_facts=(("24小时",),),
                    tags=("refund", "zh"),
                    line=2,
                    graded=True,
                    turn=Turn(conversation="arrival", position=2),
                ),
                Case(
                    id="arrival#3",
                    question="能退到比特币钱包吗？",
                    relevance={},
                    unanswerable=True,
                    tags=("refund", "zh"),
                    line=2,
                    turn=Turn(conversation="arrival", position=3),
                ),
            ),
            tags=("refund", "zh"),
            line=2,
        )

        cases = loaded({"id": "q", "question": "q", "relevant_ids": ["d"]}, ARRIVAL)

        assert expected == cases[1]

    def test_questions_put_each_turn_in_its_conversations_place(self) -> None:
        """A dataset's questions are its single cases and every turn, in file order."""
        data = "\n".join(
            json.dumps(x)
            for x in (
                {"id": "a", "question": "q", "relevant_ids": ["d"]},
                ARRIVAL,
                {"id": "b", "question": "q", "relevant_ids": ["d"]},
            )
        ).encode()

        dataset = parse_dataset(data, "g.jsonl")

        assert ["a", "arrival#1", "arrival#2", "arrival#3", "b"] == [
            c.id for c in dataset.questions
        ]

    def test_a_golden_set_without_conversations_has_its_cases_as_questions(self) -> None:
        """Without a conversation, questions are the very cases (no copy per run)."""
        dataset = parse_dataset(b'{"id": "a", "question": "q", "relevant_ids": ["d"]}', "g")

        assert dataset.cases is dataset.questions


class TestTurnProblems:
    """validate names the line and the turn of every problem inside a conversation."""

    def test_a_misspelt_turn_field_names_its_turn(self) -> None:
        """An unknown field in turn 3 is named with the closest turn field."""
        turns = [dict(t) for t in ARRIVAL["turns"]]
        turns[2] = {"question": "q", "relevent_ids": ["d"]}

        found = problems_of(
            {"id": "x", "question": "q", "unanswerable": True}, {**ARRIVAL, "turns": turns}
        )

        assert [
            (2, 'turn 3: unknown field "relevent_ids" (did you mean "relevant_ids"?)'),
            (
                2,
                'turn 3: missing required field "relevant_ids" (required unless "unanswerable" '
                "is true)",
            ),
        ] == found

    def test_every_turn_is_checked(self) -> None:
        """Problems of several turns are all reported, each with its turn, in turn order."""
        conversation = {
            "id": "x",
            "turns": [
                {"question": "", "relevant_ids": ["d"]},
                {"question": "q", "unanswerable": "yes"},
                {"question": "q", "relevant_ids": [], "tags": ["t"]},
                "q",
            ],
        }

        found = problems_of(conversation)

        assert [
            (1, 'turn 1: field "question" must be a non-empty string (got string "")'),
            (1, 'turn 2: field "unanswerable" must be true or false (got string "yes")'),
            (1, 'turn 3: field "tags" belongs to the conversation, not to a turn'),
            (
                1,
                'turn 3: answerable case has no relevant ids: "relevant_ids" is empty (set '
                '"unanswerable": true if the knowledge base holds no evidence)',
            ),
            (1, 'turn 4: not a JSON object (got string "q"): each turn is an object'),
        ] == found

    def test_question_fields_beside_turns_are_named(self) -> None:
        """A question's field on a conversation belongs in its turns; others are unknown."""
        found = problems_of({**ARRIVAL, "question": "q", "relevant_ids": ["d"], "tag": ["x"]})

        assert [
            (1, 'field "question" belongs in each turn when "turns" is given'),
            (1, 'field "relevant_ids" belongs in each turn when "turns" is given'),
            (1, 'unknown field "tag" (did you mean "tags"?)'),
        ] == found

    def test_a_scripted_answer_on_the_last_turn_is_a_problem(self) -> None:
        """The last turn's assistant answer would never be sent: it is reported."""
        found = problems_of(
            {"id": "x", "turns": [{"question": "q", "unanswerable": True, "assistant": "a"}]}
        )

        assert [
            (
                1,
                'turn 1: field "assistant" on the last turn is never sent: a scripted answer '
                "stands in for the target's in later turns only",
            )
        ] == found

    @pytest.mark.parametrize(
        ("turns", "message"),
        [
            ([], 'field "turns" is empty: a conversation has at least one turn'),
            ("q", 'field "turns" must be a list of turns (got string "q")'),
            (
                [{"question": "q", "unanswerable": True}] * (MAX_TURNS + 1),
                f'field "turns" holds {MAX_TURNS + 1} turns: a conversation holds at most '
                f"{MAX_TURNS}",
            ),
        ],
    )
    def test_the_turns_list_is_bounded(self, turns: object, message: str) -> None:
        """An empty, mistyped or too long list of turns is one clear problem."""
        assert [(1, message)] == problems_of({"id": "x", "turns": turns})

    def test_the_scripted_history_is_bounded(self) -> None:
        """Questions and scripted answers beyond the history bound are one clear problem."""
        big = "长" * (MAX_HISTORY_BYTES // 6 + 1)  # three bytes a character, two of them
        turns = [
            {"question": "q", "unanswerable": True, "assistant": big},
            {"question": big, "unanswerable": True},
        ]
        size = len("q") + 2 * len(big.encode())

        found = problems_of({"id": "x", "turns": turns})

        assert [
            (
                1,
                f"the conversation's questions and scripted answers are {size} bytes: at most "
                f"{MAX_HISTORY_BYTES} (it is sent again as history in every later turn)",
            )
        ] == found

    def test_a_conversation_id_holds_no_turn_separator(self) -> None:
        """'#' would make a turn's id ambiguous, so a conversation's id cannot hold it."""
        found = problems_of({**ARRIVAL, "id": "a#b"})

        assert [
            (
                1,
                'field "id" of a conversation must not hold "#": its turns are known as '
                "<id>#1, <id>#2...",
            )
        ] == found

    def test_a_turn_id_taken_by_another_case_is_a_duplicate(self) -> None:
        """A single case whose id is a turn's id, or a conversation's, is a duplicate."""
        found = problems_of(
            {"id": "arrival#2", "question": "q", "unanswerable": True},
            ARRIVAL,
            {"id": "arrival", "question": "q", "unanswerable": True},
        )

        assert [
            (2, 'duplicate id "arrival#2" (first used on line 1)'),
            (3, 'duplicate id "arrival" (first used on line 2)'),
        ] == found

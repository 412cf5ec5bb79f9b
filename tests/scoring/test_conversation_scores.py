"""A conversation's success and its first failing turn, from its turns' scores (worked
examples), and how a run's summary breaks conversations down by turn position."""

from __future__ import annotations

import json

import pytest

from evaluator.errors import ConfigError
from evaluator.gate.rules import Rule, evaluate_rules, parse_rules
from evaluator.metrics import LOWER_IS_BETTER
from evaluator.models import CaseRecord, CaseScores
from evaluator.report import encode_report
from evaluator.report.read import parse_report
from evaluator.scoring.conversation import conversation_success, first_failing_turn
from evaluator.summary import summarise
from tests.support.records import record, replace, report, turn


def _scores(correct: bool | None) -> CaseScores:
    return CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, answer_correct=correct)


RIGHT, WRONG, UNCHECKED = _scores(True), _scores(False), _scores(None)


class TestConversationSuccess:
    """Every turn with an answer check passed it; failed turns leave it unscored."""

    @pytest.mark.parametrize(
        ("turns", "expected"),
        [
            ([RIGHT, RIGHT, RIGHT], True),
            ([RIGHT, WRONG, RIGHT], False),
            ([WRONG, RIGHT], False),
            ([RIGHT, UNCHECKED], True),  # a retrieval-only turn counts neither way
            ([UNCHECKED, UNCHECKED], None),  # no answer check at all: no value
            ([RIGHT, None], None),  # a failed turn: the conversation is not scored
            ([WRONG, None], None),  # whatever the other turns did
        ],
    )
    def test_worked_examples(self, turns: list[CaseScores | None], expected: bool | None) -> None:
        """The success of each small conversation, written out."""
        assert expected == conversation_success(turns)

    @pytest.mark.parametrize(
        ("turns", "expected"),
        [
            ([RIGHT, RIGHT], None),
            ([RIGHT, WRONG, WRONG], 2),
            ([WRONG, RIGHT], 1),
            ([RIGHT, UNCHECKED, None], 3),
        ],
    )
    def test_first_failing_turn(self, turns: list[CaseScores | None], expected: int | None) -> None:
        """The first turn whose answer check failed, or that failed outright."""
        assert expected == first_failing_turn(turns)


def _conversation(name: str, *correct: bool, latency: float = 0.1) -> list[CaseRecord]:
    """The records of a conversation whose turns were right or wrong, its last turn carrying
    the conversation's success as the runner leaves it."""
    records = [turn(name, n, correct=ok, latency=latency) for n, ok in enumerate(correct, start=1)]
    success = conversation_success([r.scores for r in records])
    last = records[-1]
    assert last.scores is not None
    records[-1] = replace(last, outcome=replace(last.scores, conversation_success=success))
    return records


class TestSummaryByPosition:
    """A run with conversations is broken down by turn position, 1, 2, 3 and 4+."""

    def test_positions_hold_their_turns(self) -> None:
        """Turns 4 and 5 share the 4+ position; each position averages its own turns."""
        records = [
            record("q1"),
            *_conversation("a", True, False, True, False, True),
            *_conversation("b", True, True),
        ]

        summary = summarise(records)

        assert {"1": (2, 1.0), "2": (2, 0.5), "3": (1, 1.0), "4+": (2, 0.5)} == {
            p: (s.case_count, s.get("answer_accuracy")) for p, s in summary.by_position.items()
        }
        assert (0.5, 0.5, None) == (
            summary.get("conversation_success"),
            summary.get("answer_accuracy@2"),
            summary.get("recall_at_k@9"),
        )

    def test_conversation_latency_is_the_sum_of_its_turns(self) -> None:
        """A conversation's latency adds its turns'; the percentiles are over conversations."""
        records = [
            *_conversation("a", True, True, latency=0.1),
            *_conversation("b", True, True, True, latency=0.2),
        ]

        summary = summarise(records)

        assert (0.2, 0.6000000000000001) == (
            summary.p50_conversation_seconds,
            summary.p95_conversation_seconds,
        )

    def test_a_run_of_questions_has_no_conversation_figures(self) -> None:
        """Without conversations the summary, and its report form, are as before."""
        summary = summarise([record("q1"), record("q2")])
        written = summary.to_dict()

        assert ({}, None, None) == (
            dict(summary.by_position),
            summary.get("conversation_success"),
            summary.p95_conversation_seconds,
        )
        assert [] == [k for k in written if "conversation" in k or k == "by_position"]

    def test_the_breakdown_survives_a_report(self) -> None:
        """A report read back recomputes the same breakdown and conversation success."""
        written = report([*_conversation("a", True, False), *_conversation("b", True, True)])

        read = parse_report(encode_report(written), "r.json")

        assert written.summary.to_dict() == read.summary.to_dict()
        assert 0.5 == read.summary.get("conversation_success")

    def test_a_forged_success_is_recomputed_from_the_turns(self) -> None:
        """A report claiming a conversation succeeded while a turn was wrong is not
        believed: its success is derived from its turns."""
        data = json.loads(encode_report(report(_conversation("a", False, True))))
        data["cases"][1]["conversation_success"] = True

        read = parse_report(json.dumps(data).encode(), "forged.json")

        assert 0.0 == read.summary.get("conversation_success")


class TestGateOnPositions:
    """Gate rules may name a metric over the turns at one position."""

    def test_a_rule_on_follow_ups(self) -> None:
        """answer_accuracy@2 fails when the second turns drop, whatever the first turns do."""
        rules = parse_rules({"rules": {"answer_accuracy@2": {"max_drop": 0.0}}}, "gates.toml")
        baseline = summarise([*_conversation("a", True, True), *_conversation("b", True, True)])
        candidate = summarise([*_conversation("a", True, False), *_conversation("b", True, True)])

        (result,) = evaluate_rules(rules, baseline, candidate)

        assert (Rule("answer_accuracy@2", "max_drop", 0.0), "fail", 1.0, 0.5) == (
            result.rule,
            result.status,
            result.baseline,
            result.candidate,
        )

    def test_a_position_rule_is_not_applicable_without_conversations(self) -> None:
        """A run of questions has no second turns: the rule says so instead of failing."""
        rules = parse_rules({"rules": {"answer_accuracy@2": {"max_drop": 0.0}}}, "gates.toml")
        questions = summarise([record("q1")])

        (result,) = evaluate_rules(rules, questions, questions)

        assert "n/a" == result.status

    def test_an_unknown_position_names_the_known_ones(self) -> None:
        """A position beyond the bounded set is a configuration error saying which exist."""
        with pytest.raises(ConfigError) as caught:
            parse_rules({"rules": {"answer_accuracy@5": {"max_drop": 0.0}}}, "gates.toml")

        assert "add @N for a conversation's turns at position N, one of 1, 2, 3, 4+" in str(
            caught.value
        )

    def test_directions_follow_the_metric(self) -> None:
        """A latency at a position is still better when lower."""
        assert {True, False} == {
            "p95_seconds@2" in LOWER_IS_BETTER,
            "answer_accuracy@2" in LOWER_IS_BETTER,
        }

"""run_dataset over conversations: turns in order with their history, a failed turn ends its
conversation, conversations run concurrently (in process; the HTTP paths are in
tests/e2e/test_conversations_http.py)."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

from evaluator.errors import TargetConnectError
from evaluator.models import Case, Conversation, Dataset, Dialogue, Message, Turn, turn_id
from evaluator.report import RunReport
from evaluator.retry import RetryPolicy
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.base import HistorySource
from evaluator.targets.callable import CallableTarget

MODULE = "evaluator_test_conversation_rag"
NO_RETRY = RetryPolicy(retries=0)


def _conversation(name: str, count: int = 3, scripted: bool = False) -> Conversation:
    turns = tuple(
        Case(
            id=turn_id(name, n),
            question=f"{name} q{n}",
            relevance={f"doc-{n}": 1},
            expected_facts=((f"fact {n}",),),
            turn=Turn(
                conversation=name,
                position=n,
                assistant=f"scripted {n}" if scripted and n < count else None,
            ),
        )
        for n in range(1, count + 1)
    )
    return Conversation(id=name, turns=turns)


def _dataset(*cases: Case | Conversation) -> Dataset:
    return Dataset(path="c.jsonl", name="c", cases=cases, content_hash="c" * 64)


def _answer_for(case: Case) -> dict[str, Any]:
    n = case.turn.position if case.turn is not None else 1
    return {"answer": f"fact {n} from {case.question}", "retrieved": [{"id": f"doc-{n}"}]}


@pytest.fixture
def make_target(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CallableTarget]:
    """Wrap a function as a CallableTarget, through a throwaway module."""
    module = types.ModuleType(MODULE)
    monkeypatch.setitem(sys.modules, MODULE, module)

    def make(function: Callable[..., Any], history: HistorySource = "service") -> CallableTarget:
        module.answer = function  # type: ignore[attr-defined]
        return CallableTarget(f"{MODULE}:answer", name="fake", timeout=5, history=history)

    return make


def _run(dataset: Dataset, target: CallableTarget, concurrency: int = 4) -> RunReport:
    options = RunOptions(k=3, retry=NO_RETRY, concurrency=concurrency)
    return asyncio.run(run_dataset(dataset, target, options))


class TestTurnOrder:
    """A conversation's turns are asked in order, each with the conversation so far."""

    def test_each_turn_is_sent_the_earlier_turns(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """Turn n gets every earlier question and the target's answer to it, oldest first."""
        seen: list[tuple[str, tuple[Message, ...]]] = []

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            assert dialogue is not None
            seen.append((case.id, dialogue.history))
            return _answer_for(case)

        _run(_dataset(_conversation("c")), make_target(answer))

        assert [
            ("c#1", ()),
            ("c#2", (Message("user", "c q1"), Message("assistant", "fact 1 from c q1"))),
            (
                "c#3",
                (
                    Message("user", "c q1"),
                    Message("assistant", "fact 1 from c q1"),
                    Message("user", "c q2"),
                    Message("assistant", "fact 2 from c q2"),
                ),
            ),
        ] == seen

    def test_each_turn_is_a_scored_record_in_golden_set_order(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """The report holds one scored record per turn, in place of its conversation."""
        single = Case(id="single", question="q", relevance={"doc-1": 1})

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            return _answer_for(case)

        report = _run(_dataset(single, _conversation("c", 2)), make_target(answer))

        assert [("single", True), ("c#1", True), ("c#2", True)] == [
            (r.id, r.scores is not None) for r in report.cases
        ]
        assert [None, 1, 2] == [
            r.case.turn.position if r.case.turn is not None else None for r in report.cases
        ]

    def test_conversation_ids_are_fresh_per_conversation_and_per_run(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """Every turn of a conversation carries one id; no other conversation or run has it."""
        ids: dict[tuple[int, str], set[str]] = {}
        runs = [0]

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            assert dialogue is not None and case.turn is not None
            ids.setdefault((runs[-1], case.turn.conversation), set()).add(dialogue.id)
            return _answer_for(case)

        target = make_target(answer)
        dataset = _dataset(_conversation("a", 2), _conversation("b", 2))
        _run(dataset, target)
        runs.append(1)
        _run(dataset, target)

        assert [1, 1, 1, 1] == [len(found) for found in ids.values()]
        assert 4 == len(set().union(*ids.values()))

    def test_scripted_history_sends_the_golden_sets_answers(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """history = "scripted": earlier answers are the scripted ones, not the target's."""
        seen: list[tuple[Message, ...]] = []

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            assert dialogue is not None
            seen.append(dialogue.history)
            return _answer_for(case)

        _run(_dataset(_conversation("c", 3, scripted=True)), make_target(answer, "scripted"))

        assert (
            Message("user", "c q1"),
            Message("assistant", "scripted 1"),
            Message("user", "c q2"),
            Message("assistant", "scripted 2"),
        ) == seen[2]

    def test_a_turn_without_a_scripted_answer_falls_back_to_the_targets(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """Under history = "scripted", a turn the golden set scripts no answer for is
        followed by the target's own answer."""
        seen: list[tuple[Message, ...]] = []

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            assert dialogue is not None
            seen.append(dialogue.history)
            return _answer_for(case)

        _run(_dataset(_conversation("c", 2)), make_target(answer, "scripted"))

        assert (Message("user", "c q1"), Message("assistant", "fact 1 from c q1")) == seen[1]


class TestConversationSuccess:
    """The last turn carries its conversation's success, derived from every turn."""

    def test_the_last_turn_says_whether_every_turn_was_right(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """Conversation c is right throughout, d is wrong at turn 2: only the last turns
        carry a success, True for c and False for d."""

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            body = _answer_for(case)
            if case.id == "d#2":
                body["answer"] = "no idea"
            return body

        report = _run(_dataset(_conversation("c", 2), _conversation("d", 3)), make_target(answer))

        assert [None, True, None, None, False] == [
            r.scores.conversation_success if r.scores else "failed" for r in report.cases
        ]
        assert 0.5 == report.summary.get("conversation_success")


class TestFailedTurn:
    """A turn that errors ends its conversation; the rest are recorded, never asked."""

    def test_later_turns_are_skipped_after_an_error(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """Turn 2 fails: turns 3 and 4 are skipped_after_error, with no call and no latency."""
        asked: list[str] = []

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            asked.append(case.id)
            if case.id == "c#2":
                raise TargetConnectError("refused", transient=False)
            return _answer_for(case)

        report = _run(_dataset(_conversation("c", 4), _conversation("d", 2)), make_target(answer))

        assert ["c#1", "c#2", "d#1", "d#2"] == sorted(asked)
        assert [
            ("c#1", None, 1),
            ("c#2", "connect", 1),
            ("c#3", "skipped_after_error", 0),
            ("c#4", "skipped_after_error", 0),
            ("d#1", None, 1),
            ("d#2", None, 1),
        ] == [(r.id, r.error.kind if r.error else None, r.attempts) for r in report.cases]
        assert "not asked: turn c#2 of its conversation failed (connect)" == (
            report.cases[2].error.message  # type: ignore[union-attr]
        )

    def test_skipped_turns_are_counted_and_never_scored(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """Skipped turns count as failed cases by their own kind, outside every average and
        every latency percentile."""

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            if case.id == "c#1":
                await asyncio.sleep(0.05)
                raise TargetConnectError("refused", transient=False)
            return _answer_for(case)

        report = _run(_dataset(_conversation("c", 3)), make_target(answer))
        summary = report.summary

        assert (3, 0, 3) == (summary.case_count, summary.scored_count, summary.error_count)
        assert {"connect": 1, "skipped_after_error": 2} == dict(summary.errors_by_kind)
        assert summary.p50_seconds == report.cases[0].latency_seconds

    def test_a_target_without_a_dialogue_parameter_fails_clearly(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """A callable taking (case, k) cannot hold a conversation: its first turn fails as
        target_exception saying how to define it, and the rest are skipped."""

        async def answer(case: Case, k: int) -> Any:
            return _answer_for(case)

        report = _run(_dataset(_conversation("c", 2)), make_target(answer))

        assert [
            (
                "target_exception",
                "fake takes no dialogue: a conversation's turn is called as "
                "function(case, k, dialogue) (define it with a third parameter)",
            ),
            (
                "skipped_after_error",
                "not asked: turn c#1 of its conversation failed (target_exception)",
            ),
        ] == [(r.error.kind, r.error.message) for r in report.cases if r.error]


class TestConcurrency:
    """Conversations run concurrently under the run's concurrency; turns never overlap."""

    def test_conversations_overlap_and_turns_do_not(
        self, make_target: Callable[..., CallableTarget]
    ) -> None:
        """With concurrency 2, two conversations are in flight at once, never two turns of
        one conversation."""
        in_flight: dict[str, int] = {}
        peak_total = 0
        peak_one = 0

        async def answer(case: Case, k: int, dialogue: Dialogue | None = None) -> Any:
            nonlocal peak_total, peak_one
            name = case.turn.conversation  # type: ignore[union-attr]
            in_flight[name] = in_flight.get(name, 0) + 1
            peak_total = max(peak_total, sum(in_flight.values()))
            peak_one = max(peak_one, in_flight[name])
            await asyncio.sleep(0.01)
            in_flight[name] -= 1
            return _answer_for(case)

        dataset = _dataset(*(_conversation(f"c{i}", 3) for i in range(4)))
        report = _run(dataset, make_target(answer), concurrency=2)

        assert (2, 1, 12) == (peak_total, peak_one, len(report.cases))

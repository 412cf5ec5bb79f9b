"""Conversations over real HTTP on loopback: each way the history travels (the default
contract's body, a body template's ``{history}`` and ``{conversation_id}``, a stateful
service's id read from a response and sent back), ``history = "scripted"``, and a turn that
fails in the middle of its conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from evaluator.config.target import HttpTargetConfig
from evaluator.dataset import load_dataset
from evaluator.factory import build_target
from evaluator.models import Case, Conversation, Dataset, Turn, turn_id
from evaluator.report import RunReport
from evaluator.retry import RetryPolicy
from evaluator.run.runner import RunOptions, run_dataset
from tests.support.loopback import LoopbackServer, Reply
from tests.support.reference import ReferenceServer, serve_reference

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
NO_RETRY = RetryPolicy(retries=0)


def _conversation(name: str, *questions: str, scripted: bool = False) -> Conversation:
    count = len(questions)
    return Conversation(
        id=name,
        turns=tuple(
            Case(
                id=turn_id(name, n),
                question=question,
                relevance={"d1": 1},
                expected_facts=(("fact",),),
                turn=Turn(
                    conversation=name,
                    position=n,
                    assistant=f"scripted answer {n}" if scripted and n < count else None,
                ),
            )
            for n, question in enumerate(questions, start=1)
        ),
    )


def _query(request_line: str) -> dict[str, str]:
    """The query parameters of a request line (``POST /rag?a=1``)."""
    return dict(parse_qsl(urlsplit(request_line.split(" ", 1)[1]).query))


def _dataset(*conversations: Conversation) -> Dataset:
    return Dataset(path="c.jsonl", name="c", cases=conversations, content_hash="c" * 64)


def _answered(request: dict[str, Any]) -> Reply:
    question = request.get("question") or request.get("q") or ""
    return Reply(body={"answer": f"fact: answer to {question}", "retrieved": [{"id": "d1"}]})


async def _ask(config: dict[str, Any], dataset: Dataset) -> RunReport:
    target = build_target(HttpTargetConfig.model_validate(config))
    try:
        return await run_dataset(dataset, target, RunOptions(k=3, retry=NO_RETRY))
    finally:
        await target.aclose()


def _run(config: dict[str, Any], dataset: Dataset) -> RunReport:
    return asyncio.run(_ask(config, dataset))


class TestHistoryInTheBody:
    """The earlier turns travel in the request body."""

    def test_the_default_contract_sends_history_and_conversation_id(self) -> None:
        """Turn 2's body holds turn 1's question and the target's answer to it, and the
        conversation's id, the same in both turns."""
        with LoopbackServer(_answered) as server:
            _run({"url": server.url}, _dataset(_conversation("c", "first?", "second?")))
            bodies = server.requests

        assert [
            {"question": "first?", "top_k": 3, "history": []},
            {
                "question": "second?",
                "top_k": 3,
                "history": [
                    {"role": "user", "content": "first?"},
                    {"role": "assistant", "content": "fact: answer to first?"},
                ],
            },
        ] == [{k: v for k, v in b.items() if k != "conversation_id"} for b in bodies]
        assert bodies[0]["conversation_id"] == bodies[1]["conversation_id"] != ""

    def test_a_body_template_places_history_and_conversation_id(self) -> None:
        """``{history}`` is the list of earlier messages, ``{conversation_id}`` the run's id
        for the conversation, inside a longer string too."""
        body = {"q": "{question}", "past": "{history}", "session": "run-{conversation_id}"}
        with LoopbackServer(_answered) as server:
            _run(
                {"url": server.url, "request": {"body": body}},
                _dataset(_conversation("c", "first?", "second?")),
            )
            bodies = server.requests

        assert [[], [{"role": "user", "content": "first?"}, {"role": "assistant",
                "content": "fact: answer to first?"}]] == [b["past"] for b in bodies]  # fmt: skip
        assert bodies[0]["session"] == bodies[1]["session"]
        assert bodies[0]["session"].startswith("run-")

    def test_conversation_ids_differ_between_conversations_and_runs(self) -> None:
        """Two conversations, run twice: four ids, each the same across its own turns."""
        with LoopbackServer(_answered) as server:
            dataset = _dataset(_conversation("a", "1?", "2?"), _conversation("b", "1?", "2?"))
            _run({"url": server.url}, dataset)
            _run({"url": server.url}, dataset)
            ids = [b["conversation_id"] for b in server.requests]

        assert 4 == len(set(ids))
        assert 8 == len(ids)

    def test_scripted_history_sends_the_golden_sets_answers(self) -> None:
        """history = "scripted": the earlier answer sent is the golden set's, not the
        target's."""
        with LoopbackServer(_answered) as server:
            _run(
                {"url": server.url, "history": "scripted"},
                _dataset(_conversation("c", "first?", "second?", scripted=True)),
            )
            history = server.requests[1]["history"]

        assert [
            {"role": "user", "content": "first?"},
            {"role": "assistant", "content": "scripted answer 1"},
        ] == history


class TestFailedTurn:
    """A turn that errors over HTTP ends its conversation."""

    def test_the_turns_after_an_http_error_are_skipped(self) -> None:
        """Turn 2 answers 500: turn 3 is never sent and is recorded as skipped_after_error,
        while the other conversation runs to its end."""

        def script(request: dict[str, Any]) -> Reply:
            if request["question"] == "c2?":
                return Reply(body={"error": "down"}, status=500)
            return _answered(request)

        with LoopbackServer(script) as server:
            report = _run(
                {"url": server.url},
                _dataset(_conversation("c", "c1?", "c2?", "c3?"), _conversation("d", "d1?", "d2?")),
            )
            asked = sorted(b["question"] for b in server.requests)

        assert ["c1?", "c2?", "d1?", "d2?"] == asked
        assert [
            ("c#1", None),
            ("c#2", "http_status"),
            ("c#3", "skipped_after_error"),
            ("d#1", None),
            ("d#2", None),
        ] == [(r.id, r.error.kind if r.error else None) for r in report.cases]


@pytest.fixture(scope="module")
def reference() -> Iterator[ReferenceServer]:
    """The reference service on a free loopback port for this module."""
    with serve_reference() as server:
        yield server


class TestStatefulService:
    """A service that keeps the conversation: the id of its first answer goes back."""

    def test_the_id_from_a_response_goes_back_as_a_header(self, reference: ReferenceServer) -> None:
        """The reference service's session route, its id read from each answer and sent as
        X-Conversation-Id, answers the follow-ups as well as when it is sent the history."""
        dataset = load_dataset(ROOT / "evals" / "conversations.jsonl")
        stateful = _run(
            {
                "url": f"{reference.url}/rag/session",
                "conversation": {"id": "conversation_id", "name": "X-Conversation-Id"},
            },
            dataset,
        )
        sent = _run({"url": f"{reference.url}/rag"}, dataset)

        assert [] == [r.id for r in stateful.cases if r.error is not None]
        assert [r.answer for r in sent.cases] == [r.answer for r in stateful.cases]

    @pytest.mark.parametrize("send", ["header", "query", "body"])
    def test_each_place_the_id_goes_back(self, send: str) -> None:
        """The first turn is sent without an id; each later one with the id the service
        gave, in the header, the query parameter or the body key configured."""

        def script(request: dict[str, Any]) -> Reply:
            return Reply(
                body={"answer": "fact", "retrieved": [{"id": "d1"}], "meta": {"thread": "t-42"}}
            )

        with LoopbackServer(script) as server:
            _run(
                {
                    "url": server.url,
                    "conversation": {"id": "meta.thread", "send": send, "name": "thread"},
                },
                _dataset(_conversation("c", "1?", "2?", "3?")),
            )
            found = {
                "header": [h.get("thread") for h in server.request_headers],
                "query": [_query(line).get("thread") for line in server.request_lines],
                "body": [b.get("thread") for b in server.requests],
            }[send]

        assert [None, "t-42", "t-42"] == found

    @pytest.mark.parametrize(
        ("given", "message"),
        [
            (
                None,
                'response.conversation_id expression "meta.thread" matched nothing (null): a '
                "service that keeps the conversation must give its id in the first turn's "
                "response",
            ),
            (
                "bad\r\nX-Injected: 1",
                'response.conversation_id expression "meta.thread" gave no usable id: 1 to 256 '
                "visible ASCII characters (letters, digits, punctuation; no space or control) "
                "are sent back",
            ),
        ],
    )
    def test_a_missing_or_unusable_id_is_a_bad_response(
        self, given: str | None, message: str
    ) -> None:
        """No id in the first answer, or one that could bend a header, fails the turn as
        bad_response naming the field; the rest of the conversation is skipped."""

        def script(request: dict[str, Any]) -> Reply:
            return Reply(body={"answer": "fact", "retrieved": [], "meta": {"thread": given}})

        with LoopbackServer(script) as server:
            report = _run(
                {
                    "url": server.url,
                    "conversation": {"id": "meta.thread", "name": "X-Thread"},
                },
                _dataset(_conversation("c", "1?", "2?")),
            )

        assert [("bad_response", message), ("skipped_after_error", None)] == [
            (r.error.kind, r.error.message if r.error.kind == "bad_response" else None)
            for r in report.cases
            if r.error is not None
        ]


def _chat_reply(request: dict[str, Any]) -> Reply:
    """An OpenAI chat completion answering the last user message."""
    question = request["messages"][-1]["content"]
    message = {"role": "assistant", "content": f"fact: answer to {question}"}
    return Reply(body={"choices": [{"message": message}], "sources": [{"id": "d1"}]})


def _responses_reply(request: dict[str, Any]) -> Reply:
    """A Responses API answer to the last input item (or the input string)."""
    given = request["input"]
    question = given if isinstance(given, str) else given[-1]["content"]
    text = {"type": "output_text", "text": f"fact: answer to {question}", "annotations": []}
    return Reply(body={"output": [{"type": "message", "content": [text]}]})


class TestPresets:
    """The chat presets send the earlier turns as real chat clients do."""

    def test_openai_chat_sends_earlier_turns_as_messages(self) -> None:
        """Turn 2's messages are turn 1's question and answer, then its own question; a
        question of its own is the user's message alone, as before."""
        with LoopbackServer(_chat_reply, path="/v1/chat/completions") as server:
            config = {
                "url": server.url,
                "kind": "openai-chat",
                "model": "m",
                "response": {"ids": "sources[].id"},
            }
            _run(config, _dataset(_conversation("c", "first?", "second?")))
            turns = [r["messages"] for r in server.requests]

        assert [
            [{"role": "user", "content": "first?"}],
            [
                {"role": "user", "content": "first?"},
                {"role": "assistant", "content": "fact: answer to first?"},
                {"role": "user", "content": "second?"},
            ],
        ] == turns

    def test_openai_responses_sends_earlier_turns_as_input_items(self) -> None:
        """Turn 2's input is a list of messages, the question last."""
        with LoopbackServer(_responses_reply, path="/v1/responses") as server:
            config = {"url": server.url, "kind": "openai-responses", "model": "m"}
            report = _run(config, _dataset(_conversation("c", "first?", "second?")))
            inputs = [r["input"] for r in server.requests]

        assert [] == [r.id for r in report.cases if r.error is not None]
        assert [
            [{"role": "user", "content": "first?"}],
            [
                {"role": "user", "content": "first?"},
                {"role": "assistant", "content": "fact: answer to first?"},
                {"role": "user", "content": "second?"},
            ],
        ] == inputs

    def test_the_chat_preset_against_the_reference_service(
        self, reference: ReferenceServer
    ) -> None:
        """The reference service's OpenAI-compatible route, through the openai-chat preset,
        answers the conversations as its default contract does with the history in the
        body."""
        dataset = load_dataset(ROOT / "evals" / "conversations.jsonl")
        chat = _run(
            {
                "url": f"{reference.url}/rag/v1/chat/completions",
                "kind": "openai-chat",
                "model": "reference-rag",
                "response": {"ids": "sources[].id", "citations": "citations"},
            },
            dataset,
        )
        sent = _run({"url": f"{reference.url}/rag"}, dataset)

        assert [r.answer for r in sent.cases] == [r.answer for r in chat.cases]
        assert sent.summary.get("conversation_success") == chat.summary.get("conversation_success")

"""The reference service in conversations: it reads a follow-up with the earlier turns it is
sent (default contract, OpenAI-compatible route) or keeps (session route), ``history_ignored``
drops them, and the conversational golden set needs them: its first turns score the same
either way while its follow-ups fall."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evaluator.dataset import load_dataset
from evaluator.gate.rules import parse_rules
from evaluator.gate.verdict import evaluate_gate
from evaluator.models import CaseRecord, Conversation, Dataset
from evaluator.reference.app import CONVERSATION_HEADER
from evaluator.report import RunReport
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.http import HttpTarget
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CONVERSATIONS = ROOT / "evals" / "conversations.jsonl"
CORPUS = ROOT / "evaluator" / "reference" / "data" / "corpus.jsonl"

#: measured over HTTP (default contract, K=5): accuracy of the first turns and of the
#: follow-ups, and the share of conversations with every turn right, without and with
#: history_ignored
BASELINE = {"first": 1.0, "follow_up": 0.902, "conversations": 0.853}
HISTORY_IGNORED = {"first": 1.0, "follow_up": 0.098, "conversations": 0.0}


@pytest.fixture(scope="module")
def conversations() -> Dataset:
    """The reference conversational golden set."""
    return load_dataset(CONVERSATIONS)


@pytest.fixture
def client(reference_server: ReferenceServer) -> Iterator[httpx.Client]:
    """A client for the session server; every failure mode is off before and after."""
    reference_server.failure_modes.set([])
    with httpx.Client(base_url=reference_server.url, timeout=10) as http:
        yield http
    reference_server.failure_modes.set([])


async def _ask_all(url: str, dataset: Dataset) -> RunReport:
    target = HttpTarget(url)
    try:
        return await run_dataset(dataset, target, RunOptions(k=5, concurrency=8))
    finally:
        await target.aclose()


def _run(server: ReferenceServer, dataset: Dataset, *modes: str) -> RunReport:
    server.failure_modes.set(modes)
    try:
        return asyncio.run(_ask_all(f"{server.url}/rag", dataset))
    finally:
        server.failure_modes.set([])


def _figures(report: RunReport) -> dict[str, float]:
    """Accuracy of first turns and of follow-ups, and the share of conversations whose
    every answer check passed."""
    first = [r for r in report.cases if r.case.turn is not None and r.case.turn.position == 1]
    later = [r for r in report.cases if r.case.turn is not None and r.case.turn.position > 1]
    by_conversation: dict[str, list[CaseRecord]] = {}
    for record in report.cases:
        assert record.case.turn is not None
        by_conversation.setdefault(record.case.turn.conversation, []).append(record)

    def accuracy(records: list[CaseRecord]) -> float:
        checked = [r.scores.answer_correct for r in records if r.scores is not None]
        return round(sum(bool(c) for c in checked) / len(checked), 3)

    success = [
        all(r.scores is not None and r.scores.answer_correct is not False for r in records)
        for records in by_conversation.values()
    ]
    return {
        "first": accuracy(first),
        "follow_up": accuracy(later),
        "conversations": round(sum(success) / len(success), 3),
    }


class TestGoldenSet:
    """evals/conversations.jsonl: enough conversations, both languages, labels that hold."""

    def test_shape(self, conversations: Dataset) -> None:
        """At least 30 conversations of 2 to 4 turns, in Chinese and in English."""
        found = [c for c in conversations.cases if isinstance(c, Conversation)]

        assert len(found) == len(conversations.cases) >= 30
        assert {2, 3, 4} == {len(c.turns) for c in found}
        assert {"zh", "en"} <= {tag for c in found for tag in c.tags}
        assert any(t.unanswerable for c in found for t in c.turns)
        assert any(t.turn is not None and t.turn.assistant for c in found for t in c.turns)

    def test_labels_are_in_the_corpus(self, conversations: Dataset) -> None:
        """Every relevant id is a chunk, every fact is stated by one of the turn's relevant
        chunks, and every scripted answer states its turn's first fact."""
        texts = {
            row["id"]: row["text"]
            for row in map(json.loads, CORPUS.read_text("utf-8").splitlines())
        }
        problems = []
        for turn in conversations.questions:
            evidence = [texts.get(doc_id) for doc_id in turn.relevance]
            if None in evidence:
                problems.append(f"{turn.id}: unknown id")
                continue
            for fact in turn.expected_facts:
                if not any(alt in text for alt in fact for text in evidence if text):
                    problems.append(f"{turn.id}: {fact} in no relevant chunk")
            assistant = turn.turn.assistant if turn.turn is not None else None
            if assistant is not None and not any(a in assistant for a in turn.expected_facts[0]):
                problems.append(f"{turn.id}: the scripted answer misses its fact")

        assert [] == problems


class TestHistoryNeeded:
    """The follow-ups cannot be answered without their earlier turns."""

    def test_history_ignored_drops_follow_ups_and_holds_first_turns(
        self, reference_server: ReferenceServer, conversations: Dataset
    ) -> None:
        """With history_ignored the first turns come back the same while the follow-ups
        and the conversations fall to the figures this test pins."""
        baseline = _run(reference_server, conversations)
        ignored = _run(reference_server, conversations, "history_ignored")

        assert (BASELINE, HISTORY_IGNORED) == (_figures(baseline), _figures(ignored))
        first = [
            (r.answer, r.ranked_ids, r.scores)
            for report in (baseline, ignored)
            for r in report.cases
            if r.case.turn is not None and r.case.turn.position == 1
        ]
        half = len(first) // 2
        assert first[:half] == first[half:]

    def test_history_ignored_fails_the_gate_on_follow_ups_only(
        self, reference_server: ReferenceServer, conversations: Dataset
    ) -> None:
        """Gate rules on first turns pass while those on second turns and on conversation
        success fail: the summary's breakdown by turn position is what the gate reads."""
        baseline = _run(reference_server, conversations)
        ignored = _run(reference_server, conversations, "history_ignored")
        rules = parse_rules(
            {
                "rules": {
                    "answer_accuracy@1": {"max_drop": 0.0},
                    "recall_at_k@1": {"max_drop": 0.0},
                    "answer_accuracy@2": {"max_drop": 0.05},
                    "conversation_success": {"max_drop": 0.05},
                }
            },
            "gates.toml",
        )

        result = evaluate_gate(baseline, ignored, rules, with_intervals=False)

        assert (False, ["pass", "pass", "fail", "fail"]) == (
            result.passed,
            [r.status for r in result.rules],
        )


FOLLOW_UP = "营业时间是几点到几点？"
EARLIER = "上海维修中心在哪里？"
HOURS = "10:00至21:00"


class TestRoutes:
    """Each way a conversation reaches the service: the history in the body, as chat
    messages, or kept by the service under the id it hands out."""

    def test_the_default_contract_reads_its_history(self, client: httpx.Client) -> None:
        """A follow-up sent its earlier question is answered about it; alone it is not."""
        history = [{"role": "user", "content": EARLIER}, {"role": "assistant", "content": "x"}]

        with_history = client.post(
            "/rag", json={"question": FOLLOW_UP, "history": history, "conversation_id": "c1"}
        )
        alone = client.post("/rag", json={"question": FOLLOW_UP})

        assert (True, False) == (
            HOURS in with_history.json()["answer"],
            HOURS in alone.json()["answer"],
        )

    def test_the_chat_route_reads_earlier_messages(self, client: httpx.Client) -> None:
        """The OpenAI-compatible route answers the last user message with the earlier ones
        as its context, the evidence in ``sources``."""
        messages = [
            {"role": "system", "content": "You are a help-centre assistant."},
            {"role": "user", "content": EARLIER},
            {"role": "assistant", "content": "漕溪北路200号。"},
            {"role": "user", "content": FOLLOW_UP},
        ]

        body = client.post(
            "/rag/v1/chat/completions", json={"model": "m", "messages": messages}
        ).json()

        assert (True, "assistant", "service-center-shanghai-zh-1") == (
            HOURS in body["choices"][0]["message"]["content"],
            body["choices"][0]["message"]["role"],
            body["sources"][0]["id"],
        )

    def test_the_session_route_keeps_the_conversation(self, client: httpx.Client) -> None:
        """The first turn gets an id; the follow-up sent with it is read with the first
        turn's question, and the same follow-up in a new conversation is not."""
        first = client.post("/rag/session", json={"question": EARLIER}).json()
        header = {CONVERSATION_HEADER: first["conversation_id"]}

        kept = client.post("/rag/session", json={"question": FOLLOW_UP}, headers=header)
        fresh = client.post("/rag/session", json={"question": FOLLOW_UP})

        assert (True, False, first["conversation_id"]) == (
            HOURS in kept.json()["answer"],
            HOURS in fresh.json()["answer"],
            kept.json()["conversation_id"],
        )

    def test_history_ignored_forgets_a_kept_conversation(
        self, client: httpx.Client, reference_server: ReferenceServer
    ) -> None:
        """history_ignored drops the history the service keeps, as the one it is sent."""
        first = client.post("/rag/session", json={"question": EARLIER}).json()
        reference_server.failure_modes.set(["history_ignored"])

        kept = client.post(
            "/rag/session",
            json={"question": FOLLOW_UP},
            headers={CONVERSATION_HEADER: first["conversation_id"]},
        )

        assert HOURS not in kept.json()["answer"]

    def test_an_unknown_conversation_is_a_404(self, client: httpx.Client) -> None:
        """An id the service never gave is refused, not silently started afresh."""
        response = client.post(
            "/rag/session", json={"question": FOLLOW_UP}, headers={CONVERSATION_HEADER: "nope"}
        )

        assert 404 == response.status_code

    @pytest.mark.parametrize(
        ("path", "body", "message"),
        [
            ("/rag", {"question": "q", "history": "x"}, '"history" must be a list of messages'),
            (
                "/rag",
                {"question": "q", "history": [{"role": "robot", "content": "x"}]},
                '"history"[0] must be {"role": "system", "user" or "assistant", "content": '
                "a string}",
            ),
            (
                "/rag",
                {"question": "q", "history": [{"role": "user", "content": "x"}] * 65},
                '"history" holds more than 64 messages',
            ),
            ("/rag", {"question": "q", "conversation_id": 7}, '"conversation_id" must be a string'),
            (
                "/rag/v1/chat/completions",
                {"messages": [{"role": "assistant", "content": "x"}]},
                '"messages" must end with the user\'s question',
            ),
            (
                "/rag/v1/chat/completions",
                {"messages": [{"role": "user", "content": "q"}], "stream": True},
                '"stream": the reference RAG answers in one body only',
            ),
        ],
    )
    def test_a_bad_conversation_is_a_400(
        self, client: httpx.Client, path: str, body: object, message: str
    ) -> None:
        """A malformed history or chat request is refused, saying what is wrong."""
        response = client.post(path, json=body)

        assert (400, message) == (response.status_code, response.json()["error"])

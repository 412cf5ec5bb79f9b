"""The shipped example configs, each run against a loopback server speaking its shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluator.config import HttpTargetConfig, load_settings
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import dataset, run_config

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "targets"
QUESTIONS = ["How long do I have to ask for a refund?", '退款 "期限" {k}?']


def example(name: str, url: str) -> HttpTargetConfig:
    """The first target of ``config/targets/<name>``, pointed at ``url``."""
    target = load_settings(EXAMPLES / name).targets[0]
    assert isinstance(target, HttpTargetConfig)
    return target.model_copy(update={"url": url})


def default_reply(request: dict[str, Any]) -> Reply:
    """A reply in the default contract: answer, retrieved ids with scores, citations and stage
    timings."""
    return Reply(
        body={
            "answer": "Within 7 days. [1]",
            "retrieved": [{"id": "refund-policy", "score": 2.0}, {"id": "faq", "score": 1.0}],
            "citations": [1],
            "timings": {"retrieve": 0.002, "model": 0.01},
        }
    )


def search_reply(request: dict[str, Any]) -> Reply:
    """A search API's reply: a bare list of hits, as many as the request's limit."""
    hits = [
        {"id": "refund-policy", "score": 12.1, "text": "7 days"},
        {"id": "shipping", "score": 3.0, "text": "carriers"},
        {"id": "faq", "score": 1.0, "text": None},
    ]
    return Reply(body=hits[: int(request["limit"])])


def chat_reply(request: dict[str, Any]) -> Reply:
    """A chat API's reply: the answer and its sources nested in the body."""
    sources = [
        {"doc_id": "faq", "relevance": 0.4, "snippet": "..."},
        {"doc_id": "refund-policy", "relevance": 0.9, "snippet": "7 days"},
    ]
    return Reply(
        body={
            "id": "chat-1",
            "output": {
                "message": {"role": "assistant", "content": "You have 7 days. [2]"},
                "citations": [{"source": 2}],
            },
            "context": {"sources": sources[: request["retrieval"]["top_k"]]},
            "debug": {"timings": {"retrieve": 0.003, "generate": 0.02}},
        }
    )


class TestDefaultContract:
    """POST {question, top_k}; the default response parsed as docs/targets.md describes."""

    def test_run(self) -> None:
        """The default-contract example posts the question and top_k and reads answer, ranking,
        citations and stage timings."""
        with LoopbackServer(default_reply) as server:
            report, _ = run_config(example("default-contract.toml", server.url), dataset(QUESTIONS))
            requests = server.requests
        assert sorted(QUESTIONS) == sorted(r["question"] for r in requests)
        assert {3} == {r["top_k"] for r in requests}
        assert [None, None] == [c.error for c in report.cases]
        assert [True, True] == [c.scores.answer_correct for c in report.cases if c.scores]
        assert {"retrieve": 0.002, "model": 0.01} == report.cases[0].stage_seconds
        assert not report.retrieval_only


class TestSearchApi:
    """GET /search?q=..&limit=.. answering a bare list: retrieval-only."""

    def test_run(self) -> None:
        """The search API example sends GET query parameters and reads a ranking without an
        answer."""
        with LoopbackServer(search_reply, path="/search") as server:
            report, _ = run_config(example("search-api.toml", server.url), dataset(QUESTIONS))
            lines, requests = server.request_lines, server.requests
        assert all(line.startswith("GET /search?q=") for line in lines)
        assert sorted(QUESTIONS) == sorted(r["q"] for r in requests)
        assert {"3"} == {r["limit"] for r in requests}
        record = report.cases[0]
        assert ("refund-policy", "shipping", "faq") == record.ranked_ids
        assert record.answer is None
        assert record.scores is not None
        assert (1.0, None, None) == (
            record.scores.recall_at_k,
            record.scores.answer_correct,
            record.scores.citation_precision,
        )
        assert report.retrieval_only


class TestChatApi:
    """Nested answer and sources, a bearer token from the environment, K as an integer."""

    def test_run(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The chat API example sends a bearer token from the environment and K as an integer,
        and maps the nested answer and sources."""
        monkeypatch.setenv("RAG_API_TOKEN", "tok-chat-5150")
        with LoopbackServer(
            chat_reply, path="/v1/chat", question_of=lambda r: r["messages"][0]["content"]
        ) as server:
            report, _ = run_config(example("chat-api.toml", server.url), dataset(QUESTIONS))
            requests, headers = server.requests, server.request_headers
        sent = sorted(requests, key=lambda r: str(r["messages"][0]["content"]))
        assert [
            {
                "model": "rag-large",
                "messages": [{"role": "user", "content": q}],
                "retrieval": {"top_k": 3},
            }
            for q in sorted(QUESTIONS)
        ] == sent
        assert all(h["Authorization"] == "Bearer tok-chat-5150" for h in headers)
        record = report.cases[0]
        assert record.error is None
        assert ("faq", "refund-policy") == record.ranked_ids
        assert "You have 7 days. [2]" == record.answer
        assert (2,) == record.citations
        assert record.scores is not None
        assert (0.5, True, 1.0) == (
            record.scores.mrr,
            record.scores.answer_correct,
            record.scores.citation_precision,
        )
        assert {"retrieve": 0.003, "generate": 0.02} == record.stage_seconds
        assert not report.retrieval_only

"""docs/targets.md: every recipe (a TOML block whose first line is ``# recipe: NAME``) is
loaded as the page shows it and run against a loopback service that answers in that
framework's documented shape; what the recipe maps is what the service meant.

The shapes: Hayhooks' ``/{pipeline}/run`` as its code builds it (``{"result": ...}``, a
YAML pipeline's outputs keyed by component, Haystack's ``Document`` and ``ChatMessage``
serialised by their dataclass fields; a pipeline wrapper's own return value), LangServe's
``/invoke`` (``output`` and ``metadata.run_id``, a retrieval chain's ``answer`` and
``context`` of serialised LangChain ``Document`` objects), a LlamaIndex ``Response``
(``response``, ``source_nodes`` of ``NodeWithScore``), the OpenAI Responses API streamed
(named SSE events up to ``response.completed``, no ``[DONE]``), a chat completions server
with its own sentinel, an NDJSON stream with a final object, and an answer citing inline.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from pydantic import Field, create_model

from evaluator.config import HttpTargetConfig
from tests.support.loopback import LoopbackServer, Reply
from tests.support.streams import Chunk, StreamServer
from tests.targets.helpers import query_error, query_once

PAGE = Path(__file__).resolve().parents[2] / "docs" / "targets.md"
RECIPES = {
    match.group(1): match.group(0)
    for match in re.finditer(
        r"# recipe: ([\w-]+)\n.*?(?=```)", PAGE.read_text(encoding="utf-8"), re.S
    )
}
ANSWER = "Refunds are accepted within 7 days"


class _ChatRole(StrEnum):
    """Haystack's ``ChatRole`` (a ``str`` enum), its assistant."""

    ASSISTANT = "assistant"


@dataclass
class _TextContent:
    """Haystack's ``TextContent``: its one field."""

    text: str


@dataclass
class _ChatMessage:
    """Haystack's ``ChatMessage``: its dataclass fields, as Haystack names them."""

    _role: _ChatRole
    _content: list[_TextContent]
    _name: str | None = None
    _meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Document:
    """Haystack's ``Document``: its dataclass fields."""

    id: str
    content: str | None = None
    blob: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
    score: float | None = None
    embedding: list[float] | None = None
    sparse_embedding: Any = None


def _hayhooks_run(result: Any, returned: type) -> Reply:
    """What Hayhooks' ``/{pipeline}/run`` answers: ``run_api``'s return value in a response
    model ``{"result": <the return annotation>}``, serialised by pydantic as FastAPI does
    (dataclasses by their fields; ``create_response_model_from_callable``)."""
    model = create_model("RunResponse", result=(returned, Field(...)))
    return Reply(raw=model(result=result).model_dump_json().encode())


_DOCUMENTS = [
    _Document("faq", "FAQ", score=0.3),
    _Document("refund-policy", "7 days", meta={"file": "r.md"}, score=0.9),
]


def _haystack(request: dict[str, Any]) -> Reply:
    """A YAML pipeline: its outputs keyed by component (``run_async`` with
    ``include_outputs_from``), the chat generator's reply a ``ChatMessage``."""
    assert set(request) == {"query", "top_k"} and request["top_k"] == 4
    reply = _ChatMessage(_ChatRole.ASSISTANT, [_TextContent(f"{ANSWER} [2].")], None, {"x": 1})
    outputs = {"retriever": {"documents": _DOCUMENTS}, "llm": {"replies": [reply]}}
    return _hayhooks_run(outputs, dict)


def _haystack_wrapper(request: dict[str, Any]) -> Reply:
    """A pipeline wrapper whose ``run_api(self, query: str) -> dict`` returns the reply's
    text and the retriever's documents."""
    assert set(request) == {"query"}
    return _hayhooks_run({"answer": f"{ANSWER} [2].", "sources": _DOCUMENTS}, dict)


def _langserve(request: dict[str, Any]) -> Reply:
    question = request["input"]["input"]
    context = [
        {"page_content": "7 days", "metadata": {"source": "refund-policy"}, "type": "Document"},
        {"page_content": "FAQ", "metadata": {"source": "faq"}, "type": "Document"},
    ]
    output = {"input": question, "context": context, "answer": f"{ANSWER} [refund-policy]."}
    return Reply(body={"output": output, "metadata": {"run_id": "7e3f", "feedback_tokens": []}})


def _langserve_stream(_request: dict[str, Any]) -> list[Chunk]:
    """sse_starlette's framing (CRLF line ends): metadata, data chunks, end; the server
    then keeps the connection open a while (the stream is complete at its end event)."""

    def event(name: str, data: Any = None) -> Chunk:
        text = f"event: {name}\r\n" + ("" if data is None else f"data: {json.dumps(data)}\r\n")
        return Chunk(0, (text + "\r\n").encode())

    context = [
        {"page_content": "7 days", "metadata": {"source": "refund-policy"}, "type": "Document"}
    ]
    return [
        event("metadata", {"run_id": "7e3f"}),
        event("data", {"input": "How long?"}),
        event("data", {"context": context}),
        event("data", {"answer": ANSWER}),
        event("data", {"answer": " [refund-policy]."}),
        event("end"),
        Chunk(3.0, b": still open\r\n\r\n"),
    ]


def _llamaindex(request: dict[str, Any]) -> Reply:
    assert request["similarity_top_k"] == 4
    nodes = [
        {"node": {"id_": "refund-policy", "text": "7 days", "metadata": {}}, "score": 0.82},
        {"node": {"id_": "faq", "text": "FAQ", "metadata": {}}, "score": 0.41},
    ]
    return Reply(body={"response": f"{ANSWER} [1].", "source_nodes": nodes, "metadata": {}})


def _inline(_request: dict[str, Any]) -> Reply:
    hits = [{"id": "faq"}, {"id": "refund-policy"}]
    return Reply(body={"answer": f"{ANSWER} [2][1].", "hits": hits})


def _sse(*events: tuple[str, dict[str, Any]]) -> list[Chunk]:
    return [
        Chunk(0, f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()) for name, data in events
    ]


def _responses(_request: dict[str, Any]) -> list[Chunk]:
    final = {
        "id": "resp_1",
        "status": "completed",
        "output": [
            {
                "type": "file_search_call",
                "results": [{"file_id": "refund-policy", "text": "7 days", "score": 0.9}],
            },
            {
                "type": "message",
                "content": [
                    {
                        "type": "output_text",
                        "text": f"{ANSWER}.",
                        "annotations": [
                            {"type": "file_citation", "file_id": "refund-policy", "index": 30}
                        ],
                    }
                ],
            },
        ],
        "usage": {"input_tokens": 10, "output_tokens": 7},
    }
    deltas = [
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": p})
        for p in (f"{ANSWER[:8]}", f"{ANSWER[8:]}.")
    ]
    return _sse(
        ("response.created", {"type": "response.created"}),
        *deltas,
        ("response.completed", {"type": "response.completed", "response": final}),
    )


def _own_sentinel(_request: dict[str, Any]) -> list[Chunk]:
    def chunk(data: dict[str, Any]) -> Chunk:
        return Chunk(0, f"data: {json.dumps(data)}\n\n".encode())

    return [
        chunk({"choices": [{"delta": {"content": f"{ANSWER} [1]"}, "finish_reason": None}]}),
        chunk({"choices": [{"delta": {"content": "."}, "finish_reason": None}]}),
        chunk({"choices": [], "sources": [{"id": "refund-policy"}], "usage": None}),
        Chunk(0, b"data: [END]\n\n"),
    ]


def _ndjson(_request: dict[str, Any]) -> list[Chunk]:
    lines = [
        {"type": "token", "delta": f"{ANSWER}"},
        {"type": "token", "delta": "."},
        {"type": "final", "sources": [{"id": "refund-policy"}], "citations": [1]},
    ]
    return [Chunk(0, (json.dumps(line) + "\n").encode()) for line in lines]


#: recipe -> (plain reply or stream script, content type of a stream, expected citations)
SERVICES: dict[str, tuple[Callable[[dict[str, Any]], Any], str | None, tuple[Any, ...]]] = {
    "haystack": (_haystack, None, (2,)),
    "haystack-wrapper": (_haystack_wrapper, None, (2,)),
    "langserve": (_langserve, None, ("refund-policy",)),
    "langserve-stream": (_langserve_stream, "text/event-stream", ("refund-policy",)),
    "llamaindex": (_llamaindex, None, (1,)),
    "inline-markers": (_inline, None, (2, 1)),
    "openai-responses": (_responses, "text/event-stream", ("refund-policy",)),
    "openai-chat-own-sentinel": (_own_sentinel, "text/event-stream", (1,)),
    "ndjson-final-object": (_ndjson, "application/x-ndjson", (1,)),
}


def test_every_recipe_has_a_service() -> None:
    """Every target recipe of the docs has a loopback service of its framework's shape."""
    assert set(SERVICES) == set(RECIPES)


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_against_its_framework_shape(name: str) -> None:
    """Each target recipe, queried against its framework's shape, reads the answer, the ranking
    and the citations."""
    block = RECIPES[name]
    target = tomllib.loads(block)["targets"][0]
    path = urlsplit(target["url"]).path
    script, content_type, citations = SERVICES[name]
    server: LoopbackServer | StreamServer
    if content_type is None:
        server = LoopbackServer(script, path=path, question_of=lambda _r: "How long?")
    else:
        server = StreamServer(script, content_type=content_type, path=path)
    with server:
        # a deadline shorter than any server's lingering: a recipe completes at its marker
        local = {**target, "url": f"http://127.0.0.1:{server.port}{path}", "timeout_seconds": 2}
        response = query_once(HttpTargetConfig.model_validate(local))
    assert response.answer is not None and response.answer.startswith(ANSWER)
    assert "refund-policy" in response.ranked_ids
    assert citations == response.citations


@pytest.mark.e2e
def test_langserve_without_the_declared_output_type_fails_as_the_page_says() -> None:
    """A LangServe /invoke whose inferred output schema dropped ``context`` (no declared
    output type): the langserve recipe fails with the error the page quotes, naming the
    expression, rather than scoring a ranking of nothing."""

    def undeclared(request: dict[str, Any]) -> Reply:
        output = {"input": request["input"]["input"], "answer": f"{ANSWER} [refund-policy]."}
        return Reply(body={"output": output, "metadata": {"run_id": "7e3f"}})

    target = tomllib.loads(RECIPES["langserve"])["targets"][0]
    path = urlsplit(target["url"]).path
    with LoopbackServer(undeclared, path=path, question_of=lambda _r: "How long?") as server:
        local = {**target, "url": f"http://127.0.0.1:{server.port}{path}", "timeout_seconds": 2}
        error = query_error(HttpTargetConfig.model_validate(local))
    assert error.message in " ".join(PAGE.read_text(encoding="utf-8").split())
    assert 'response.ids expression "output.context[].metadata.source"' in error.message

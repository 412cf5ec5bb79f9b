"""HTTP layer of the reference service: the RAG endpoint, health and the failure-mode admin API.

Routes::

    GET    /rag                          a short page: how to ask (what a browser opens)
    POST   /rag                          {"question": "...", "top_k": 5} -> answer, retrieved,
                                         citations, timings (the default target contract);
                                         a conversation's turn adds "history" (the earlier
                                         [{"role", "content"}]) and "conversation_id"
    POST   /rag/v1/chat/completions      the same RAG, OpenAI-compatible: the last user
                                         message is the question, the earlier ones its
                                         history; the answer in choices[0].message.content,
                                         the evidence in "sources", plus "citations"
    POST   /rag/session                  {"question", "top_k"}: the service keeps the
                                         conversation; without X-Conversation-Id a new one
                                         starts, its id in the answer's "conversation_id";
                                         a later turn sends that id back in the header
    POST   /v1/chat/completions          OpenAI-compatible demo judge (deterministic, not a
                                         model: see evaluator/reference/judge.py)
    GET    /healthz                      200 {"status": "ok", ...}
    GET    /admin/failure-modes          {"modes": [...active], "known": [...]}
    PUT    /admin/failure-modes          {"modes": [...]} replaces the active set
    POST   /admin/failure-modes/{mode}   switches one mode on
    DELETE /admin/failure-modes/{mode}   switches one mode off

Unknown failure modes are answered with 400 and the list of known ones.
"""

from __future__ import annotations

import html
import json
import secrets
import time
from collections.abc import Iterable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from evaluator.reference.conversations import ConversationStore, UnknownConversationError
from evaluator.reference.failures import KNOWN_MODES, FailureModes, UnknownFailureModeError
from evaluator.reference.judge import DemoJudgeError, judge_completion
from evaluator.reference.pipeline import RagResult, ReferenceRag

__all__ = ["CONVERSATION_HEADER", "MAX_TOP_K", "create_app"]

#: the largest ``top_k`` a request may ask for
MAX_TOP_K = 100
_MAX_QUESTION_CHARS = 2000
#: a conversation's history: messages, characters per message (an earlier answer may be
#: long), and the header a stateful conversation's id comes back in
_MAX_MESSAGES = 64
_MAX_MESSAGE_CHARS = 20_000
CONVERSATION_HEADER = "X-Conversation-Id"


class _BadRequestError(Exception):
    """The request body is not a valid RAG request; the message says why."""


def _error(message: str, status: int, **extra: object) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


async def _json_object(request: Request) -> dict[str, object]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _BadRequestError(f"body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _BadRequestError("body must be a JSON object")
    return body


def _question(value: object, where: str = '"question"') -> str:
    if not isinstance(value, str) or not value.strip():
        raise _BadRequestError(f"{where} must be a non-empty string")
    if len(value) > _MAX_QUESTION_CHARS:
        raise _BadRequestError(f"{where} is longer than {_MAX_QUESTION_CHARS} characters")
    return value


def _top_k(body: dict[str, object]) -> int:
    top_k = body.get("top_k", 5)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
        raise _BadRequestError(f'"top_k" must be an integer from 1 to {MAX_TOP_K}')
    return top_k


def _messages(value: object, where: str) -> list[tuple[str, str]]:
    """``[{"role", "content"}]`` as (role, content) pairs, checked and bounded."""
    if not isinstance(value, list):
        raise _BadRequestError(f"{where} must be a list of messages")
    if len(value) > _MAX_MESSAGES:
        raise _BadRequestError(f"{where} holds more than {_MAX_MESSAGES} messages")
    pairs = []
    for i, message in enumerate(value):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise _BadRequestError(
                f'{where}[{i}] must be {{"role": "system", "user" or "assistant", '
                '"content": a string}'
            )
        if len(content) > _MAX_MESSAGE_CHARS:
            raise _BadRequestError(f"{where}[{i}] is longer than {_MAX_MESSAGE_CHARS} characters")
        pairs.append((role, content))
    return pairs


def _parse_rag_request(body: dict[str, object]) -> tuple[str, int, tuple[str, ...]]:
    """The question, top_k and the earlier user questions of its conversation (none for a
    question of its own)."""
    question = _question(body.get("question"))
    history = body.get("history")
    earlier = () if history is None else _asked_before(_messages(history, '"history"'))
    conversation_id = body.get("conversation_id")
    if conversation_id is not None and not isinstance(conversation_id, str):
        raise _BadRequestError('"conversation_id" must be a string')
    return question, _top_k(body), earlier


def _asked_before(messages: list[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(content for role, content in messages if role == "user")


def _parse_chat_request(body: dict[str, object]) -> tuple[str, str, int, tuple[str, ...]]:
    """The model, question (the last message, a user's), top_k and earlier user questions
    of an OpenAI-compatible chat request."""
    model = body.get("model", "reference-rag")
    if not isinstance(model, str):
        raise _BadRequestError('"model" must be a string')
    if body.get("stream", False) is not False:
        raise _BadRequestError('"stream": the reference RAG answers in one body only')
    messages = _messages(body.get("messages"), '"messages"')
    if not messages or messages[-1][0] != "user":
        raise _BadRequestError('"messages" must end with the user\'s question')
    question = _question(messages[-1][1], "the last message")
    return model, question, _top_k(body), _asked_before(messages[:-1])


def _chat_completion(model: str, result: RagResult) -> dict[str, object]:
    """An OpenAI chat completion holding the answer, with the evidence beside it."""
    body = result.to_json()
    return {
        "id": f"chatcmpl-{secrets.token_hex(8)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.answer},
                "finish_reason": "stop",
            }
        ],
        "sources": body["retrieved"],
        "citations": body["citations"],
        "timings": body["timings"],
    }


#: what GET /rag answers: the service is asked with a POST
_HOW_TO_ASK = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>reference RAG service</title></head>
<body>
<h1>The reference RAG service</h1>
<p>This endpoint answers a question sent with a POST of JSON, <code>{{"question": "...",
"top_k": 5}}</code>, with the answer, the retrieved chunks, the citations and the stage
timings (the evaluator's default target contract):</p>
<pre>curl -s -X POST {url} -H 'Content-Type: application/json' \\
  -d '{{"question": "How long do refunds take?", "top_k": 5}}'</pre>
<p>Its health is at <a href="/healthz">/healthz</a>, its failure modes at
<a href="/admin/failure-modes">/admin/failure-modes</a>.</p>
</body></html>
"""


class _Endpoints:
    """The service's request handlers over one :class:`ReferenceRag` and the conversations
    it keeps."""

    def __init__(self, rag: ReferenceRag) -> None:
        self.rag = rag
        self.failure_modes = rag.failure_modes
        self.kept = ConversationStore()

    async def answer(self, request: Request) -> JSONResponse:
        """``POST /rag``: one question (with its earlier turns), answered."""
        rag = self.rag
        try:
            question, top_k, earlier = _parse_rag_request(await _json_object(request))
        except _BadRequestError as exc:
            return _error(str(exc), 400)
        if rag.injects_error(question):
            return _error("injected failure: server_errors is on", 500)
        result = await rag.ask(question, top_k, earlier)
        return JSONResponse(result.to_json())

    async def how_to_ask(self, request: Request) -> HTMLResponse:
        """``GET /rag``: a browser's request (the demo banner's link) gets a short page saying
        how to ask, rather than 405."""
        url = html.escape(str(request.url.replace(query="", fragment="")))
        return HTMLResponse(_HOW_TO_ASK.format(url=url))

    async def chat(self, request: Request) -> JSONResponse:
        """``POST /rag/v1/chat/completions``: the same, in the OpenAI chat shape."""
        rag = self.rag
        try:
            model, question, top_k, earlier = _parse_chat_request(await _json_object(request))
        except _BadRequestError as exc:
            return _error(str(exc), 400)
        if rag.injects_error(question):
            return _error("injected failure: server_errors is on", 500)
        return JSONResponse(_chat_completion(model, await rag.ask(question, top_k, earlier)))

    async def session(self, request: Request) -> JSONResponse:
        """``POST /rag/session``: a question in a conversation the service keeps (its id in
        a header; none: a new conversation)."""
        rag, kept = self.rag, self.kept
        try:
            body = await _json_object(request)
            question, top_k = _question(body.get("question")), _top_k(body)
        except _BadRequestError as exc:
            return _error(str(exc), 400)
        conversation_id = request.headers.get(CONVERSATION_HEADER) or kept.start()
        try:
            earlier = kept.earlier(conversation_id)
        except UnknownConversationError:
            return _error(f"unknown conversation: {CONVERSATION_HEADER} is not one given", 404)
        if rag.injects_error(question):
            return _error("injected failure: server_errors is on", 500)
        result = await rag.ask(question, top_k, earlier)
        kept.asked(conversation_id, question)
        return JSONResponse({**result.to_json(), "conversation_id": conversation_id})

    async def chat_completions(self, request: Request) -> JSONResponse:
        """``POST /v1/chat/completions``: the demo judge."""
        try:
            return JSONResponse(judge_completion(await _json_object(request)))
        except (_BadRequestError, DemoJudgeError) as exc:
            return _error(str(exc), 400)

    async def healthz(self, request: Request) -> JSONResponse:
        """``GET /healthz``: the index's size and the failure modes on."""
        active = sorted(self.failure_modes.active)
        return JSONResponse(
            {"status": "ok", "chunks": len(self.rag.chunks), "failure_modes": active}
        )

    async def admin(self, request: Request) -> JSONResponse:
        """GET, PUT (the whole set), or POST and DELETE of one mode; then the modes."""
        failure_modes = self.failure_modes
        try:
            if request.method == "PUT":
                names = (await _json_object(request)).get("modes")
                if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                    raise _BadRequestError('"modes" must be a list of strings')
                failure_modes.set(names)
            elif request.method == "DELETE":
                failure_modes.disable(request.path_params["mode"])
            elif request.method == "POST":
                failure_modes.enable(request.path_params["mode"])
        except (_BadRequestError, UnknownFailureModeError) as exc:
            return _error(str(exc), 400, known=list(KNOWN_MODES))
        return JSONResponse({"modes": sorted(failure_modes.active), "known": list(KNOWN_MODES)})


def create_app(
    modes: Iterable[str] = (),
    *,
    slow_model_seconds: float = 1.5,
    error_share: float = 0.3,
) -> Starlette:
    """Build the reference RAG service; the index is built here, once.

    Args:
        modes: failure modes active from the start (see
            :data:`~evaluator.reference.failures.KNOWN_MODES`).
        slow_model_seconds: model-stage delay under ``slow_model``.
        error_share: share of questions failing with HTTP 500 under ``server_errors``.

    Raises:
        UnknownFailureModeError: a mode in ``modes`` is unknown.
    """
    rag = ReferenceRag(
        failure_modes=FailureModes(modes),
        slow_model_seconds=slow_model_seconds,
        error_share=error_share,
    )
    endpoints = _Endpoints(rag)
    app = Starlette(
        routes=[
            Route("/rag", endpoints.answer, methods=["POST"]),
            Route("/rag", endpoints.how_to_ask, methods=["GET"]),
            Route("/rag/v1/chat/completions", endpoints.chat, methods=["POST"]),
            Route("/rag/session", endpoints.session, methods=["POST"]),
            Route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"]),
            Route("/healthz", endpoints.healthz, methods=["GET"]),
            Route("/admin/failure-modes", endpoints.admin, methods=["GET", "PUT"]),
            Route("/admin/failure-modes/{mode}", endpoints.admin, methods=["POST", "DELETE"]),
        ]
    )
    app.state.rag = rag
    return app

"""HTTP layer of the reference service: the RAG endpoint, health and the failure-mode admin API.

Routes::

    POST   /rag                          {"question": "...", "top_k": 5} -> answer, retrieved,
                                         citations, timings (the default target contract)
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

import json
from collections.abc import Iterable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from evaluator.reference.failures import KNOWN_MODES, FailureModes, UnknownFailureModeError
from evaluator.reference.judge import DemoJudgeError, judge_completion
from evaluator.reference.pipeline import ReferenceRag

__all__ = ["MAX_TOP_K", "create_app"]

#: the largest ``top_k`` a request may ask for
MAX_TOP_K = 100
_MAX_QUESTION_CHARS = 2000


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


def _parse_rag_request(body: dict[str, object]) -> tuple[str, int]:
    question = body.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _BadRequestError('"question" must be a non-empty string')
    if len(question) > _MAX_QUESTION_CHARS:
        raise _BadRequestError(f'"question" is longer than {_MAX_QUESTION_CHARS} characters')
    top_k = body.get("top_k", 5)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
        raise _BadRequestError(f'"top_k" must be an integer from 1 to {MAX_TOP_K}')
    return question, top_k


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
    failure_modes = rag.failure_modes

    async def answer(request: Request) -> JSONResponse:
        try:
            question, top_k = _parse_rag_request(await _json_object(request))
        except _BadRequestError as exc:
            return _error(str(exc), 400)
        if rag.injects_error(question):
            return _error("injected failure: server_errors is on", 500)
        result = await rag.ask(question, top_k)
        return JSONResponse(result.to_json())

    async def chat_completions(request: Request) -> JSONResponse:
        try:
            return JSONResponse(judge_completion(await _json_object(request)))
        except (_BadRequestError, DemoJudgeError) as exc:
            return _error(str(exc), 400)

    async def healthz(request: Request) -> JSONResponse:
        active = sorted(failure_modes.active)
        return JSONResponse({"status": "ok", "chunks": len(rag.chunks), "failure_modes": active})

    async def admin(request: Request) -> JSONResponse:
        """GET, PUT (the whole set), or POST and DELETE of one mode; then the modes."""
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

    app = Starlette(
        routes=[
            Route("/rag", answer, methods=["POST"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/admin/failure-modes", admin, methods=["GET", "PUT"]),
            Route("/admin/failure-modes/{mode}", admin, methods=["POST", "DELETE"]),
        ]
    )
    app.state.rag = rag
    return app

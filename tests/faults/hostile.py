"""A hostile RAG endpoint on loopback: echoes credentials back in every field it can, and
invents a new stage name, a huge answer or a megabyte error for each response.

The endpoint is a :class:`~tests.support.loopback.LoopbackServer` whose handler sees the
whole request (headers and query string), so it echoes what the evaluator really sent, not
what the test thinks it sent. ``mode`` may be switched between runs by the test.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any
from urllib.parse import quote, quote_plus

from aiohttp import web

from tests.support.loopback import LoopbackServer

__all__ = ["MANY_IDS", "SURROGATE_BODY", "HostileEndpoint", "MiB", "encodings_of"]

MiB = 1024 * 1024
#: ids in an ``ids`` response: the count that once stalled /healthz for seconds
MANY_IDS = 350_000


def encodings_of(value: str) -> list[str]:
    """The forms an echoing endpoint sends a credential back in."""
    raw = value.encode()
    escaped = json.dumps(value)[1:-1]
    return [
        value,
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        escaped.replace("/", "\\/"),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(b"user:" + raw).decode(),
        quote(quote(value, safe=""), safe=""),
        quote(quote(value)),
    ]


class HostileEndpoint(LoopbackServer):
    """Modes: ``echo`` (credentials in answer, ids, texts, citations, stage names, and in
    the body of a 500 and of invalid JSON), ``heavy`` (a new stage name per response, a
    2 MiB answer, 2,000 ids of 1,000 characters, a 3 MB error for question ``q1``), and,
    one attack each, ``good`` (a well-behaved answer), ``stages`` (50 new stage names per
    response), ``error`` (a 3 MB error body for every case), ``large`` (the 2 MiB answer
    and the 2,000 long ids), ``ids`` (:data:`MANY_IDS` short ids, within a 4 MiB cap),
    ``surrogate`` (lone UTF-16 surrogates, escaped as JSON allows, in the answer, an id, a
    citation, a text and a stage name: what a JavaScript service sends when it cuts a
    string inside an emoji).

    The ``large`` and ``ids`` bodies are the same for every response: they are encoded once,
    so serving them costs this process (and the tests' pollers sharing its interpreter)
    next to nothing."""

    def __init__(self, mode: str = "echo") -> None:
        super().__init__(lambda _request: None)  # type: ignore[arg-type,return-value]
        self.mode = mode
        self._counter = itertools.count()
        self._encoded: dict[str, bytes] = {}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = {}
        if request.method == "POST":
            try:
                body = await request.json()
            except ValueError:
                body = {}
        question = str(body.get("question", request.query.get("q", "")))
        self.requests.append(body)
        self.request_headers.append(dict(request.headers))
        if self.mode == "echo":
            return self._echo(request, question)
        if self.mode == "heavy":
            return self._heavy(question)
        return self._single(self.mode)

    def _single(self, mode: str) -> web.StreamResponse:
        if mode in ("large", "ids"):
            if mode not in self._encoded:
                self._encoded[mode] = json.dumps(_static_body(mode)).encode()
            return web.Response(body=self._encoded[mode], content_type="application/json")
        if mode == "surrogate":
            return web.Response(body=SURROGATE_BODY, content_type="application/json")
        n = next(self._counter)
        data: dict[str, Any] = {
            "answer": "it is fact0",
            "retrieved": [{"id": "d0", "text": "evidence"}, {"id": "d1"}],
            "citations": [1],
            "timings": {"retrieve": 0.001, "generate": 0.002},
        }
        if mode == "stages":
            data["timings"] = {f"stage-{n}-{j}": 0.001 for j in range(50)}
        elif mode == "error":
            return web.Response(status=500, text="E" * (3 * 1000 * 1000))
        return web.json_response(data)

    def _echo(self, request: web.Request, question: str) -> web.StreamResponse:
        sent = [*request.headers.values(), *request.query.values(), request.path_qs]
        forms = [form for value in sent for form in encodings_of(value)]
        echoed = " | ".join(forms)
        if question == "q1":  # an error body that echoes the request
            return web.Response(status=500, text=f"denied: {echoed}")
        if question == "q2":  # invalid JSON that starts with the echo
            return web.Response(status=200, text=f"{echoed} <html>", content_type="text/json")
        data = {
            "answer": f"you sent {echoed}",
            "retrieved": [{"id": form, "text": f"text {form}"} for form in forms]
            + [{"id": "d0", "text": "the right one"}],
            "citations": forms[:5],
            "timings": {form[:40]: 0.001 for form in forms[:5]},
        }
        return web.json_response(data)

    def _heavy(self, question: str) -> web.StreamResponse:
        n = next(self._counter)
        if question == "q1":
            return web.Response(status=500, text="E" * (3 * 1000 * 1000))
        data = {
            "answer": "A" * (2 * MiB),
            "retrieved": [{"id": f"{i:04d}" + "x" * 996} for i in range(2000)],
            "citations": [1],
            "timings": {f"stage-{n}-{j}": 0.001 for j in range(5)},
        }
        return web.json_response(data)


#: a legal JSON body whose strings hold lone surrogates (``\\ud83d`` without its pair)
SURROGATE_BODY = (
    b'{"answer": "it is fact0 \\ud83d", "retrieved": [{"id": "d0", "text": "ev \\udc00"},'
    b' {"id": "d\\ud800"}], "citations": [1, "x\\udfff"],'
    b' "timings": {"retrieve": 0.001, "gen\\ud83d": 0.002}}'
)


def _static_body(mode: str) -> dict[str, Any]:
    """The ``large`` or ``ids`` body: heavy, but legal in the default contract."""
    data: dict[str, Any] = {
        "answer": "it is fact0",
        "citations": [1],
        "timings": {"retrieve": 0.001, "generate": 0.002},
    }
    if mode == "large":
        data["answer"] = "A" * (2 * MiB)
        data["retrieved"] = [{"id": f"{i:04d}" + "x" * 996} for i in range(2000)]
    else:  # "d0" first, then plain string ids: about 3 MB of JSON
        data["retrieved"] = ["d0", *(str(i) for i in range(1, MANY_IDS))]
    return data

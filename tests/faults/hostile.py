"""A hostile RAG endpoint on loopback: echoes credentials back in every field it can, and
invents a new stage name, a huge answer or a megabyte error for each response.

The endpoint is a :class:`~tests.support.loopback.LoopbackServer` whose handler sees the
whole request (headers and query string), so it echoes what the evaluator really sent, not
what the test thinks it sent. ``mode`` may be switched between runs by the test.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus

from aiohttp import web

from tests.support.loopback import LoopbackServer

__all__ = [
    "ANNOTATION_BODIES",
    "MANY_IDS",
    "MARKER_ANSWERS",
    "STREAM_ATTACKS",
    "SURROGATE_BODY",
    "TINY_EVENTS",
    "HostileEndpoint",
    "MiB",
    "StreamAttack",
    "encodings_of",
]

MiB = 1024 * 1024
#: ids in an ``ids`` response: the count that once stalled /healthz for seconds
MANY_IDS = 350_000
#: the ``tiny`` mode's empty events before its answer (190,000 once held /healthz for 1.25 s)
TINY_EVENTS = 190_000


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
        # what services really write: HTML entities, \\u escaping of every character, Go's
        # JSON, encodeURIComponent, hex, case changes
        html.escape(value),
        "".join(f"&#{ord(c)};" for c in value),
        "".join(f"\\u{ord(c):04x}" for c in value),
        escaped.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"),
        quote(value, safe="!~*'()"),
        raw.hex(),
        value.upper(),
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
    string inside an emoji), ``tiny`` (:data:`TINY_EVENTS` empty server-sent events, then
    an OpenAI-compatible answer ending at ``[DONE]``, about 1.9 MB sent at once: a
    ``stream = true`` target frames them all).

    The ``large``, ``ids`` and ``tiny`` bodies are the same for every response: they are
    encoded once, so serving them costs this process (and the tests' pollers sharing its
    interpreter) next to nothing."""

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
        if mode == "tiny":
            if mode not in self._encoded:
                self._encoded[mode] = _tiny_events()
            return web.Response(body=self._encoded[mode], content_type="text/event-stream")
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


# --- streams, inline citation markers and annotations --------------------------------------
#
# Building blocks for the parsers of stream termination (:mod:`evaluator.targets.streaming`),
# inline markers (:mod:`evaluator.targets.markers`) and annotation mappings, each with the
# outcome an invariant checks. Served by :class:`tests.support.streams.StreamServer` in
# ``tests/faults/test_hostile_streams.py``; the generated fuzz tier draws from them too.


@dataclass(frozen=True)
class StreamAttack:
    """An OpenAI-compatible stream (``openai-chat``, ``stream = true``): the body's chunks,
    the pause before each (``hold``: seconds the connection then stays open without a byte),
    and the error kind the case must end in (None: scored)."""

    chunks: tuple[bytes, ...]
    kind: str | None
    hold: float = 0.0
    #: ``[targets.streaming]`` keys over the preset's
    streaming: tuple[tuple[str, str], ...] = ()


def _chunk(content: str | None = None, finish: Any = None, **more: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    event = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": None,
        **more,
    }
    return f"data: {json.dumps(event)}\n\n".encode()


_FINISH = _chunk(None, "stop", sources=[{"id": "d0"}])
_PIECES = (_chunk("it is "), _chunk("fact0"))


def _tiny_events() -> bytes:
    """The ``tiny`` mode's stream: :data:`TINY_EVENTS` empty events, then the answer."""
    return b"data: {}\n\n" * TINY_EVENTS + b"".join((*_PIECES, _FINISH, b"data: [DONE]\n\n"))


STREAM_ATTACKS: dict[str, StreamAttack] = {
    # how real servers end a stream: a complete answer
    "finish-without-done": StreamAttack((*_PIECES, _FINISH), None),
    "done-held-open": StreamAttack((*_PIECES, _FINISH, b"data: [DONE]\n\n"), None, hold=5.0),
    "done-then-garbage": StreamAttack((*_PIECES, _FINISH, b"data: [DONE]\n\n{{{not json"), None),
    "finish-on-every-chunk": StreamAttack(
        (_chunk("it is ", "stop", sources=[{"id": "d0"}]), _chunk("fact0", "stop")), None
    ),
    "last-event-without-blank-line": StreamAttack((*_PIECES, _FINISH.rstrip(b"\n")), None),
    "crlf-split-across-chunks": StreamAttack(
        # each line end a CRLF whose CR ends one chunk and LF starts the next
        tuple(part for c in (*_PIECES, _FINISH) for part in (c.replace(b"\n\n", b"\r"), b"\n\r\n")),
        None,
    ),
    "one-byte-chunks": StreamAttack(tuple(bytes([b]) for b in b"".join((*_PIECES, _FINISH))), None),
    "many-tiny-events": StreamAttack(
        (*(_chunk("f") for _ in range(5000)), _chunk("act0"), _FINISH), None
    ),
    "long-line-in-small-chunks": StreamAttack(
        tuple(
            line[i : i + 16]
            for line in (_chunk("x" * 256 * 1024), *_PIECES, _FINISH)
            for i in range(0, len(line), 16)
        ),
        None,
    ),
    "usage-null-everywhere": StreamAttack((*_PIECES, _FINISH, _chunk(usage=None)), None),
    "sources-with-the-first-chunk": StreamAttack(
        (_chunk("it is ", sources=[{"id": "d0"}]), _chunk("fact0"), _chunk(None, "stop")), None
    ),
    # cuts: never a scored answer
    "closed-before-finish": StreamAttack(_PIECES, "stream_interrupted"),
    "closed-inside-an-event": StreamAttack(
        (*_PIECES, _FINISH, b'data: {"choices": [], "usage": {"prompt_tok'), "stream_interrupted"
    ),
    "closed-before-any-event": StreamAttack((b": keep-alive\n\n",), "stream_interrupted"),
    "finish-reason-not-a-string": StreamAttack(
        (*_PIECES, _chunk(None, {"deep": [1, 2]}, sources=[{"id": "d0"}])),
        None,
    ),
    # SSE framing by event name (LangServe's event: end)
    "named-end-event-held-open": StreamAttack(
        (*_PIECES, b"event: end\r\n\r\n", _chunk("not part of the answer")),
        None,
        hold=5.0,
        streaming=(("done_event", "end"), ("done", "")),
    ),
    "named-end-event-unterminated": StreamAttack(
        (*_PIECES, b"event: end\n"), None, streaming=(("done_event", "end"), ("done", ""))
    ),
    "named-end-event-never-sent": StreamAttack(
        _PIECES, "stream_interrupted", streaming=(("done_event", "end"), ("done", ""))
    ),
    "content-not-a-string": StreamAttack(
        (_chunk(), b'data: {"choices": [{"delta": {"content": [1]}}]}\n\n', _FINISH),
        "bad_response",
    ),
}

#: answers for the inline marker styles: each must give at most MAX_MARKERS citations,
#: positions below 10**6, ids of at most 200 characters, in linear time
MARKER_ANSWERS: dict[str, str] = {
    "a-million-markers": "[1]" * 1_000_000,
    "open-brackets": "[" * 1_000_000,
    "full-width-unclosed": "【" * 500_000,
    "footnotes-unclosed": "[^" * 500_000,
    "one-long-list": "[" + "1, " * 200_000 + "1]",
    "nested": "[" * 1000 + "1" + "]" * 1000,
    "huge-number": "[" + "9" * 10_000 + "]",
    "long-id": "[" + "a" * 100_000 + "]",
    "markdown-links": "[text](http://x) " * 100_000,
    "mixed-scripts": "【1†source】[^2][3, 4]【٣】[５]" * 10_000,
    "lone-surrogate": "answer \ud800 [1]",
    "controls": "\x1b[2J[1]\x00[2]\n[3]",
}

#: chat completions bodies whose annotations are hostile, mapped with
#: ``citations = "choices[0].message.annotations[].url_citation.url"``: error kind or None
ANNOTATION_BODIES: dict[str, tuple[Any, str | None]] = {
    "annotations-null": ({"annotations": None}, "bad_response"),
    "annotations-not-a-list": ({"annotations": {"url_citation": {"url": "d0"}}}, "bad_response"),
    "annotation-without-url": ({"annotations": [{"type": "url_citation"}]}, "bad_response"),
    "url-a-number": ({"annotations": [{"url_citation": {"url": 7}}]}, None),
    "url-an-object": ({"annotations": [{"url_citation": {"url": {"a": 1}}}]}, "bad_response"),
    "many-annotations": (
        {"annotations": [{"url_citation": {"url": "d0"}}] * 100_000},
        None,
    ),
    "deep-annotation": ({"annotations": [{"url_citation": {"url": "d0", "x": [[[[[]]]]]}}]}, None),
}

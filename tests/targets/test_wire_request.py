"""What an HTTP target puts on the wire, seen raw by a loopback server: the request line,
every header in order (constant, per-request and secret ones) and the body."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from unittest import mock

import jmespath
import pytest
from aiohttp import web

from evaluator._version import __version__
from evaluator.models import Dialogue
from evaluator.targets import http
from evaluator.targets.conversation import ConversationIds
from evaluator.targets.http import HttpTarget
from evaluator.targets.request import RequestTemplate
from tests.support.loopback import ThreadedApp
from tests.targets.helpers import case

# every test here starts a server: not in `make fast`
pytestmark = pytest.mark.e2e

#: the ids getrandbits gives the trace header in these tests
TRACE, SPAN = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
USER_AGENT = f"evaluator/{__version__}"


@dataclass(frozen=True)
class Seen:
    """One request as it arrived: its request line, raw headers in order and raw body."""

    line: str
    headers: list[tuple[str, str]]
    body: bytes


class RawServer(ThreadedApp):
    """Answers every request with the default contract's empty answer and keeps what it saw."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.port = 0
        self._init_thread()

    @property
    def url(self) -> str:
        """The endpoint's URL."""
        return f"http://127.0.0.1:{self.port}/rag"

    async def _handle(self, request: web.Request) -> web.Response:
        headers = [(name.decode(), value.decode()) for name, value in request.raw_headers]
        body = await request.read()
        self.seen.append(Seen(f"{request.method} {request.raw_path}", headers, body))
        return web.json_response({"answer": "", "retrieved": []})

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/rag", self._handle)


def _sent(target: HttpTarget, server: RawServer, dialogue: Dialogue | None = None) -> Seen:
    """What ``target`` sent for one question (traced with the fixed ids)."""

    async def go() -> None:
        try:
            await target.query(case("refund?"), 5, dialogue)
        finally:
            await target.aclose()

    with mock.patch.object(http, "getrandbits", side_effect=[TRACE, SPAN]):
        asyncio.run(go())
    return server.seen[-1]


def test_default_contract_on_the_wire() -> None:
    """The default contract sends its constant headers, then the trace header, then
    aiohttp's own, and the JSON body."""
    with RawServer() as server:
        seen = _sent(HttpTarget(server.url), server)
    host = f"127.0.0.1:{server.port}"
    expected = Seen(
        "POST /rag",
        [
            ("Host", host),
            ("User-Agent", USER_AGENT),
            ("Accept-Encoding", "gzip, deflate, br"),
            ("Content-Type", "application/json"),
            ("traceparent", TRACEPARENT),
            ("Accept", "*/*"),
            ("Content-Length", "35"),
        ],
        b'{"question": "refund?", "top_k": 5}',
    )
    assert expected == seen


def test_untraced_request_has_only_constant_headers() -> None:
    """Without a trace header a request carries the template's constant headers alone."""
    with RawServer() as server:
        seen = _sent(HttpTarget(server.url, trace_header=None), server)
    assert [
        ("Host", f"127.0.0.1:{server.port}"),
        ("User-Agent", USER_AGENT),
        ("Accept-Encoding", "gzip, deflate, br"),
        ("Content-Type", "application/json"),
        ("Accept", "*/*"),
        ("Content-Length", "35"),
    ] == seen.headers


def test_static_secret_trace_and_conversation_headers_on_the_wire() -> None:
    """Configured headers come after the defaults; the conversation id and the trace header
    follow; the secret header and query parameter are added last, as the request leaves."""
    with RawServer() as server:
        template = RequestTemplate.from_config(
            server.url,
            params={"lang": "en", "api_key": "${WIRE_KEY}"},
            headers={"X-Team": "search", "Authorization": "Bearer ${WIRE_TOKEN}"},
            body={"q": "{question}", "n": "{k}"},
            environ={"WIRE_KEY": "k-wire-1", "WIRE_TOKEN": "t-wire-2"},
        )
        conversation = ConversationIds(
            jmespath.compile("conversation_id"), "header", "X-Conversation"
        )
        target = HttpTarget(server.url, request=template, conversation=conversation)
        seen = _sent(target, server, Dialogue(id="d-1", service_id="svc-7"))
    expected = Seen(
        "POST /rag?lang=en&api_key=k-wire-1",
        [
            ("Host", f"127.0.0.1:{server.port}"),
            ("User-Agent", USER_AGENT),
            ("Accept-Encoding", "gzip, deflate, br"),
            ("X-Team", "search"),
            ("Content-Type", "application/json"),
            ("X-Conversation", "svc-7"),
            ("traceparent", TRACEPARENT),
            ("Authorization", "Bearer t-wire-2"),
            ("Accept", "*/*"),
            ("Content-Length", "24"),
        ],
        b'{"q": "refund?", "n": 5}',
    )
    assert expected == seen


def test_get_request_without_body() -> None:
    """A GET template sends its question in the query and no body headers."""
    with RawServer() as server:
        template = RequestTemplate.from_config(
            server.url, method="GET", params={"q": "{question}", "k": "{k}"}
        )
        seen = _sent(HttpTarget(server.url, request=template, trace_header=None), server)
    expected = Seen(
        "GET /rag?q=refund?&k=5",
        [
            ("Host", f"127.0.0.1:{server.port}"),
            ("User-Agent", USER_AGENT),
            ("Accept-Encoding", "gzip, deflate, br"),
            ("Accept", "*/*"),
        ],
        b"",
    )
    assert expected == seen

"""A scripted RAG endpoint on loopback for tests: real sockets, real timeouts, real failures.

Each request's question picks a :class:`Reply` from a script (a dict or a function), so a
test controls rankings, answers, citations, timings and failures case by case.
The server runs an aiohttp application on its own event loop in a background thread, so
it serves subprocesses (``evaluator run``) and in-process clients alike.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.background import BackgroundServer

__all__ = ["LoopbackServer", "Reply", "ThreadedApp"]


class ThreadedApp(BackgroundServer):
    """An aiohttp application on 127.0.0.1 in a :class:`BackgroundServer`. A subclass
    adds its routes in :meth:`_routes`; ``port`` 0 binds a free port, read back once
    started."""

    def _init_thread(self) -> None:
        super()._init_thread()
        self._runner: web.AppRunner | None = None

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def _ssl_context(self) -> ssl.SSLContext | None:
        return None

    async def _start(self) -> None:
        app = web.Application()
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self._ssl_context())
        await site.start()
        # the bound port (asked for 0): AppRunner.addresses is aiohttp's public way to it
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@dataclass
class Reply:
    """What the endpoint does for one request.

    ``body`` is sent as JSON unless ``raw`` is given. ``delay`` sleeps before answering;
    ``drip`` sends ``raw``/``body`` one byte every ``drip`` seconds; ``reset`` closes the
    connection after the headers and half the body. ``echo_headers`` answers with the
    request's headers and query as JSON (an endpoint that echoes what it got).
    ``stream_bytes`` streams that many filler bytes in 64 KiB chunks, declaring the length
    only when ``declare_length``; the server counts what it managed to send in
    :attr:`LoopbackServer.bytes_streamed` (the total) and :attr:`LoopbackServer.streamed`
    (one entry per reply). Each reply streams its own ``stream_bytes``.
    """

    body: Any = None
    status: int = 200
    delay: float = 0.0
    raw: bytes | None = None
    drip: float = 0.0
    reset: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    echo_headers: bool = False
    stream_bytes: int = 0
    declare_length: bool = False

    def payload(self) -> bytes:
        """The reply's bytes: the raw ones, or the body as JSON."""
        if self.raw is not None:
            return self.raw
        return json.dumps(self.body, ensure_ascii=False).encode()


Script = Callable[[dict[str, Any]], Reply] | Mapping[str, Reply]


class LoopbackServer(ThreadedApp):
    """Start with ``with LoopbackServer(script) as server: server.url``.

    ``port`` 0 (the default) binds a free port; a fixed ``port`` brings a stopped server
    back at the same address (a target that went down and came back).
    """

    def __init__(
        self,
        script: Script,
        path: str = "/rag",
        question_of: Callable[[dict[str, Any]], str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        port: int = 0,
    ) -> None:
        self.script = script
        self.path = path
        self.question_of = question_of
        self.ssl_context = ssl_context
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        #: method and path with query string of every request
        self.request_lines: list[str] = []
        #: bytes of ``stream_bytes`` replies actually written before the client went away
        self.bytes_streamed = 0
        #: bytes written by each ``stream_bytes`` reply, in the order the replies ended
        self.streamed: list[int] = []
        self.port = port
        self._init_thread()

    @property
    def url(self) -> str:
        """The server's URL, its path included."""
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}{self.path}"

    def _reply_for(self, request: dict[str, Any]) -> Reply:
        if callable(self.script):
            return self.script(request)
        if self.question_of is not None:
            question = self.question_of(request)
        else:
            question = str(request.get("question", request.get("q", "")))
        return self.script.get(question, Reply(body={"answer": "", "retrieved": []}))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            payload: dict[str, Any] = dict(request.query)
        else:
            try:
                payload = await request.json()
            except ValueError:
                payload = {}
        self.requests.append(payload)
        self.request_headers.append(dict(request.headers))
        self.request_lines.append(f"{request.method} {request.path_qs}")
        reply = self._reply_for(payload)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.stream_bytes:
            return await self._stream(request, reply)
        data = reply.payload()
        if reply.echo_headers:
            error = (
                f"invalid credentials {request.headers.get('Authorization')} for {request.path_qs}"
            )
            echoed = {"headers": dict(request.headers), "query": dict(request.query)}
            data = json.dumps({"error": error, "request": echoed}).encode()
        if not (reply.drip or reply.reset):
            return web.Response(
                body=data,
                status=reply.status,
                content_type="application/json",
                headers=dict(reply.headers),
            )
        response = web.StreamResponse(status=reply.status, headers=dict(reply.headers))
        response.content_type = "application/json"
        response.content_length = len(data)
        await response.prepare(request)
        if reply.reset:
            await response.write(data[: len(data) // 2])
            transport = request.transport
            if transport is not None:
                transport.abort()
            return response
        try:
            for i in range(len(data)):
                await response.write(data[i : i + 1])
                await asyncio.sleep(reply.drip)
            await response.write_eof()
        except ConnectionError:
            pass  # the client gave up (its deadline): expected in a slow-drip test
        return response

    async def _stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        response = web.StreamResponse(status=reply.status, headers=dict(reply.headers))
        response.content_type = "application/json"
        if reply.declare_length:
            response.content_length = reply.stream_bytes
        await response.prepare(request)
        chunk = b"[" + b"0," * (32 * 1024 - 1)
        sent = 0
        try:
            while sent < reply.stream_bytes:
                await response.write(chunk)
                sent += len(chunk)
                self.bytes_streamed += len(chunk)
        except (ConnectionError, RuntimeError):
            pass  # the client stopped reading: what the test wants to see
        self.streamed.append(sent)
        return response

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", self.path, self._handle)

    def _ssl_context(self) -> ssl.SSLContext | None:
        return self.ssl_context

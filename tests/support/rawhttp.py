"""A loopback server that answers every request with the same raw bytes: for responses no
HTTP framework would send (a bad status line, an invalid chunk, stacked encodings, a header
beyond every limit, a connection closed half-way).

It reads the request's head (and a declared body), writes ``response`` (or, given several,
the next one in turn), and closes the connection. Runs on its own event loop in a background
thread, so it serves subprocesses (``evaluator serve``) and in-process clients alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping, Sequence

from tests.support.background import BackgroundServer

__all__ = ["Piece", "RawServer", "ScriptedRawServer", "http_response"]


def http_response(
    body: bytes, headers: dict[str, str] | None = None, status: str = "200 OK"
) -> bytes:
    """A well-framed HTTP/1.1 response with ``body`` and a Content-Length."""
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class RawServer(BackgroundServer):
    """``with RawServer(b"HTTP/1.1 200 OK\\r\\n...") as server: server.url``; a sequence of
    responses is answered in turn, one per request, starting again after the last."""

    def __init__(self, response: bytes | Sequence[bytes], path: str = "/rag") -> None:
        self._responses = itertools.cycle([response] if isinstance(response, bytes) else response)
        self.path = path
        self.port = 0
        #: requests answered so far
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._init_thread()

    @property
    def url(self) -> str:
        """The server's URL, its path included."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ValueError):
            head = await reader.readuntil(b"\r\n\r\n")
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    await reader.readexactly(int(value))
            self.requests += 1
            writer.write(next(self._responses))
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


Piece = tuple[float, bytes]
"""Bytes written after sleeping that many seconds; the bytes ``b"<hold>"`` instead keep the
connection open, silent, for that many seconds before closing it."""


class ScriptedRawServer(RawServer):
    """Raw bytes per request path, written piece by piece with pauses: a trickle, a stall,
    framing split at any byte. ``script[path]`` gives the pieces of the whole response (status
    line and headers included); an unknown path gets a 404. ``requests_by_path`` counts."""

    def __init__(self, script: Mapping[str, Sequence[Piece]]) -> None:
        super().__init__(b"", path="/")
        self.script = script
        self.requests_by_path: dict[str, int] = {}
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def url_of(self, path: str) -> str:
        """The server's URL of ``path``."""
        return f"http://127.0.0.1:{self.port}{path}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._answer(reader, writer)
        finally:
            self._open.discard(writer)
            if task is not None:
                self._tasks.discard(task)

    async def _stop(self) -> None:
        for writer in list(self._open):  # a held or stalled reply still has its socket
            writer.transport.abort()
        for task in list(self._tasks):  # and a connection the client never used, its task
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await super()._stop()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ValueError):
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            path = lines[0].split(b" ")[1].decode("latin-1").partition("?")[0]
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    await reader.readexactly(int(value))
            self.requests += 1
            self.requests_by_path[path] = self.requests_by_path.get(path, 0) + 1
            pieces = self.script.get(path) or [(0.0, http_response(b"", status="404 Not Found"))]
            for pause, data in pieces:
                if data == b"<hold>":
                    await asyncio.sleep(pause)
                    continue
                if pause:
                    await asyncio.sleep(pause)
                writer.write(data)
                await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

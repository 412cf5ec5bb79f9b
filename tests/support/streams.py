"""Streaming endpoints on loopback: SSE, NDJSON and an OpenAI-compatible chat completions
server whose chunks are spaced in time, so time to first token differs from total time.

Each server runs an aiohttp application on its own event loop in a background thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.loopback import ThreadedApp

__all__ = ["Chunk", "StreamServer", "ndjson", "openai_chunks", "sse"]


@dataclass(frozen=True)
class Chunk:
    """Bytes written after sleeping ``delay`` seconds."""

    delay: float
    data: bytes


def sse(*events: Any, done: bool = False) -> list[bytes]:
    """Each event as one SSE message (``data: <json>``), then ``data: [DONE]`` if asked."""
    out = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    if done:
        out.append(b"data: [DONE]\n\n")
    return out


def ndjson(*events: Any) -> list[bytes]:
    """``events`` as NDJSON lines."""
    return [(json.dumps(e) + "\n").encode() for e in events]


def openai_chunks(
    pieces: Sequence[str], *, sources: Sequence[str] = (), usage: tuple[int, int] | None = None
) -> list[bytes]:
    """An OpenAI chat completions stream: a role chunk, one chunk per piece, the finish
    chunk (with the service's sources, as RAG frameworks add them), a usage chunk, [DONE]."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "rag"}
    events: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    ]
    events += [{**base, "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    events.append(
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "sources": [{"id": s} for s in sources],
        }
    )
    if usage is not None:
        events.append(
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": sum(usage),
                },
                "sources": [{"id": s} for s in sources],
            }
        )
    return sse(*events, done=True)


Script = Callable[[dict[str, Any]], Sequence[Chunk]]


@dataclass
class StreamServer(ThreadedApp):
    """``with StreamServer(script) as server: server.url``; ``script(request_json)`` gives
    the chunks of the reply; ``headers`` are sent with every reply."""

    script: Script
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    path: str = "/v1/chat/completions"
    requests: list[dict[str, Any]] = field(default_factory=list)
    request_headers: list[dict[str, str]] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self._init_thread()

    @property
    def url(self) -> str:
        """The server's URL, its path included."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            payload = await request.json()
        except ValueError:
            payload = {}
        self.requests.append(payload)
        self.request_headers.append(dict(request.headers))
        response = web.StreamResponse(headers=self.headers)
        response.content_type = self.content_type
        await response.prepare(request)
        try:
            for chunk in self.script(payload):
                if chunk.delay:
                    await asyncio.sleep(chunk.delay)
                if chunk.data == b"<cut>":
                    if request.transport is not None:
                        request.transport.abort()
                    return response
                await response.write(chunk.data)
            await response.write_eof()
        except ConnectionError:
            pass  # the client gave up: what a stall test wants
        return response

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", self.path, self._handle)

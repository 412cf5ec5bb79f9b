"""An OTLP/HTTP traces and logs receiver on loopback: decodes each ExportTraceServiceRequest
and ExportLogsServiceRequest.

It stands in for an OpenTelemetry Collector: the protobuf body is parsed with the
protocol's own generated classes (opentelemetry-proto), so a test sees what a collector
would. It runs on its own event loop in a background thread, serving in-process
exporters and ``evaluator serve`` subprocesses alike.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.background import BackgroundServer
from tests.support.loopback import ThreadedApp

__all__ = ["HostileCollector", "OtlpReceiver", "ReceivedEvent", "ReceivedSpan"]


def _value(any_value: Any) -> str | int | float | bool:
    kind = any_value.WhichOneof("value")
    result: str | int | float | bool = getattr(any_value, kind)
    return result


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it (ids as lower-case hex, times in ns)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, str | int | float | bool]
    resource: dict[str, str | int | float | bool]
    status_code: int

    @property
    def seconds(self) -> float:
        """The span's duration in seconds."""
        return (self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True)
class ReceivedEvent:
    """One log record as the receiver decoded it (ids as lower-case hex, empty: none)."""

    event_name: str
    trace_id: str
    span_id: str
    attributes: dict[str, str | int | float | bool]
    resource: dict[str, str | int | float | bool]


class OtlpReceiver(ThreadedApp):
    """``with OtlpReceiver() as receiver: receiver.url`` then ``receiver.spans`` (and the log
    records sent to ``/v1/logs``, ``receiver.events``)."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.spans: list[ReceivedSpan] = []
        self.events: list[ReceivedEvent] = []
        #: requests to /v1/logs (the others count the traces' alone)
        self.log_requests = 0
        self.requests = 0
        self.content_types: list[str] = []
        #: each request's headers, as received
        self.headers: list[dict[str, str]] = []
        self.port = 0
        self._init_thread()

    @property
    def url(self) -> str:
        """The receiver's traces URL."""
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def named(self, name: str) -> list[ReceivedSpan]:
        """The spans received called ``name``."""
        return [s for s in self.spans if s.name == name]

    def children_of(self, span: ReceivedSpan) -> list[ReceivedSpan]:
        """The spans received whose parent is ``span``."""
        return [
            s
            for s in self.spans
            if s.trace_id == span.trace_id and s.parent_span_id == span.span_id
        ]

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        self.content_types.append(request.content_type)
        self.headers.append(dict(request.headers))
        if self.status != 200:
            return web.Response(status=self.status)
        message = ExportTraceServiceRequest()
        raw = await request.read()
        if raw[:2] == b"\x1f\x8b":  # gzip, unless aiohttp inflated it already
            raw = gzip.decompress(raw)
        message.ParseFromString(raw)
        for resource_spans in message.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            resource=resource,
                            status_code=span.status.code,
                        )
                    )
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    async def _handle_logs(self, request: web.Request) -> web.Response:
        # counted apart: the traces' requests, types and headers are the spans' alone
        self.log_requests += 1
        if self.status != 200:
            return web.Response(status=self.status)
        message = ExportLogsServiceRequest()
        raw = await request.read()
        if raw[:2] == b"\x1f\x8b":  # gzip, unless aiohttp inflated it already
            raw = gzip.decompress(raw)
        message.ParseFromString(raw)
        for resource_logs in message.resource_logs:
            resource = {a.key: _value(a.value) for a in resource_logs.resource.attributes}
            for scope in resource_logs.scope_logs:
                for record in scope.log_records:
                    self.events.append(
                        ReceivedEvent(
                            event_name=record.event_name,
                            trace_id=record.trace_id.hex(),
                            span_id=record.span_id.hex(),
                            attributes={a.key: _value(a.value) for a in record.attributes},
                            resource=resource,
                        )
                    )
        body = ExportLogsServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    def _routes(self, app: web.Application) -> None:
        # only the traces and logs paths, as a collector: a POST to the base URL is refused
        app.router.add_post("/v1/traces", self._handle)
        app.router.add_post("/v1/logs", self._handle_logs)
        app.router.add_route("*", "/{tail:.*}", self._not_here)

    async def _not_here(self, _request: web.Request) -> web.Response:
        self.requests += 1
        return web.Response(status=405)


class HostileCollector(BackgroundServer):
    """A collector that misbehaves in one way, on a raw loopback socket.

    ``mode``: ``huge`` answers 200 with a ``body_bytes`` body (declared), streamed as fast
    as the client takes it; ``bomb`` answers 200 with a gzip body that inflates to
    ``body_bytes``; ``trickle`` sends its status line and headers one byte every
    ``trickle`` seconds; ``raw`` sends ``raw`` and closes. :attr:`sent` counts the bytes
    the client took; :attr:`closed` is set once the client hung up.
    """

    def __init__(
        self, mode: str, *, body_bytes: int = 256 << 20, trickle: float = 0.5, raw: bytes = b""
    ) -> None:
        self.mode = mode
        self.raw = raw
        self.body_bytes = body_bytes
        self.trickle = trickle
        self.sent = 0
        self.requests = 0
        self.closed = threading.Event()
        self.port = 0
        self._connections: set[asyncio.Task[None]] = set()
        # compressed before any request: 256 MiB take seconds to deflate, which inside the
        # request would be a slow collector, not a bomb
        self._bomb = gzip.compress(b"\0" * body_bytes, compresslevel=9) if mode == "bomb" else b""
        self._init_thread()

    @property
    def url(self) -> str:
        """The collector's traces URL."""
        return f"http://127.0.0.1:{self.port}/v1/traces"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        self._server.close()
        # a connection still trickling or streaming is ended here, while its loop runs: left
        # to the garbage collector it would close its transport on a closed loop (an
        # unraisable warning in whichever test runs next)
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            self.requests += 1
            await self._answer(writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()
            writer.close()

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.sent += len(data)

    async def _answer(self, writer: asyncio.StreamWriter) -> None:
        if self.mode == "raw":
            await self._send(writer, self.raw)
            return
        if self.mode == "trickle":
            for byte in (
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: " + b"x" * 200 + b"\r\n\r\n"
            ):
                await self._send(writer, bytes([byte]))
                await asyncio.sleep(self.trickle)
            return
        if self.mode == "bomb":
            body = self._bomb
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
                f"Content-Encoding: gzip\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            await self._send(writer, head.encode() + body)
            return
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
            f"Content-Length: {self.body_bytes}\r\n\r\n"
        )
        await self._send(writer, head.encode())
        chunk = b"\0" * (1 << 16)
        for _ in range(self.body_bytes // len(chunk)):
            await self._send(writer, chunk)

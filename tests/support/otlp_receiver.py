"""An OTLP/HTTP traces receiver on loopback: decodes each ExportTraceServiceRequest.

It stands in for an OpenTelemetry Collector: the protobuf body is parsed with the
protocol's own generated classes (opentelemetry-proto), so a test sees what a collector
would. It runs on its own event loop in a background thread, serving in-process
exporters and ``evaluator serve`` subprocesses alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.loopback import ThreadedApp

__all__ = ["OtlpReceiver", "ReceivedSpan"]


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
        return (self.end_ns - self.start_ns) / 1e9


class OtlpReceiver(ThreadedApp):
    """``with OtlpReceiver() as receiver: receiver.url`` then ``receiver.spans``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.content_types: list[str] = []
        self.port = 0
        self._init_thread()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]

    def children_of(self, span: ReceivedSpan) -> list[ReceivedSpan]:
        return [
            s
            for s in self.spans
            if s.trace_id == span.trace_id and s.parent_span_id == span.span_id
        ]

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        self.content_types.append(request.content_type)
        if self.status != 200:
            return web.Response(status=self.status)
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
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

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/traces", self._handle)

"""OTLP/HTTP export of the evaluator's own spans: one per case, its stages as children.

The case span takes the trace id and span id that the case's ``traceparent`` carried, so
the service's server span of that case (its child in W3C terms) nests under it in the
trace backend. The spans are built after the case finished, with explicit start and end
times: nothing is held open across awaits, and a case that sent no ``traceparent`` gets
fresh ids.

The OpenTelemetry SDK (the ``otlp`` extra) does the batching, encoding and sending: a
well-kept implementation of the protocol rather than ours. It is imported only when
export is enabled, so the base install does not need it. A failed export is logged and
counted; it never fails a case or a run.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evaluator.errors import ConfigError
from evaluator.models import CaseRecord
from evaluator.redaction import redactor

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["CASE_SPAN", "CaseSpans", "active", "install", "shutdown"]

#: the name of the span of one golden case (its stages are ``rag_eval.stage <name>``)
CASE_SPAN = "rag_eval.case"
STAGE_SPAN = "rag_eval.stage"


class _SentIds:
    """Gives the next root span the ids a case's ``traceparent`` carried; random otherwise.

    The spans are built synchronously on one thread (the event loop), so a pending pair
    set just before ``start_span`` is the one that span takes.
    """

    def __init__(self) -> None:
        self.pending: tuple[int, int] | None = None

    def generate_trace_id(self) -> int:
        if self.pending is not None:
            return self.pending[0]
        return int.from_bytes(os.urandom(16), "big") or 1

    def generate_span_id(self) -> int:
        if self.pending is not None:
            span_id, self.pending = self.pending[1], None
            return span_id
        return int.from_bytes(os.urandom(8), "big") or 1

    def is_trace_id_random(self) -> bool:
        return True


class _CountingExporter:
    """Wraps the OTLP exporter: counts and logs batches that did not reach the collector."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner
        self._lock = threading.Lock()  # export runs on the batch processor's thread
        self.exported_spans = 0
        self.failed_spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        from opentelemetry.sdk.trace.export import SpanExportResult

        error = None
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # an exporter bug must not kill the processor's thread
            error, result = type(exc).__name__, SpanExportResult.FAILURE
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported_spans += len(spans)
            else:
                self.failed_spans += len(spans)
        if result is not SpanExportResult.SUCCESS:
            import structlog  # only on a failure: a run without OTLP never needs structlog

            structlog.get_logger("evaluator.otlp").warning(
                "otlp_export_failed", spans=len(spans), error=error
            )
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class CaseSpans:
    """Builds and exports the spans of finished cases (BatchSpanProcessor: off the loop)."""

    def __init__(self, endpoint: str, service_name: str, timeout_seconds: float = 5.0) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                "otlp.enabled: OTLP export needs the OpenTelemetry SDK: "
                "pip install 'evaluator[otlp]'"
            ) from exc
        self._ids = _SentIds()
        self.exporter = _CountingExporter(
            OTLPSpanExporter(endpoint=endpoint, timeout=timeout_seconds)
        )
        self._provider: TracerProvider = TracerProvider(
            resource=Resource.create({"service.name": service_name}),
            id_generator=self._ids,  # type: ignore[arg-type]  # duck-typed IdGenerator
        )
        self._provider.add_span_processor(BatchSpanProcessor(self.exporter))  # type: ignore[arg-type]
        self._tracer = self._provider.get_tracer("evaluator")

    def record(
        self,
        record: CaseRecord,
        *,
        span_id: str | None,
        start_ns: int,
        end_ns: int,
        attributes: Mapping[str, str | int],
    ) -> None:
        """Export ``record``'s case span (ids from its ``traceparent``) and stage spans.

        The stage spans are laid end to end from the case's start, in the order the
        service reported them: a target reports how long each stage took, not when.
        """
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        redact = redactor()
        attrs: dict[str, Any] = {
            f"rag_eval.{key}": redact.redact_text(v) if isinstance(v, str) else v
            for key, v in attributes.items()
        }
        attrs["rag_eval.case_id"] = redact.redact_text(record.id)
        attrs["rag_eval.attempts"] = record.attempts
        attrs["rag_eval.outcome"] = "error" if record.error is not None else "ok"
        if record.error is not None:
            attrs["rag_eval.error_kind"] = record.error.kind
        if record.trace_id is not None and span_id is not None:
            self._ids.pending = (int(record.trace_id, 16), int(span_id, 16))
        try:
            span = self._tracer.start_span(CASE_SPAN, attributes=attrs, start_time=start_ns)
        finally:
            self._ids.pending = None
        if record.error is not None:
            span.set_status(Status(StatusCode.ERROR, record.error.kind))
        parent = trace.set_span_in_context(span)
        at = start_ns
        for stage, seconds in record.stage_seconds.items():
            length = max(0, round(seconds * 1e9))
            child = self._tracer.start_span(
                f"{STAGE_SPAN} {stage}",
                context=parent,
                attributes={"rag_eval.stage": stage},
                start_time=at,
            )
            child.end(end_time=at + length)
            at += length
        span.end(end_time=end_ns)

    def shutdown(self) -> None:
        """Send what is queued (bounded by the exporter's timeout), then stop."""
        self._provider.shutdown()


_active: CaseSpans | None = None


def install(
    *, enabled: bool, endpoint: str, service_name: str, timeout_seconds: float = 5.0
) -> CaseSpans | None:
    """Start the process's span export when ``enabled`` (replacing an earlier one)."""
    global _active
    shutdown()
    if enabled:
        # the SDK logs each failed export with a traceback on its own logger; ours says it once
        logging.getLogger("opentelemetry.exporter.otlp").setLevel(logging.CRITICAL)
        _active = CaseSpans(endpoint, service_name, timeout_seconds)
    return _active


def active() -> CaseSpans | None:
    """The installed export, if any (the runner records each finished case into it)."""
    return _active


def shutdown() -> None:
    """Flush and stop the installed export, if any."""
    global _active
    spans, _active = _active, None
    if spans is not None:
        spans.shutdown()

"""OTLP/HTTP export of each case's scores as ``gen_ai.evaluation.result`` events: log
records of the OpenTelemetry GenAI semantic conventions, tied to the case's span (its trace
id and span id), so a tool that reads those conventions shows the evaluator's scores beside
the service's own traces.

The deterministic scores go out as each case's span is built (:class:`~evaluator.run.otlp.
CaseSpans`); the judged ones after the judge has judged the run, from the report, which
keeps each case's trace and span ids (:mod:`evaluator.run.judged_telemetry`). The SDK's
logs pipeline does the batching and the protobuf encoding; the sending is the spans' own
bounded sender
(:class:`~evaluator.run.otlp.BoundedExporter`), to the logs URL beside the traces one. Every
text attribute passes the redactor and an explanation is cut to
:data:`~evaluator.run.evaluation_results.MAX_EXPLANATION_CHARS`; a failed export is counted
and logged like a span's, and never fails a case, a run or the daemon.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evaluator.judge.record import JudgedRun
from evaluator.models import CaseRecord
from evaluator.redaction import redactor
from evaluator.run.evaluation_results import (
    EVENT_NAME,
    MAX_EXPLANATION_CHARS,
    EvaluationResult,
    judged_results,
)
from evaluator.run.otlp import BoundedExporter, CountingExporter

__all__ = ["CountingLogExporter", "EvaluationEvents", "logs_url", "span_context", "span_ids"]

LOGS_PATH = "/v1/logs"
_HEX_TRACE = re.compile(r"[0-9a-f]{32}")
_HEX_SPAN = re.compile(r"[0-9a-f]{16}")
#: bounds of one event's own attributes (the run's are bounded where they are made)
_MAX_ATTRIBUTE_CHARS = 200


def logs_url(traces_url: str) -> str:
    """The collector's logs URL beside its traces URL: ``/v1/traces`` becomes ``/v1/logs``
    (any other path gets ``/v1/logs`` in its place, as a collector serves both there)."""
    parts = urlsplit(traces_url)
    path = parts.path
    base = path[: -len("/v1/traces")] if path.endswith("/v1/traces") else ""
    return urlunsplit(parts._replace(path=base + LOGS_PATH))


class CountingLogExporter(CountingExporter):
    """The SDK's log-exporter face of the bounded sender (log records encoded as OTLP
    logs), counted and logged like the spans' (``exported_spans`` counts records here)."""

    signal = "records"

    def _encoded(self, items: Sequence[Any]) -> bytes:
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

        encoded: bytes = encode_logs(items).SerializePartialToString()
        return encoded

    def _result(self, ok: bool) -> Any:
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE


def span_ids(trace_id: str | None, span_id: str | None) -> tuple[int, int] | None:
    """The ids as integers when both are well-formed and not zero (a report is outside
    input: anything else ties the event to no span)."""
    if trace_id is None or span_id is None:
        return None
    if not (_HEX_TRACE.fullmatch(trace_id) and _HEX_SPAN.fullmatch(span_id)):
        return None
    ids = int(trace_id, 16), int(span_id, 16)
    return ids if all(ids) else None


def _attributes(
    result: EvaluationResult, common: Mapping[str, str | int]
) -> dict[str, str | int | float]:
    """The event's attributes, every text redacted and bounded."""
    redact = redactor()
    out: dict[str, str | int | float] = {}
    for key, value in {**common, **result.attributes()}.items():
        if isinstance(value, str):
            limit = (
                MAX_EXPLANATION_CHARS
                if key == "gen_ai.evaluation.explanation"
                else _MAX_ATTRIBUTE_CHARS
            )
            value = redact.redact_text(value)[:limit]
        out[key] = value
    return out


class EvaluationEvents:
    """Emits evaluation results as OTLP log records (BatchLogRecordProcessor: off the loop)."""

    def __init__(
        self,
        url: str,
        service_name: str,
        timeout_seconds: float,
        *,
        headers: Mapping[str, str] | None = None,
        compression: str = "none",
    ) -> None:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        self.url = url
        self.timeout_seconds = timeout_seconds
        self.exporter = CountingLogExporter(
            BoundedExporter(
                url, timeout_seconds=timeout_seconds, headers=headers, compression=compression
            )
        )
        self._provider = LoggerProvider(
            resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
        )
        self._provider.add_log_record_processor(BatchLogRecordProcessor(self.exporter))  # type: ignore[arg-type]
        self._logger = self._provider.get_logger("evaluator")

    def emit(
        self,
        results: Iterable[EvaluationResult],
        *,
        ids: tuple[int, int] | None,
        attributes: Mapping[str, str | int],
    ) -> None:
        """One event per result, tied to the span of ``ids`` (trace id, span id; None:
        untied). Never raises: an event that cannot be built is counted and logged."""
        try:
            context = span_context(ids)
            for result in results:
                self._logger.emit(
                    event_name=EVENT_NAME,
                    attributes=_attributes(result, attributes),
                    context=context,
                )
        except Exception as exc:
            self.exporter.count_failure("exporter_exception", f"{type(exc).__name__}: {exc}")

    def judged(self, records: Sequence[CaseRecord], judged: JudgedRun, run_id: str) -> None:
        """Each judged case's results, tied to its case span by the ids the report kept."""
        by_id = {r.id: r for r in records}
        for case in judged.cases:
            record = by_id.get(case.case_id)
            self.emit(
                judged_results(case),
                ids=None if record is None else span_ids(record.trace_id, record.span_id),
                attributes={"rag_eval.case_id": case.case_id, "rag_eval.run_id": run_id},
            )

    def shutdown(self) -> None:
        """Send what is queued, then stop, bounded as the spans' export is."""
        done = threading.Thread(target=self._provider.shutdown, daemon=True)
        done.start()
        done.join(2 * self.timeout_seconds + 0.5)
        self.exporter.quiet = True


def span_context(ids: tuple[int, int] | None) -> Any:
    """A context whose current span is the case span of ``ids`` (trace id, span id; None:
    no span to tie to)."""
    if ids is None:
        return None
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    span = NonRecordingSpan(
        SpanContext(ids[0], ids[1], is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    )
    return trace.set_span_in_context(span)

"""OTLP/HTTP export of the evaluator's own spans: one per case, its stages as children.

The case span takes the trace id and span id that the case's ``traceparent`` carried, so
the service's server span of that case (its child in W3C terms) nests under it in the
trace backend. The spans are built after the case finished, with explicit start and end
times: nothing is held open across awaits, and a case that sent no ``traceparent`` gets
fresh ids.

The OpenTelemetry SDK (the ``otlp`` extra) does the batching and the protobuf encoding:
a well-kept implementation of the protocol rather than ours. The sending is ours
(:class:`BoundedExporter`), bounded as the target client is: the deadline covers the whole
request and a collector's answer body is never read, where the SDK's exporter reads it
whole (a 2 GiB body, a gzip bomb) and restarts its timeout on every byte. The SDK is
imported only when export is enabled, so the base install does not need it. A failed
export is logged (kind, status, URL) and counted by kind; it never fails a case or a run.
"""

from __future__ import annotations

import gzip
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlsplit, urlunsplit

from evaluator import border, process_state
from evaluator.errors import ConfigError
from evaluator.models import CaseRecord
from evaluator.redaction import redactor, register_secrets
from evaluator.targets.templates import resolve_env

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

    from evaluator.judge.judged_pass import CallEvent
    from evaluator.run.otlp_events import EvaluationEvents

__all__ = [
    "CASE_SPAN",
    "DEFAULT_ENDPOINT",
    "FAILURE_KINDS",
    "BoundedExporter",
    "CaseSpans",
    "ExportFailed",
    "active",
    "events_for",
    "install",
    "parse_env_headers",
    "resolve",
    "shutdown",
    "traces_url",
]

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


#: the standard variables read when a setting is left at its default (OpenTelemetry's own
#: names: the signal-specific one wins over the generic one, as in its exporters)
ENV_ENDPOINT = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
ENV_HEADERS = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
ENV_COMPRESSION = ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")
ENV_TIMEOUT = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
DEFAULT_ENDPOINT = "http://127.0.0.1:4318/v1/traces"
DEFAULT_SERVICE_NAME = "rag-evaluator"
DEFAULT_TIMEOUT_SECONDS = 5.0
TRACES_PATH = "/v1/traces"
#: the status line and headers of a collector's answer, at most (its body is never read)
MAX_RESPONSE_HEAD_BYTES = 16 * 1024
#: the failure kinds counted (``rag_eval_otlp_export_errors_total{kind}``)
FAILURE_KINDS = ("connect", "timeout", "http_status", "bad_response", "exporter_exception")


class ExportFailed(Exception):
    """One export request failed: ``kind`` (``FAILURE_KINDS``), and what is known."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


def traces_url(endpoint: str, *, base: bool = False) -> str:
    """The URL spans are POSTed to: a base URL (no path, or ``base``) gets ``/v1/traces``,
    as OpenTelemetry's exporters do with ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
    parts = urlsplit(endpoint)
    if base or parts.path in ("", "/"):
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + TRACES_PATH))
    return endpoint


def parse_env_headers(value: str) -> dict[str, str]:
    """``key1=value1,key2=value2`` (values percent-encoded), the OTLP headers variable."""
    headers: dict[str, str] = {}
    for item in value.split(","):
        name, sep, raw = item.partition("=")
        if sep and name.strip():
            headers[unquote(name.strip())] = unquote(raw.strip())
    return headers


def _read_head(sock: socket.socket, deadline: float) -> bytes:
    """The status line and headers, within ``deadline`` (monotonic) and the size cap."""
    data = b""
    while b"\r\n\r\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ExportFailed("timeout", "no complete answer within the deadline")
        sock.settimeout(remaining)  # each read waits only what is left of the whole deadline
        chunk = sock.recv(4096)
        if not chunk:
            raise ExportFailed("bad_response", "the collector closed before answering")
        data += chunk
        if len(data) > MAX_RESPONSE_HEAD_BYTES:
            raise ExportFailed("bad_response", "the answer's headers exceed 16 KiB")
    return data


class BoundedExporter:
    """Sends spans to an OTLP/HTTP collector, bounded as the target client is.

    One request per batch on a fresh connection, protobuf-encoded by the SDK's encoder;
    the deadline covers the whole request (connect, send, the status line); the answer's
    body is never read (OTLP's partial-success detail is not worth a collector's 2 GiB),
    so a huge body or a gzip bomb costs nothing.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_seconds: float,
        headers: Mapping[str, str] | None = None,
        compression: str = "none",
    ) -> None:
        self.url = url
        self.timeout_seconds = timeout_seconds
        self.headers = dict(headers or {})
        self.compression = compression
        parts = urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._host_header = parts.netloc.rpartition("@")[2]

    def send(self, body: bytes) -> None:
        """POST one encoded batch. Raises ExportFailed."""
        deadline = time.monotonic() + self.timeout_seconds
        if self.compression == "gzip":
            body = gzip.compress(body, compresslevel=6)
        head = self._exchange(self._request(body), deadline)
        _check_status(head)

    def _request(self, body: bytes) -> bytes:
        """The whole HTTP/1.1 request for an (encoded, perhaps compressed) batch."""
        lines = [
            f"POST {self._target} HTTP/1.1",
            f"Host: {self._host_header}",
            "Content-Type: application/x-protobuf",
            f"Content-Length: {len(body)}",
            "Connection: close",
            "User-Agent: rag-evaluator",
        ]
        if self.compression == "gzip":
            lines.append("Content-Encoding: gzip")
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def _exchange(self, request: bytes, deadline: float) -> bytes:
        """Connect (TLS for https), send ``request`` and read the answer's head, all before
        ``deadline``. Raises ExportFailed (timeout, connect)."""
        try:
            sock = socket.create_connection((self._host, self._port), timeout=self.timeout_seconds)
        except TimeoutError as exc:
            raise ExportFailed("timeout", "connect timed out") from exc
        except OSError as exc:
            raise ExportFailed("connect", exc.strerror or str(exc)) from exc
        try:
            if self._tls:
                context = ssl.create_default_context()
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                sock = context.wrap_socket(sock, server_hostname=self._host)
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(request)
            return _read_head(sock, deadline)
        except TimeoutError as exc:
            raise ExportFailed("timeout", "no complete answer within the deadline") from exc
        except ssl.SSLError as exc:
            raise ExportFailed("connect", f"TLS: {exc.reason or exc}") from exc
        except OSError as exc:
            raise ExportFailed("connect", exc.strerror or str(exc)) from exc
        finally:
            sock.close()


def _check_status(head: bytes) -> None:
    """Raise ExportFailed unless the answer's status line is a 2xx (bad_response when it is
    no HTTP status line, http_status otherwise)."""
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1", "replace")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise ExportFailed("bad_response", f"not an HTTP status line: {status_line[:80]!r}")
    status = int(fields[1])
    if not 200 <= status < 300:
        hint = " (is it the traces URL, ending in /v1/traces?)" if status in (404, 405) else ""
        raise ExportFailed("http_status", f"HTTP {status}{hint}", status)


class CountingExporter:
    """The SDK's span-exporter face of :class:`BoundedExporter`: encodes each batch, counts
    and logs those that did not reach the collector (by kind, with the status and URL).
    :class:`evaluator.run.otlp_events.CountingLogExporter` is its face for log records."""

    #: what one exported item is, in the failure's log line
    signal = "spans"

    def __init__(self, inner: BoundedExporter) -> None:
        self._inner = inner
        #: held while counting: export runs on the batch processor's thread, scrapes elsewhere
        self.lock = threading.Lock()
        self.exported_spans = 0
        self.failed_spans = 0
        #: failed requests by kind (``FAILURE_KINDS``)
        self.failures: dict[str, int] = {}
        #: set once the export was shut down: a request still going then is counted but not
        #: logged, so no warning lands in the middle of what ``run`` prints after it
        self.quiet = False

    def _encoded(self, items: Sequence[Any]) -> bytes:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        encoded: bytes = encode_spans(items).SerializePartialToString()
        return encoded

    def _result(self, ok: bool) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def export(self, items: Sequence[Any]) -> Any:
        """Send one batch; count it, and log a failure (its kind, status and URL)."""
        failure: ExportFailed | None = None
        try:
            self._inner.send(self._encoded(items))
        except ExportFailed as exc:
            failure = exc
        except Exception as exc:  # an exporter bug must not kill the processor's thread
            failure = ExportFailed("exporter_exception", f"{type(exc).__name__}: {exc}")
        with self.lock:
            if failure is None:
                self.exported_spans += len(items)
            else:
                self.failed_spans += len(items)
                self.failures[failure.kind] = self.failures.get(failure.kind, 0) + 1
        if failure is not None and not self.quiet:
            import structlog  # only on a failure: a run without OTLP never needs structlog

            structlog.get_logger("evaluator.run.otlp").warning(
                "otlp_export_failed",
                **{self.signal: len(items)},
                error_kind=failure.kind,
                status=failure.status,
                url=redactor().redact_text(self._inner.url),
                error=redactor().redact_text(str(failure)),
            )
        return self._result(failure is None)

    def count_failure(self, kind: str, message: str) -> None:
        """A span lost before any request (it could not be built): counted and logged."""
        with self.lock:
            self.failed_spans += 1
            self.failures[kind] = self.failures.get(kind, 0) + 1
        import structlog

        structlog.get_logger("evaluator.run.otlp").warning(
            "otlp_export_failed", spans=1, error_kind=kind, error=redactor().redact_text(message)
        )

    def shutdown(self) -> None:
        """Nothing to stop: each batch is sent on a connection of its own."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # nothing buffered here: the batch processor holds the queue


class CaseSpans:
    """Builds and exports the spans of finished cases (BatchSpanProcessor: off the loop)."""

    def __init__(
        self,
        endpoint: str,
        service_name: str,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        *,
        headers: Mapping[str, str] | None = None,
        compression: str = "none",
        events: EvaluationEvents | None = None,
    ) -> None:
        #: each case's scores as gen_ai.evaluation.result events, when they are exported
        self.events = events
        try:
            from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                "otlp.enabled: OTLP export needs the OpenTelemetry SDK: "
                "pip install 'evaluator[otlp]'"
            ) from exc
        del encode_spans  # imported above only to fail early without the SDK
        self._ids = _SentIds()
        self.timeout_seconds = timeout_seconds
        self.exporter = CountingExporter(
            BoundedExporter(
                endpoint, timeout_seconds=timeout_seconds, headers=headers, compression=compression
            )
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
        Never raises: a span that cannot be built is counted (``exporter_exception``) and
        logged, and the case goes on as measured.
        """
        try:
            span = self._case_span(record, span_id, start_ns, attributes)
            self._stage_spans(span, record.stage_seconds, start_ns)
            span.end(end_time=end_ns)
            if self.events is not None:
                # here, not at the top: a run without events never loads the score tables
                from evaluator.run.evaluation_results import deterministic_results

                context = span.get_span_context()
                self.events.emit(
                    deterministic_results(record),
                    ids=(context.trace_id, context.span_id),
                    attributes={"rag_eval.case_id": record.id, **_run_of(attributes)},
                )
        except Exception as exc:
            self._ids.pending = None
            self.exporter.count_failure("exporter_exception", f"{type(exc).__name__}: {exc}")

    def _case_span(
        self,
        record: CaseRecord,
        span_id: str | None,
        start_ns: int,
        attributes: Mapping[str, str | int],
    ) -> Span:
        """The case's span, started with the trace and span ids its request carried, its
        attributes redacted, its status an error for a failed case."""
        from opentelemetry.trace import Status, StatusCode

        attrs = _case_attributes(record, attributes)
        if record.trace_id is not None and span_id is not None:
            self._ids.pending = (int(record.trace_id, 16), int(span_id, 16))
        try:
            span = self._tracer.start_span(CASE_SPAN, attributes=attrs, start_time=start_ns)
        finally:
            self._ids.pending = None
        if record.error is not None:
            span.set_status(Status(StatusCode.ERROR, record.error.kind))
        return span

    def _stage_spans(self, case: Span, stages: Mapping[str, float], start_ns: int) -> None:
        """One child span per reported stage, laid end to end from the case's start."""
        from opentelemetry import trace

        parent = trace.set_span_in_context(case)
        at = start_ns
        for stage, seconds in stages.items():
            length = max(0, round(seconds * 1e9))
            child = self._tracer.start_span(
                f"{STAGE_SPAN} {stage}",
                context=parent,
                attributes={"rag_eval.stage": stage},
                start_time=at,
            )
            child.end(end_time=at + length)
            at += length

    def judge_calls(
        self, records: Sequence[CaseRecord], run_id: str
    ) -> Callable[[CallEvent], None]:
        """What makes each judge call of a judged run of ``records`` a span under the case
        span it judged, as the call ends. It never raises: a span that cannot be built is
        counted (``exporter_exception``) and logged."""
        # here, not at the top: a run without a judge never loads the judge's telemetry
        from evaluator.run.judged_telemetry import JudgeCallSpans

        spans = JudgeCallSpans(self._tracer, records, run_id)

        def record(event: CallEvent) -> None:
            try:
                spans(event)
            except Exception as exc:
                self.exporter.count_failure("exporter_exception", f"{type(exc).__name__}: {exc}")

        return record

    def shutdown(self) -> None:
        """Send what is queued, then stop: bounded by twice the export deadline whatever the
        collector does (the SDK would wait 30 s); spans still queued then are lost."""
        done = threading.Thread(target=self._provider.shutdown, daemon=True)
        done.start()
        done.join(2 * self.timeout_seconds + 0.5)
        self.exporter.quiet = True
        if self.events is not None:
            self.events.shutdown()


def _run_of(attributes: Mapping[str, str | int]) -> dict[str, str | int]:
    """The run id of a case span's attributes, as an event's ``rag_eval.run_id``."""
    run_id = attributes.get("run_id")
    return {} if run_id is None else {"rag_eval.run_id": run_id}


def _case_attributes(record: CaseRecord, attributes: Mapping[str, str | int]) -> dict[str, Any]:
    """The case span's attributes: the run's (redacted) and the case's id, attempts and
    outcome (and error kind)."""
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
    return attrs


def _from_env(names: Sequence[str]) -> tuple[str, str] | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def resolve(
    *,
    endpoint: str = DEFAULT_ENDPOINT,
    service_name: str = DEFAULT_SERVICE_NAME,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    headers: Mapping[str, str] | None = None,
    compression: str = "none",
) -> dict[str, Any]:
    """The export's settings (:class:`CaseSpans`' arguments): each left at its default gives
    way to OpenTelemetry's standard variable (``OTEL_EXPORTER_OTLP_*``,
    ``OTEL_SERVICE_NAME``); ``${ENV}`` in header values resolved, and every header value
    registered as a secret.

    Raises:
        ConfigError: naming the setting or variable.
    """
    url = traces_url(endpoint) if endpoint != DEFAULT_ENDPOINT else _endpoint_from_env()
    if service_name == DEFAULT_SERVICE_NAME:
        service_name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or service_name
    if timeout_seconds == DEFAULT_TIMEOUT_SECONDS:
        timeout_seconds = _timeout_from_env()
    if compression == "none":
        compression = _compression_from_env()
    resolved = _headers(headers)
    return {
        "endpoint": url,
        "service_name": service_name,
        "timeout_seconds": timeout_seconds,
        "headers": resolved,
        "compression": compression,
    }


def _endpoint_from_env() -> str:
    """The traces URL from ``OTEL_EXPORTER_OTLP_*`` (the generic variable is a base URL, the
    traces one is used as it is), else the default. Raises ConfigError."""
    found = _from_env(ENV_ENDPOINT)
    if found is None:
        return traces_url(DEFAULT_ENDPOINT)
    url = traces_url(found[1], base=found[0] == ENV_ENDPOINT[1])
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{found[0]}: {found[1]!r} must start with http:// or https://")
    return url


def _timeout_from_env() -> float:
    """The export deadline from ``OTEL_EXPORTER_OTLP_*TIMEOUT`` (milliseconds), else the
    default. Raises ConfigError."""
    found = _from_env(ENV_TIMEOUT)
    if found is None:
        return DEFAULT_TIMEOUT_SECONDS
    try:
        millis = float(found[1])
    except ValueError:
        raise ConfigError(f"{found[0]}: {found[1]!r} is not milliseconds") from None
    if not 0 < millis <= 3_600_000:
        raise ConfigError(f"{found[0]}: {found[1]!r} must be in (0, 3600000] ms")
    return millis / 1000


def _compression_from_env() -> str:
    """``gzip`` or ``none`` from ``OTEL_EXPORTER_OTLP_*COMPRESSION``, else ``none``. Raises
    ConfigError."""
    found = _from_env(ENV_COMPRESSION)
    if found is None:
        return "none"
    if found[1] not in ("gzip", "none"):
        raise ConfigError(f"{found[0]}: {found[1]!r}: expected gzip or none")
    return found[1]


def _headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The export's headers: the configured ones with ``${ENV}`` resolved, else those of
    ``OTEL_EXPORTER_OTLP_*HEADERS``; each passes the border's rule for a header, and every
    value (and every environment value read) is registered as a secret. Raises ConfigError."""
    resolved: dict[str, str] = {}
    read: list[str] = []  # the values read from the environment: secrets on their own too
    if not headers:
        found = _from_env(ENV_HEADERS)
        if found is not None:
            resolved = parse_env_headers(found[1])
    else:
        resolved = {k: resolve_env(v, f"otlp.headers.{k}", found=read) for k, v in headers.items()}
    for name, value in resolved.items():
        # the border's rule for a header, as for a target's (control characters, a name
        # that is no token, bytes of the environment that are not UTF-8)
        problem = border.header_problem(name, value)
        if problem is not None:
            raise ConfigError(
                f"otlp.headers.{name}: a header name or value cannot be sent: {problem}"
            )
    register_secrets([v for v in [*resolved.values(), *read] if v])
    return resolved


def install(
    *,
    enabled: bool,
    endpoint: str = DEFAULT_ENDPOINT,
    service_name: str = DEFAULT_SERVICE_NAME,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    headers: Mapping[str, str] | None = None,
    compression: str = "none",
    evaluation_events: bool = True,
) -> CaseSpans | None:
    """Start the process's span export when ``enabled`` (replacing an earlier one), with
    each case's scores as evaluation events beside the spans when ``evaluation_events``.

    Raises:
        ConfigError: a setting (or standard variable) that cannot work, or no SDK.
    """
    shutdown()
    if enabled:
        settings = resolve(
            endpoint=endpoint,
            service_name=service_name,
            timeout_seconds=timeout_seconds,
            headers=headers,
            compression=compression,
        )
        events = events_for(settings) if evaluation_events else None
        process_state.spans.swap(CaseSpans(**settings, events=events))
    return active()


def events_for(settings: Mapping[str, Any]) -> EvaluationEvents:
    """The evaluation events' export, to the logs URL beside the spans' traces URL."""
    # here: the events' module builds on this one's sender (and loads the SDK's logs)
    from evaluator.run.otlp_events import EvaluationEvents, logs_url

    return EvaluationEvents(
        logs_url(settings["endpoint"]),
        settings["service_name"],
        settings["timeout_seconds"],
        headers=settings["headers"],
        compression=settings["compression"],
    )


def active() -> CaseSpans | None:
    """The installed export, if any (the runner records each finished case into it); it is
    :data:`evaluator.process_state.spans`."""
    return cast("CaseSpans | None", process_state.spans.get())


def shutdown() -> None:
    """Flush and stop the installed export, if any."""
    spans = cast("CaseSpans | None", process_state.spans.swap(None))
    if spans is not None:
        spans.shutdown()

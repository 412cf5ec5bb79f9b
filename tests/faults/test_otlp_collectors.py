"""The OTLP exporter against hostile and mistaken collectors on loopback.

It must be as bounded as the target client: a collector's answer is never read whole (a
huge body, a gzip bomb), the deadline covers the whole request (a collector trickling its
headers), failures are counted by kind and name the status and the URL, and an endpoint
given as a base URL works the way OpenTelemetry's exporters take it.

The memory figures come from a fresh interpreter per attack (peak RSS is process-wide).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import LogCapture

from evaluator.redaction import redactor
from evaluator.run import otlp
from tests.support.loopback import LoopbackServer, Reply
from tests.support.otlp_receiver import HostileCollector, OtlpReceiver
from tests.targets.helpers import GOOD_BODY, dataset, run_config

pytestmark = pytest.mark.e2e

#: exports one span to argv[1] with a deadline of argv[2] s; prints what happened
_ONE_EXPORT = """
import json, resource, sys
from opentelemetry.sdk.trace import TracerProvider
from evaluator.run import otlp

spans = otlp.install(enabled=True, endpoint=sys.argv[1], service_name="t",
                     timeout_seconds=float(sys.argv[2]))
span = TracerProvider().get_tracer("t").start_span("s")
span.end()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = spans.exporter.export([span])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"result": result.name, "grew_mib": (after - before) / 1024,
                  "failures": spans.exporter.failures}))
"""

#: a few MiB: what socket buffers and one bounded read can hold, far below the attack
_GROWTH_MIB = 32


def _export_once(url: str, timeout: float = 2.0) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _ONE_EXPORT, url, str(timeout)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class TestHostileCollectors:
    def test_huge_body_is_not_read(self) -> None:
        """A 256 MiB answer: the exporter takes the status and hangs up."""
        with HostileCollector("huge", body_bytes=256 << 20) as collector:
            seen = _export_once(collector.url)
            assert collector.closed.wait(10)
            sent = collector.sent
        assert "SUCCESS" == seen["result"]
        assert seen["grew_mib"] < _GROWTH_MIB
        assert sent < 64 << 20  # what loopback buffers take before the client hung up

    def test_gzip_bomb_is_not_inflated(self) -> None:
        """A gzip body inflating to 256 MiB: never decompressed."""
        with HostileCollector("bomb", body_bytes=256 << 20) as collector:
            seen = _export_once(collector.url)
        assert "SUCCESS" == seen["result"]
        assert seen["grew_mib"] < _GROWTH_MIB

    def test_trickling_collector_hits_the_whole_request_deadline(self) -> None:
        """Headers one byte every 0.5 s (over 100 s in all): a timeout, counted."""
        with HostileCollector("trickle", trickle=0.5) as collector:
            seen = _export_once(collector.url, timeout=1.0)
            assert collector.closed.wait(10)
        assert "FAILURE" == seen["result"]
        assert {"timeout": 1} == seen["failures"]


def _run_to(endpoint: str, **config: Any) -> otlp.CaseSpans:
    spans = otlp.install(enabled=True, endpoint=endpoint, service_name="e", **config)
    assert spans is not None
    try:
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            from evaluator.config import HttpTargetConfig

            run_config(HttpTargetConfig(name="rag", url=server.url), dataset(["a"]))
    finally:
        otlp.shutdown()
    return spans


class TestMistakenEndpoints:
    def test_base_url_gets_the_traces_path(self) -> None:
        """``http://host:4318`` is taken as OpenTelemetry's exporters take it."""
        with OtlpReceiver() as receiver:
            base = receiver.url.removesuffix("/v1/traces")
            _run_to(base)
            _run_to(base + "/")
        assert 2 == len(receiver.named(otlp.CASE_SPAN))

    def test_refused_export_names_the_status_and_the_url(self) -> None:
        """A collector answering 405 (a wrong path): the log says 405 and where."""
        capture = LogCapture()
        structlog.configure(processors=[capture])
        with OtlpReceiver() as receiver:
            wrong = receiver.url.replace("/v1/traces", "/api/traces")
            spans = _run_to(wrong)
        (line,) = [e for e in capture.entries if e["event"] == "otlp_export_failed"]
        assert 405 == line["status"] and wrong == line["url"]
        assert "http_status" == line["error_kind"] and line["spans"] >= 1
        assert {"http_status": 1} == spans.exporter.failures

    def test_headers_and_gzip_reach_the_collector_and_are_secrets(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``headers`` (``${ENV}`` resolved, redacted) and ``compression = "gzip"``."""
        monkeypatch.setenv("COLLECTOR_TOKEN", "otlp-secret-9f8e7d6c5b4a")
        with OtlpReceiver() as receiver:
            _run_to(
                receiver.url,
                headers={"Authorization": "Bearer ${COLLECTOR_TOKEN}", "X-Tenant": "t1"},
                compression="gzip",
            )
        (sent,) = receiver.headers
        assert "Bearer otlp-secret-9f8e7d6c5b4a" == sent["Authorization"]
        assert "t1" == sent["X-Tenant"] and "gzip" == sent["Content-Encoding"]
        assert 1 == len(receiver.named(otlp.CASE_SPAN))
        assert "otlp-secret" not in redactor().redact_text("otlp-secret-9f8e7d6c5b4a")

    def test_standard_variables_are_honoured(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL) and ``..._HEADERS`` apply when the
        settings leave endpoint and headers at their defaults."""
        with OtlpReceiver() as receiver:
            base = receiver.url.removesuffix("/v1/traces")
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base)
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=search,api-key=a%3Db")
            _run_to(otlp.DEFAULT_ENDPOINT)
        (sent,) = receiver.headers
        assert ("search", "a=b") == (sent["x-team"], sent["api-key"])

    def test_unknown_compression_is_refused(self) -> None:
        """An unknown OTLP compression is refused naming it."""
        from evaluator.config import OtlpConfig

        with pytest.raises(ValueError, match="compression"):
            OtlpConfig(enabled=True, compression="brotli")


class TestDaemonCounters:
    def test_refused_exports_are_counted_on_metrics(self, tmp_path: Path) -> None:
        """A real daemon exporting to a collector that refuses: ``/metrics`` counts it."""
        import asyncio

        import httpx

        from evaluator.config import HttpTargetConfig, JobConfig, OtlpConfig, Settings
        from tests.support.inprocess import running, until

        golden = tmp_path / "golden.jsonl"
        golden.write_text('{"id": "c1", "question": "q", "relevant_ids": ["d1"]}\n', "utf-8")
        with (
            OtlpReceiver(status=405) as receiver,
            LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server,
        ):
            settings = Settings(
                targets=[HttpTargetConfig(name="loop", url=server.url)],
                jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=3600)],
                reports_dir=tmp_path / "reports",
                listen="127.0.0.1:0",
                otlp=OtlpConfig(enabled=True, endpoint=receiver.url),
            )
            seen: dict[str, str] = {}

            async def body() -> None:
                async with running(settings) as daemon:
                    await until(lambda: daemon.jobs[0].state.outcome is not None)
                    spans = otlp.active()
                    assert spans is not None
                    await asyncio.to_thread(spans._provider.force_flush)
                    async with httpx.AsyncClient() as client:
                        url = f"http://127.0.0.1:{daemon.http.port}/metrics"
                        seen["metrics"] = (await client.get(url)).text

            asyncio.run(asyncio.wait_for(body(), 30))
        lines = seen["metrics"].splitlines()
        assert 'rag_eval_otlp_export_errors_total{kind="http_status"} 1.0' in lines
        assert 'rag_eval_otlp_export_errors_total{kind="timeout"} 0.0' in lines
        assert "rag_eval_otlp_spans_exported_total 0.0" in lines
        assert any(line.startswith("rag_eval_otlp_spans_failed_total ") for line in lines)


#: a collector's answer as raw bytes -> the failure kind (None: accepted)
HOSTILE_ANSWERS = {
    "nothing": (b"", "bad_response"),
    "garbage": (b"\x00\xff\xfe garbage \r\n\r\n", "bad_response"),
    "not-a-status": (b"HTTP/1.1 abc OK\r\n\r\n", "bad_response"),
    "other-protocol": (b"ICY 200 OK\r\n\r\n", "bad_response"),
    "headers-never-end": (b"HTTP/1.1 200 OK\r\nX: y\r\n", "bad_response"),
    "headers-too-large": (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 40_000 + b"\r\n\r\n", "bad_response"),
    "lone-cr-lines": (b"HTTP/1.1 200 OK\rX: y\r\r", "bad_response"),
    "status-500": (b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", "http_status"),
    "status-1xx-only": (b"HTTP/1.1 100 Continue\r\n\r\n", "http_status"),
    "status-204": (b"HTTP/1.1 204 No Content\r\n\r\n", None),
    "http-1.0-200": (b"HTTP/1.0 200 OK\r\n\r\nbody never read", None),
}


class TestHostileAnswers:
    """The answer parsing joins the hostile catalogue: every reply is an outcome, counted."""

    @pytest.mark.parametrize("name", sorted(HOSTILE_ANSWERS))
    def test_every_answer_is_an_outcome(self, name: str) -> None:
        """Every hostile collector answer is a counted outcome of its kind, never an
        exception."""
        raw, kind = HOSTILE_ANSWERS[name]
        with HostileCollector("raw", raw=raw) as collector:
            exporter = otlp.BoundedExporter(collector.url, timeout_seconds=2)
            try:
                exporter.send(b"\x0a\x00")
                failed = None
            except otlp.ExportFailed as exc:
                failed = exc.kind
        assert kind == failed


def test_a_span_that_cannot_be_built_is_counted_not_raised() -> None:
    """A record whose trace id is not hex (a bug upstream): the case goes on, counted."""
    from tests.support.records import replace

    with OtlpReceiver() as receiver, LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
        from evaluator.config import HttpTargetConfig

        spans = otlp.install(enabled=True, endpoint=receiver.url, service_name="e")
        assert spans is not None
        report, _ = run_config(HttpTargetConfig(name="rag", url=server.url), dataset(["a"]))
        spans.record(
            replace(report.cases[0], trace_id="not-hex"),
            span_id="zz",
            start_ns=1,
            end_ns=2,
            attributes={},
        )
        otlp.shutdown()
    assert {"exporter_exception": 1} == spans.exporter.failures

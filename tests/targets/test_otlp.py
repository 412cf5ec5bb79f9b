"""OTLP span export against a receiver on loopback that decodes the protobuf requests:
one case span per case whose trace id and span id are the ones its ``traceparent`` sent,
the stages as child spans of the reported durations, nothing sent when it is off, and a
collector that fails or is down never fails a run."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest

from evaluator.config import HttpTargetConfig, OtlpConfig, Settings, load_settings
from evaluator.errors import ConfigError
from evaluator.redaction import register_secrets
from evaluator.report import RunReport
from evaluator.run import otlp
from tests.support.loopback import LoopbackServer, Reply
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.ports import free_port
from tests.targets.helpers import GOOD_BODY, case, dataset, run_config

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")
STAGES = {"retrieve": 0.012, "rerank": 0.0305, "model": 0.2}


def _run_exporting(
    server: LoopbackServer, questions: list[str], config: OtlpConfig, *, target: str = "rag"
) -> tuple[RunReport, otlp.CaseSpans | None]:
    spans = otlp.install(**config.model_dump())
    try:
        report, _ = run_config(HttpTargetConfig(name=target, url=server.url), dataset(questions))
    finally:
        otlp.shutdown()  # flushes the batch: the receiver has every span after this
    return report, spans


def _sent(server: LoopbackServer) -> dict[str, str]:
    """trace id -> parent span id, of every traceparent the service received."""
    found = [TRACEPARENT.match(h["traceparent"]) for h in server.request_headers]
    return {m.group(1): m.group(2) for m in found if m is not None}


@pytest.mark.e2e
class TestCaseSpans:
    def test_three_cases_three_case_spans_with_the_sent_ids_and_stage_children(self) -> None:
        """Each case is one span whose trace id is the one sent to the target and kept in the
        report, with a child span per stage."""
        reply = Reply(body={**GOOD_BODY, "timings": STAGES})
        with OtlpReceiver() as receiver, LoopbackServer(lambda _r: reply) as server:
            config = OtlpConfig(enabled=True, endpoint=receiver.url, service_name="rag-eval-ci")
            report, _ = _run_exporting(server, ["a", "b", "c"], config)
        cases = receiver.named(otlp.CASE_SPAN)
        assert 3 == len(cases)
        sent = _sent(server)
        # the report, the traceparent and the span agree: the service's span is its child
        assert {c.trace_id for c in report.cases} == {s.trace_id for s in cases} == set(sent)
        for span in cases:
            assert sent[span.trace_id] == span.span_id and "" == span.parent_span_id
            record = next(c for c in report.cases if c.trace_id == span.trace_id)
            assert {
                "rag_eval.target": "rag",
                "rag_eval.dataset": "failures",
                "rag_eval.case_id": record.id,
                "rag_eval.k": report.k,
                "rag_eval.run_id": report.run_id,
                "rag_eval.attempts": 1,
                "rag_eval.outcome": "ok",
            } == span.attributes
            assert "rag-eval-ci" == span.resource["service.name"]
            assert span.seconds >= record.latency_seconds
            children = receiver.children_of(span)
            assert [f"rag_eval.stage {n}" for n in STAGES] == [c.name for c in children]
            for child, seconds in zip(children, STAGES.values(), strict=True):
                assert seconds == pytest.approx(child.seconds, abs=1e-9)
            # laid end to end from the case's start, inside the case span
            assert span.start_ns == children[0].start_ns
            assert all(a.end_ns == b.start_ns for a, b in itertools.pairwise(children))
        assert {"application/x-protobuf"} == set(receiver.content_types)

    def test_failed_case_span_has_error_status_and_kind(self) -> None:
        """A failed case's span has an error status and the case's error kind."""
        with (
            OtlpReceiver() as receiver,
            LoopbackServer(lambda _r: Reply(status=503, body={"error": "busy"})) as server,
        ):
            report, _ = _run_exporting(
                server, ["a"], OtlpConfig(enabled=True, endpoint=receiver.url)
            )
        (span,) = receiver.named(otlp.CASE_SPAN)
        record = report.cases[0]
        assert record.error is not None and record.trace_id == span.trace_id
        assert "error" == span.attributes["rag_eval.outcome"]
        assert record.error.kind == span.attributes["rag_eval.error_kind"]
        # retried: each attempt sent its own trace; the span takes the last attempt's ids
        assert 3 == record.attempts == span.attributes["rag_eval.attempts"]
        last = TRACEPARENT.match(server.request_headers[-1]["traceparent"])
        assert last is not None and (last[1], last[2]) == (span.trace_id, span.span_id)
        assert 2 == span.status_code  # STATUS_CODE_ERROR

    def test_no_secret_in_span_attributes(self) -> None:
        """No registered secret reaches a span's attributes, even in a case id."""
        secret = "sk-live-0123456789abcdef"
        register_secrets([secret])
        data = dataset([])
        data = data.__class__(
            path=data.path, name=data.name, content_hash=data.content_hash,
            cases=(case("q", case_id=f"leak-{secret}"),),
        )  # fmt: skip
        with OtlpReceiver() as receiver, LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            otlp.install(enabled=True, endpoint=receiver.url, service_name="e")
            try:
                run_config(HttpTargetConfig(name=f"t-{secret}", url=server.url), data)
            finally:
                otlp.shutdown()
        (span,) = receiver.named(otlp.CASE_SPAN)
        assert receiver.spans and all(secret not in str(s) for s in receiver.spans)
        assert str(span.attributes["rag_eval.case_id"]).startswith("leak-")


@pytest.mark.e2e
class TestOffAndBroken:
    def test_off_by_default_sends_nothing(self) -> None:
        """OTLP export is off by default and then sends nothing."""
        assert not Settings().otlp.enabled
        with OtlpReceiver() as receiver, LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            report, spans = _run_exporting(server, ["a", "b"], OtlpConfig(endpoint=receiver.url))
        assert spans is None and otlp.active() is None
        assert 0 == receiver.requests and 2 == len(report.cases)

    def test_collector_rejecting_batches_is_counted_not_fatal(self) -> None:
        """A collector that rejects batches has its failed spans counted while the run
        completes."""
        with (
            OtlpReceiver(status=400) as receiver,
            LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server,
        ):
            report, spans = _run_exporting(
                server, ["a", "b"], OtlpConfig(enabled=True, endpoint=receiver.url)
            )
        assert spans is not None and receiver.requests >= 1
        assert 2 == report.summary.scored_count
        # 2 case spans and 2 stage spans each, all failed
        assert 6 == spans.exporter.failed_spans and 0 == spans.exporter.exported_spans

    def test_collector_down_never_breaks_the_run(self) -> None:
        """A collector that is down costs only counted failed spans, never the run."""
        dead = f"http://127.0.0.1:{free_port()}/v1/traces"
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            report, spans = _run_exporting(
                server, ["a"], OtlpConfig(enabled=True, endpoint=dead, timeout_seconds=0.5)
            )
        assert 1 == report.summary.scored_count
        assert spans is not None and 3 == spans.exporter.failed_spans


class TestConfig:
    @pytest.mark.e2e
    @pytest.mark.parametrize(
        "endpoint", ["ftp://collector/v1/traces", "http://:4318/v1/traces", "http://h:0/x"]
    )
    def test_bad_endpoint_names_the_field(self, tmp_path: Path, endpoint: str) -> None:
        """A bad OTLP endpoint stops the configuration naming ``otlp.endpoint``."""
        path = tmp_path / "evaluator.toml"
        path.write_text(f'[otlp]\nenabled = true\nendpoint = "{endpoint}"\n', encoding="utf-8")
        with pytest.raises(ConfigError, match=r"otlp\.endpoint"):
            load_settings(path)

    def test_unknown_key_is_refused(self, tmp_path: Path) -> None:
        """An unknown key of ``[otlp]`` is refused by name."""
        path = tmp_path / "evaluator.toml"
        path.write_text('[otlp]\nendpoit = "http://x/v1/traces"\n', encoding="utf-8")
        with pytest.raises(ConfigError, match=r"otlp\.endpoit"):
            load_settings(path)

    def test_enabled_without_the_sdk_is_a_config_error(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The base install has no OpenTelemetry SDK: enabling export then stops at start."""
        module = "opentelemetry.exporter.otlp.proto.common.trace_encoder"
        monkeypatch.setitem(sys.modules, module, None)  # what an absent package imports as
        with pytest.raises(ConfigError, match=r"otlp\.enabled: .*evaluator\[otlp\]"):
            otlp.install(enabled=True, endpoint="http://127.0.0.1:4318/v1/traces", service_name="e")
        assert otlp.active() is None

    def test_an_exporter_that_raises_is_counted(self) -> None:
        """A bug inside the SDK's exporter is one failed batch, not a dead export thread."""

        class Broken(otlp.BoundedExporter):
            def send(self, body: bytes) -> None:
                raise RuntimeError("boom")

        counting = otlp.CountingExporter(Broken("http://127.0.0.1:9/", timeout_seconds=1.0))
        from opentelemetry.sdk.trace.export import SpanExportResult

        assert SpanExportResult.FAILURE is counting.export([object(), object()])
        assert (2, 0) == (counting.failed_spans, counting.exported_spans)

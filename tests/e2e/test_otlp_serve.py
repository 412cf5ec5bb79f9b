"""A real ``evaluator serve`` subprocess exporting its case spans to an OTLP/HTTP receiver
on loopback: every case of a run arrives as a ``rag_eval.case`` span whose trace id is the
one in the run's report and whose span id is the parent id the service received, with the
stage spans under it; SIGTERM flushes the batch before the daemon exits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evaluator.run.otlp import CASE_SPAN
from tests.support.loopback import LoopbackServer, Reply
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.prometheus import DaemonProcess
from tests.targets.helpers import GOOD_BODY

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


def _write_config(root: Path, url: str, collector: str) -> Path:
    golden = root / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["refund-policy"]})
            + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    path = root / "evaluator.toml"
    path.write_text(
        f"""
reports_dir = "{root / "reports"}"
log_format = "json"

[otlp]
enabled = true
endpoint = "{collector}"
service_name = "rag-evaluator-e2e"

[[targets]]
name = "loop"
url = "{url}"
retry = {{ retries = 0 }}

[[jobs]]
target = "loop"
dataset = "{golden}"
dataset_label = "golden"
interval_seconds = 3600
""",
        encoding="utf-8",
    )
    return path


def test_serve_exports_one_case_span_per_case(tmp_path: Path) -> None:
    """``evaluator serve`` exports one case span per case of a run, with its stage children."""
    reply = Reply(body={**GOOD_BODY, "timings": {"retrieve": 0.015, "model": 0.05}})
    with OtlpReceiver() as receiver, LoopbackServer(lambda _r: reply) as server:
        config = _write_config(tmp_path, server.url, receiver.url)
        daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path).start()
        try:
            daemon.wait_ready()
            daemon.wait_for_log(lambda e: e.get("event") == "run", 30)
        finally:
            result = daemon.stop()
        assert 0 == result.returncode, result.stderr
    report_path = tmp_path / "reports" / "loop_golden" / "latest.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    cases = receiver.named(CASE_SPAN)
    assert 3 == len(cases)
    assert {c["trace_id"] for c in report["cases"]} == {s.trace_id for s in cases}
    sent = {}
    for headers in server.request_headers:
        match = TRACEPARENT.match(headers["traceparent"])
        assert match is not None
        sent[match[1]] = match[2]
    for span in cases:
        assert sent[span.trace_id] == span.span_id
        assert "rag-evaluator-e2e" == span.resource["service.name"]
        assert {"loop", "golden"} == {
            span.attributes["rag_eval.target"],
            span.attributes["rag_eval.dataset"],
        }
        children = receiver.children_of(span)
        assert ["rag_eval.stage retrieve", "rag_eval.stage model"] == [c.name for c in children]
        assert [0.015, 0.05] == [round(c.seconds, 6) for c in children]


def test_sigterm_with_a_trickling_collector_exits_cleanly(tmp_path: Path) -> None:
    """The collector sends its headers one byte every 0.5 s (over 100 s in all): the export
    deadline covers the whole request, so SIGTERM ends the daemon with 0 before the stop's
    SIGKILL (the SDK's own exporter restarted its timeout on every byte and its shutdown
    waited 30 s), and the failed export is logged as a timeout."""
    from tests.support.otlp_receiver import HostileCollector

    with (
        HostileCollector("trickle", trickle=0.5) as collector,
        LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server,
    ):
        config = _write_config(tmp_path, server.url, collector.url)
        text = config.read_text("utf-8").replace(
            'service_name = "rag-evaluator-e2e"', 'service_name = "e2e"\ntimeout_seconds = 1'
        )
        config.write_text(text, "utf-8")
        daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path).start()
        try:
            daemon.wait_ready()
            daemon.wait_for_log(lambda e: e.get("event") == "run", 30)
        finally:
            result = daemon.stop(timeout=15)
        assert 0 == result.returncode, result.stderr
    failed = [e for e in result.logs if e.get("event") == "otlp_export_failed"]
    assert failed and all(e["error_kind"] == "timeout" for e in failed)

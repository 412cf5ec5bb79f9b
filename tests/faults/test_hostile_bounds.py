"""Series, sizes and memory stay bounded whatever the endpoint reports.

A real ``evaluator serve`` runs every 0.3 s against an endpoint that invents five new stage
names per response, answers 2 MiB, returns 2,000 ids of 1,000 characters each, and fails
one case with a 3 MB error body. After several runs: the stage label has at most
``max_stages`` + 1 values (``other``), the folded names are counted and only the first few
logged, every error message is one short line, each report and each log line stay under
their documented ceilings, and the process's peak memory stays far from what the
responses would cost if kept.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluator.logs import MAX_LOG_VALUE_CHARS
from tests.faults.hostile import HostileEndpoint, MiB
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

MAX_STAGES = 4
RUNS = 4
CASES = [{"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["0001"]} for i in range(4)]
# the documented ceilings (docs/reliability.md) at the settings below
MAX_ANSWER = 1000
MAX_RANKED = 50
REPORT_CEILING_PER_CASE = 50 * (256 + 25) + MAX_ANSWER + 10 * 2100 + 4096
LOG_LINE_CEILING = 8 * 1024
PEAK_RSS_BOUND = 600 * MiB  # generous: the machine is shared; the responses alone are 4 MiB


def _config(tmp_path: Path, url: str) -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f"""
reports_dir = "{tmp_path / "reports"}"
log_answers = true
log_answer_max_chars = 100000
[[targets]]
name = "heavy"
url = "{url}"
timeout_seconds = 20
max_response_bytes = {16 * MiB}
max_stages = {MAX_STAGES}
max_ranked_ids = {MAX_RANKED}
max_answer_chars = {MAX_ANSWER}
retry = {{ retries = 0 }}
[[jobs]]
target = "heavy"
dataset = "{golden}"
interval_seconds = 0.3
""",
        "utf-8",
    )
    return config


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_series_sizes_and_memory_bounded(tmp_path: Path) -> None:
    """Against a heavy hostile target the exposition's series, their label values and the
    daemon's memory stay bounded."""
    reports = tmp_path / "reports"
    with HostileEndpoint("heavy") as endpoint:
        config = _config(tmp_path, endpoint.url)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            deadline = time.monotonic() + 90
            while len(list(reports.rglob("2*.json"))) < RUNS:
                assert time.monotonic() < deadline, "too few runs in 90 s"
                time.sleep(0.2)
            exposition = daemon.get("/metrics").text
            assert daemon.proc is not None
            peak = _peak_rss(daemon.proc.pid)
            daemon.stop()
        stdout = daemon.log_text()
    families = {f.name: f for f in text_string_to_metric_families(exposition)}
    stages = {
        s.labels["stage"]
        for s in families["rag_eval_stage_latency_seconds"].samples
        if "stage" in s.labels
    }
    assert len(stages) <= MAX_STAGES + 1 and "other" in stages
    (folded,) = families["rag_eval_stage_names_folded"].samples
    assert folded.value >= RUNS * 4 * 5 - MAX_STAGES - 5 * 4  # at least the later runs' names
    events = [json.loads(line) for line in stdout.splitlines()]
    assert 1 <= sum(e["event"] == "stage_folded" for e in events) <= 20
    assert max(len(line) for line in stdout.splitlines()) <= LOG_LINE_CEILING
    case_events = [e for e in events if e["event"] == "case"]
    assert all(len(e.get("answer") or "") <= MAX_LOG_VALUE_CHARS + 40 for e in case_events)
    for path in reports.rglob("2*.json"):
        assert path.stat().st_size <= len(CASES) * REPORT_CEILING_PER_CASE
        report = json.loads(path.read_text("utf-8"))
        for case in report["cases"]:
            assert len(case["ranked_ids"]) <= MAX_RANKED
            assert len(case["answer"] or "") <= MAX_ANSWER + 40
            assert set(case["stage_seconds"]) <= stages
            if case["error"] is not None:
                message = case["error"]["message"]
                assert "\n" not in message and len(message) <= 340
    errors = [c for p in reports.rglob("2*.json") for c in json.loads(p.read_text())["cases"]]
    assert any(c["error"] and c["error"]["kind"] == "http_status" for c in errors)
    assert peak <= PEAK_RSS_BOUND, f"peak RSS {peak / MiB:.0f} MiB"

"""A lone UTF-16 surrogate in an answer, or a FIFO in the golden set's place, cannot silence
or freeze a job.

A JavaScript service that cuts a string inside an emoji sends ``"\\ud83d"`` without its pair:
legal JSON, but not a string UTF-8 can encode. A real ``evaluator serve`` runs every 0.3 s
against an endpoint whose every string (answer, id, citation, evidence text, stage name)
holds one. The job must keep writing reports and counting runs, the surrogates must be
replaced (and counted) at the border, and ``/healthz`` must keep answering promptly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.faults.hostile import HostileEndpoint
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

RUNS = 3
CASES = [{"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"]} for i in range(3)]
#: generous: the machine is shared; the issue's requirement is 250 ms
HEALTHZ_BOUND = 2.0


def _config(tmp_path: Path, url: str) -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f"""
reports_dir = "{tmp_path / "reports"}"
log_answers = true
[[targets]]
name = "js"
url = "{url}"
retry = {{ retries = 0 }}
[[jobs]]
target = "js"
dataset = "{golden}"
interval_seconds = 0.3
""",
        "utf-8",
    )
    return config


def test_lone_surrogates_do_not_stop_reports_or_run_counts(tmp_path: Path) -> None:
    """Lone surrogates in a target's answers are replaced and counted, and stop neither the
    reports nor the runs, /healthz staying prompt."""
    reports = tmp_path / "reports"
    with HostileEndpoint("surrogate") as endpoint:
        config = _config(tmp_path, endpoint.url)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            deadline = time.monotonic() + 60
            worst = 0.0
            while len(list(reports.rglob("2*.json"))) < RUNS:
                assert time.monotonic() < deadline, f"{RUNS} reports not written in 60 s"
                started = time.monotonic()
                assert daemon.get("/healthz").status_code == 200
                worst = max(worst, time.monotonic() - started)
                time.sleep(0.2)
            exposition = daemon.get("/metrics").text
            result = daemon.stop()
    assert worst <= HEALTHZ_BOUND, f"/healthz took {worst:.3f} s"
    assert result.returncode == 0
    families = {f.name: f for f in text_string_to_metric_families(exposition)}
    runs = sum(s.value for s in families["rag_eval_runs"].samples if s.name.endswith("_total"))
    assert runs >= RUNS
    replaced = families["rag_eval_text_replaced_surrogates"].samples
    assert sum(s.value for s in replaced if s.name.endswith("_total")) >= RUNS * len(CASES)
    for path in reports.rglob("2*.json"):
        report = json.loads(path.read_text("utf-8"))
        for case in report["cases"]:
            assert case["error"] is None, case["error"]
            assert "\ufffd" in case["answer"]
    assert not any(e.get("level") == "error" for e in result.logs), result.logs[-5:]


def test_a_fifo_in_the_golden_sets_place_cannot_freeze_the_daemon(tmp_path: Path) -> None:
    """A FIFO put in the golden set's place is never read for ever: the job goes on and /healthz
    stays prompt."""
    import os

    reports = tmp_path / "reports"
    with HostileEndpoint("good") as endpoint:
        config = _config(tmp_path, endpoint.url)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            daemon.wait_for_log(lambda e: e["event"] == "run", timeout=30)
            golden = tmp_path / "golden.jsonl"
            golden.unlink()
            os.mkfifo(golden)  # nobody writes: a blocking open would wait for ever
            daemon.wait_for_log(lambda e: e["event"] == "dataset_reload_failed", timeout=30)
            before = len(list(reports.rglob("2*.json")))
            deadline = time.monotonic() + 30
            worst = 0.0
            while len(list(reports.rglob("2*.json"))) < before + 2:
                assert time.monotonic() < deadline, "the job stopped after the FIFO"
                started = time.monotonic()
                assert daemon.get("/healthz").status_code == 200
                worst = max(worst, time.monotonic() - started)
                time.sleep(0.2)
            result = daemon.stop()
    assert worst <= HEALTHZ_BOUND, f"/healthz took {worst:.3f} s"
    assert result.returncode == 0

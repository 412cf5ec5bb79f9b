"""A rejected reload says so, on a real ``evaluator serve``: a golden set changed into an
invalid one, and a configuration that fails on SIGHUP. The old ones run on; the status page
says what was rejected and why, ``/metrics`` exports it (the gauges the shipped
``RagEvalReloadRejected`` alert reads), and a good reload clears both."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

CASE = {"id": "c0", "question": "q0", "relevant_ids": ["d0"]}
LABELS = 'dataset="golden",target="loop"'


def _config(path: Path, url: str, golden: Path, interval: float = 0.5) -> Path:
    path.write_text(
        f'reports_dir = "{path.parent / "reports"}"\nlog_format = "json"\n\n'
        f'[[targets]]\nname = "loop"\nurl = "{url}"\n\n'
        f'[[jobs]]\ntarget = "loop"\ndataset = "{golden}"\ninterval_seconds = {interval}\n',
        encoding="utf-8",
    )
    return path


def _sample(daemon: DaemonProcess, name: str) -> float | None:
    text = daemon.get("/metrics").text
    found = re.search(rf"^{name}(\{{[^}}]*\}})? (\S+)$", text, re.M)
    return None if found is None else float(found.group(2))


def _until(condition: Callable[[], object], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_rejected_reloads_are_shown_and_exported(tmp_path: Path) -> None:
    """An invalid golden set and a failed SIGHUP reload: the page names each with its
    reason, the two gauges read 0, the old golden set and configuration run on; fixing both
    clears the page and sets the gauges back to 1."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    body = {"answer": "a", "retrieved": [{"id": "d0"}]}
    with LoopbackServer(lambda _r: Reply(body=body)) as server:
        config = _config(tmp_path / "evaluator.toml", server.url, golden)
        daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path / "d").start()
        try:
            daemon.wait_ready()
            dataset_ok = f"rag_eval_dataset_last_reload_successful{{{LABELS}}}"
            _until(lambda: _sample(daemon, dataset_ok) == 1.0, "the first run")

            golden.write_text(json.dumps(CASE) + "\nnot json\n", encoding="utf-8")
            _until(lambda: _sample(daemon, dataset_ok) == 0.0, "the rejected golden set")
            page = daemon.get("/").text
            assert "golden-set reload rejected" in page
            assert "golden.jsonl:2" in page and "the previous golden set runs on" in page

            config.write_text("k = 0\n" + config.read_text("utf-8"), encoding="utf-8")
            assert daemon.proc is not None
            daemon.proc.send_signal(signal.SIGHUP)
            config_ok = "rag_eval_config_last_reload_successful"
            _until(lambda: _sample(daemon, config_ok) == 0.0, "the rejected configuration")
            page = daemon.get("/").text
            assert "configuration reload rejected" in page
            assert "k: Input should be greater than or equal to 1" in page
            assert "the previous configuration runs on" in page

            golden.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
            _config(config, server.url, golden)
            daemon.proc.send_signal(signal.SIGHUP)
            _until(lambda: _sample(daemon, config_ok) == 1.0, "the good configuration")
            _until(lambda: _sample(daemon, dataset_ok) == 1.0, "the good golden set")
            page = daemon.get("/").text
            assert "reload rejected" not in page
        finally:
            result = daemon.stop()
    assert 0 == result.returncode, result.stderr

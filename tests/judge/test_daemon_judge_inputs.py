"""The judge's inputs in a live ``evaluator serve`` (issue 38.4): a labels file that is a FIFO
or a device is refused by the drift check, counted and logged, while ``/healthz`` answers and
SIGTERM ends the daemon (it froze the daemon past SIGTERM)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.judge.test_cli_judge import _CASES, _REPLIES
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e


def _config(tmp: Path, rag: str, judge: str, labels: Path) -> Path:
    (tmp / "golden.jsonl").write_text("\n".join(json.dumps(c) for c in _CASES) + "\n")
    config = tmp / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp / "reports"}"\nshutdown_grace_seconds = 5\n'
        f'[judge]\nurl = "{judge}"\nmodel = "m"\n'
        f'drift_labels = "{labels}"\ndrift_interval_seconds = 1\n'
        f'[[targets]]\nname = "rag"\nurl = "{rag}"\n'
        f'[[jobs]]\ntarget = "rag"\ndataset = "{tmp / "golden.jsonl"}"\ninterval_seconds = 3600\n',
        "utf-8",
    )
    return config


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_hostile_labels_file_neither_freezes_the_daemon_nor_its_sigterm(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO as ``drift_labels`` (the audit's reproduction) or a link to /dev/zero (the
    variant): each drift check is ``bad_labels`` naming the file, /healthz answers, SIGTERM
    exits 0."""
    labels = tmp_path / "labels.jsonl"
    if kind == "fifo":
        os.mkfifo(labels)
    else:
        labels.symlink_to("/dev/zero")
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        config = _config(tmp_path, rag.url, judge.url, labels)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            failed = daemon.wait_for_log(lambda e: e["event"] == "judge_drift_failed", 30)
            assert f"{labels}: not a regular file (a FIFO, device or socket)" == failed["error"]
            # the next drift check comes a second later: the loop did not wait on the first
            daemon.wait_for_log(
                lambda e: sum(x["event"] == "judge_drift_failed" for x in daemon.logs()) > 1, 30
            )
            assert 200 == daemon.get("/healthz", timeout=2).status_code
            metrics = daemon.get("/metrics", timeout=5).text
            assert 'outcome="bad_labels"' in metrics
            result = daemon.stop(timeout=15)
    assert 0 == result.returncode, result.stderr

"""Retention recovers from a full disk, and ``latest.json`` is never older than the newest
numbered report.

A real ``evaluator serve`` keeps its reports on a 96 KiB tmpfs of its own (a private mount
namespace via ``unshare``), with ``reports_keep`` far above what fits: the folder fills
with its own reports within a few runs. The daemon must prune before writing (deleting
its oldest reports when the disk is full) and go on writing every run's report.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

RUNS = 30
CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"], "expected_facts": ["fact"]}
    for i in range(6)
]


def _answer(_request: dict[str, object]) -> Reply:
    return Reply({"answer": "fact " * 50, "retrieved": [{"id": "d0"}], "citations": [1]})


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs unshare with a private tmpfs mount")
def test_reports_keep_coming_on_a_full_disk(tmp_path: Path) -> None:
    """On a small disk that fills, old reports are pruned to make room, no write fails, and
    latest.json stays the newest run."""
    mount = tmp_path / "disk"
    mount.mkdir()
    reports = mount / "reports"
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    prefix = [
        "unshare", "-rm", "sh", "-c",
        f'mount -t tmpfs -o size=96k tmpfs "{mount}" && exec "$@"', "sh",
    ]  # fmt: skip
    args = [
        "--dataset", str(golden), "--target-url", "", "--interval", "0.2",
        "--reports-dir", str(reports),
    ]  # fmt: skip
    env = {"EVALUATOR_REPORTS_KEEP": "1000", "EVALUATOR_HISTORY__ENABLED": "false"}
    with LoopbackServer(_answer) as server:
        args[3] = server.url
        with DaemonProcess(args, workdir=tmp_path, env=env, prefix=prefix) as daemon:
            daemon.wait_ready()
            assert daemon.proc is not None
            # the daemon's own view of the mount
            folder = Path(f"/proc/{daemon.proc.pid}/root") / str(reports).lstrip("/")
            deadline = time.monotonic() + 60
            while sum(e.get("event") == "run" for e in daemon.logs()) < RUNS:
                assert time.monotonic() < deadline, "too few runs in 60 s"
                time.sleep(0.2)
            daemon.get("/healthz").raise_for_status()
            (job,) = [p for p in folder.iterdir() if p.is_dir()]
            # stop writing first, then look: no write races the reading below
            daemon.proc.send_signal(signal.SIGSTOP)
            try:
                numbered = sorted(p for p in job.glob("2*.json"))
                latest = json.loads((job / "latest.json").read_text("utf-8"))
                newest = json.loads(numbered[-1].read_text("utf-8"))
                statvfs = os.statvfs(job)
            finally:
                daemon.proc.send_signal(signal.SIGCONT)
            result = daemon.stop()
    runs = [e for e in result.logs if e.get("event") == "run"]
    failed_writes = [e for e in result.logs if e.get("event") == "report_write_failed"]
    pruned = [e for e in result.logs if e.get("event") == "reports_pruned_for_space"]
    assert pruned, "the disk never filled: the test proves nothing"
    assert len(numbered) < len(runs)  # some were deleted to make room
    assert [] == failed_writes
    assert latest["run_id"] == newest["run_id"]
    assert latest["generated_at"] >= newest["generated_at"]
    assert statvfs.f_blocks * statvfs.f_frsize <= 128 * 1024  # really the small tmpfs

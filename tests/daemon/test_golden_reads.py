"""Golden sets are read off the event loop, on start, SIGHUP and change, and only from a
regular file within its cap (issue 24.2): a FIFO or ``/dev/zero`` in a golden set's place
neither freezes the daemon nor its SIGTERM.

In-process: every read of a golden set happens in a worker thread, never the loop's. Real
``evaluator serve``: a FIFO or ``/dev/zero`` at start is a clean refusal (exit 1, naming the
file); after SIGHUP the old jobs run on, ``/healthz`` answers and SIGTERM exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator import border
from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.daemon import Daemon
from tests.support.inprocess import run_bounded
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

CASE = {"id": "c0", "question": "q0", "relevant_ids": ["d0"], "expected_facts": ["fact"]}


def _golden(path: Path, n: int = 1) -> Path:
    path.write_text("".join(json.dumps({**CASE, "id": f"c{i}"}) + "\n" for i in range(n)))
    return path


def _settings(tmp_path: Path, golden: Path) -> Settings:
    return Settings(
        targets=[HttpTargetConfig(name="loop", url="http://127.0.0.1:9/rag")],
        jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=3600, run_at_start=False)],
        reports_dir=tmp_path / "reports",
        listen="127.0.0.1:0",
    )


@pytest.mark.e2e
def test_golden_sets_are_read_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start, SIGHUP's reload and a changed file: each golden-set read is off the loop."""
    first, second = _golden(tmp_path / "first.jsonl"), _golden(tmp_path / "second.jsonl")
    reads: list[tuple[str, str]] = []
    real = border.read_file

    def recording(path: str | os.PathLike[str], max_bytes: int = border.MAX_INPUT_BYTES) -> bytes:
        reads.append((Path(path).name, threading.current_thread().name))
        return real(path, max_bytes)

    monkeypatch.setattr(border, "read_file", recording)
    loop_thread = threading.current_thread().name  # asyncio.run's loop runs in this thread

    async def body() -> None:
        daemon = Daemon(_settings(tmp_path, first), reload=lambda: _settings(tmp_path, second))
        await daemon.start()
        try:
            assert await daemon.reload()
            _golden(second, 2)  # the job's golden set changes: picked up by its next run
            os.utime(second, ns=(1, 1))
            await daemon.jobs[0].reload_dataset()
            assert 2 == len(daemon.jobs[0].dataset.cases)
        finally:
            await daemon.stop()

    run_bounded(body)
    golden = [(name, thread) for name, thread in reads if name.endswith(".jsonl")]
    assert [name for name, _ in golden] == ["first.jsonl", "second.jsonl", "second.jsonl"]
    assert all(thread != loop_thread for _, thread in golden), golden


@pytest.fixture
def endpoint() -> Iterator[LoopbackServer]:
    """A loopback target answering every case well."""
    answer = {"answer": "fact", "retrieved": [{"id": "d0"}], "citations": [1]}
    with LoopbackServer(lambda _request: Reply(answer)) as server:
        yield server


def _config(tmp_path: Path, url: str, golden: Path) -> Path:
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp_path / "reports"}"\nshutdown_grace_seconds = 5\n'
        f'[[targets]]\nname = "loop"\nurl = "{url}"\n'
        f'[[jobs]]\ntarget = "loop"\ndataset = "{golden}"\ninterval_seconds = 0.5\n',
        "utf-8",
    )
    return config


def _hostile(path: Path, kind: str) -> None:
    """``path`` made a FIFO nobody writes to, or a link to ``/dev/zero``."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # a blocking open waits for a writer for ever
    else:
        path.symlink_to("/dev/zero")  # a reader that reads it whole reads for ever


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_hostile_golden_set_at_start_is_refused(
    tmp_path: Path, endpoint: LoopbackServer, kind: str
) -> None:
    """A golden set that is no regular file stops the daemon at start naming it, without a
    traceback."""
    golden = tmp_path / "golden.jsonl"
    _hostile(golden, kind)
    daemon = DaemonProcess(
        ["--config", str(_config(tmp_path, endpoint.url, golden))], workdir=tmp_path
    )
    result = daemon.start().wait_exit(timeout=30)
    out = daemon.log_text() + result.stderr
    assert 1 == result.returncode, out[-2000:]
    assert str(golden) in out and "regular file" in out, out[-2000:]
    assert "internal error" not in out and "Traceback" not in out


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_hostile_golden_set_at_sighup_keeps_the_jobs(
    tmp_path: Path, endpoint: LoopbackServer, kind: str
) -> None:
    """SIGHUP with a FIFO or /dev/zero where the golden set was: the reload fails and is
    logged, the job runs on with its old cases, /healthz answers, SIGTERM exits 0."""
    golden = _golden(tmp_path / "golden.jsonl")
    config = _config(tmp_path, endpoint.url, golden)
    with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
        daemon.wait_ready()
        daemon.wait_for_log(lambda e: e["event"] == "run", timeout=30)
        _hostile(golden, kind)
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGHUP)
        failed = daemon.wait_for_log(lambda e: e["event"] == "config_reload_failed", timeout=30)
        assert str(golden) in failed["error"] and "regular file" in failed["error"]
        runs = sum(1 for e in daemon.logs() if e["event"] == "run")
        daemon.wait_for_log(
            lambda e: (
                e["event"] == "run"
                and sum(1 for x in daemon.logs() if x["event"] == "run") > runs + 1
            ),
            timeout=30,
        )
        assert 200 == daemon.get("/healthz").status_code
        result = daemon.stop()
    assert 0 == result.returncode, result.stderr[-2000:]
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr

"""Ctrl-C during `evaluator run` / a live `evaluator gate`, and the terminal progress line."""

from __future__ import annotations

import io
import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evaluator.commands.progress import Progress
from tests.support.interrupts import as_at_a_terminal
from tests.support.loopback import LoopbackServer, Reply

EXE = str(Path(sys.executable).with_name("evaluator"))
CASES = 40


def _golden(folder: Path) -> Path:
    path = folder / "golden.jsonl"
    lines = [
        json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d1"]})
        for i in range(CASES)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _slow(_: dict[str, Any]) -> Reply:
    return Reply({"answer": "a", "retrieved": [{"id": "d1"}], "citations": [1]}, delay=0.25)


def _interrupt_after_some_cases(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        as_at_a_terminal(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    time.sleep(2.5)  # a few 0.25 s cases at concurrency 2 have finished, most have not
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.e2e
def test_ctrl_c_reaches_the_run_when_the_test_runner_ignores_it(tmp_path: Path) -> None:
    """Started by a runner that ignores SIGINT (a CI runner, nohup, a background job), the
    run still gets the test's Ctrl-C as a terminal would deliver it, and exits 130."""
    golden = _golden(tmp_path)
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with LoopbackServer(_slow) as server:
            cmd = [EXE, "run", "--dataset", str(golden), "--target-url", server.url,
                   "--concurrency", "2", "--output", "partial.json"]  # fmt: skip
            result = _interrupt_after_some_cases(cmd, tmp_path)
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert 130 == result.returncode, result


@pytest.mark.e2e
def test_ctrl_c_writes_a_partial_report_marked_interrupted_and_exits_130(tmp_path: Path) -> None:
    """Ctrl-C during ``evaluator run`` writes a partial report marked interrupted, says so, and
    exits 130."""
    golden = _golden(tmp_path)
    with LoopbackServer(_slow) as server:
        cmd = [EXE, "run", "--dataset", str(golden), "--target-url", server.url,
               "--concurrency", "2", "--output", "partial.json"]  # fmt: skip
        result = _interrupt_after_some_cases(cmd, tmp_path)
    assert 130 == result.returncode, result
    report = json.loads((tmp_path / "partial.json").read_text())
    assert report["interrupted"] is True
    assert 0 < report["case_count"] < CASES
    assert "partial report (marked interrupted) written to partial.json" in result.stderr
    assert "Traceback" not in result.stderr
    assert "report: partial.json" in result.stdout  # the summary of what finished

    # such a report cannot be gated: it lacks cases at random
    gated = subprocess.run(
        [EXE, "gate", "--baseline", "partial.json", "--candidate", "partial.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert 1 == gated.returncode
    assert "the report of an interrupted run" in gated.stderr


@pytest.mark.e2e
def test_no_progress_line_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    """No progress line is written when stderr is not a terminal."""
    golden = _golden(tmp_path)
    fast = lambda _: Reply({"answer": "a", "retrieved": [{"id": "d1"}]})  # noqa: E731
    with LoopbackServer(fast) as server:
        result = subprocess.run(
            [EXE, "run", "--dataset", str(golden), "--target-url", server.url],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert 0 == result.returncode, result
    assert "\r" not in result.stderr and "cases  " not in result.stderr


@pytest.mark.e2e
def test_progress_line_and_colour_on_a_terminal(tmp_path: Path) -> None:
    """Under a pseudo-terminal: progress on stderr while it runs, PASS/FAIL in colour."""
    golden = _golden(tmp_path)
    with LoopbackServer(_slow) as server:
        run = [EXE, "run", "--dataset", str(golden), "--target-url", server.url,
               "--concurrency", "8", "--output", "b.json"]  # fmt: skip
        output = _in_pty(run, tmp_path)
        assert f"{CASES}/{CASES} cases" in output
        assert "/s  ETA" in output
        gate = [EXE, "gate", "--baseline", "b.json", "--candidate", "b.json"]
        coloured = _in_pty(gate, tmp_path)
        plain = _in_pty(gate, tmp_path, NO_COLOR="1")
    assert "\033[32mpass\033[0m recall_at_k" in coloured
    assert "\033[" not in plain and "pass recall_at_k" in plain


def _in_pty(cmd: list[str], cwd: Path, **env: str) -> str:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdin=follower, stdout=follower, stderr=follower,
        env={**os.environ, "TERM": "xterm", **env}, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_counts_rate_and_eta() -> None:
    """The progress line gives the cases done, the rate and the time left."""
    stream = io.StringIO()
    progress = Progress(10, stream, enabled=True)
    progress.done = 4
    assert "  4/10 cases  2.0/s  ETA 3s" == progress.line(2.0)
    progress.done = 10
    assert "  10/10 cases  5.0/s  ETA -" == progress.line(2.0)


def test_progress_is_silent_off_a_terminal() -> None:
    """Progress writes nothing off a terminal."""
    stream = io.StringIO()  # isatty() is False
    progress = Progress(3, stream)
    for _ in range(3):
        progress.on_case(None)  # type: ignore[arg-type]
    progress.close()
    assert "" == stream.getvalue()

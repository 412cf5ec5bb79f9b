"""`evaluator serve` as a process: clean shutdown on SIGTERM, and exit 1 on a bad start."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evaluator.daemon.report_store import LATEST, job_folder_name
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess, DaemonResult

pytestmark = pytest.mark.e2e

CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": [f"d{i}"], "expected_facts": [f"fact{i}"]}
    for i in range(4)
]


def _reply(question: str, delay: float) -> Reply:
    i = question[1:]
    body = {"answer": f"fact{i}", "retrieved": [{"id": f"d{i}"}], "citations": [1]}
    return Reply(body, delay=delay)


class SlowAfterFirstRun:
    """Answers each question at once the first time, after ``slow`` seconds later on."""

    def __init__(self, slow: float) -> None:
        self.slow = slow
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The answer to a question, at once the first time and slowly after."""
        question = str(request["question"])
        with self.lock:
            first = question not in self.seen
            self.seen.add(question)
        return _reply(question, 0.0 if first else self.slow)


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    """The module's golden set as a file."""
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    return path


def _serve_args(golden: Path, url: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--dataset", str(golden), "--target-url", url, "--reports-dir",
        str(tmp_path / "reports"), *extra,
    ]  # fmt: skip


def _latest_path(tmp_path: Path, server: LoopbackServer) -> Path:
    folder = job_folder_name(f"127.0.0.1:{server.port}/golden")
    return tmp_path / "reports" / folder / LATEST


def _wait(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _events(result: DaemonResult, name: str) -> list[dict[str, Any]]:
    return [e for e in result.logs if e.get("event") == name]


def _assert_clean_logs(result: DaemonResult) -> None:
    """Every stdout line is a JSON event and none is an unexpected error."""
    assert [] == [e for e in result.logs if "unparsed" in e]
    errors = [
        e
        for e in result.logs
        if e.get("level") in ("error", "critical")
        and not (e.get("event") == "run" and e.get("reason") == "cancelled by shutdown")
    ]
    assert [] == errors
    assert "" == result.stderr


class TestSigterm:
    """SIGTERM stops scheduling, lets a run finish within the grace period, then cancels it."""

    def test_run_in_progress_finishes_and_its_report_is_intact(
        self, tmp_path: Path, golden: Path
    ) -> None:
        """SIGTERM mid-run: the run completes, its report has every case, exit 0 in the grace."""
        grace = 10.0
        with LoopbackServer(lambda r: _reply(str(r["question"]), 0.8)) as server:
            args = _serve_args(golden, server.url, tmp_path, "--interval", "3600")
            args += ["--concurrency", "2"]
            env = {"EVALUATOR_SHUTDOWN_GRACE_SECONDS": str(grace)}
            with DaemonProcess(args, workdir=tmp_path, env=env) as daemon:
                daemon.wait_ready()
                _wait(lambda: len(server.requests) >= 1, timeout=10)
                assert not _latest_path(tmp_path, server).exists()
                result = daemon.stop(timeout=grace + 10)
            latest = _latest_path(tmp_path, server)
        # finished within the grace: the run is complete and nothing was cancelled (below)
        assert 0 == result.returncode, result.stderr
        report = json.loads(latest.read_text("utf-8"))
        assert ["c0", "c1", "c2", "c3"] == [c["id"] for c in report["cases"]]
        assert (0, 1.0) == (report["error_count"], report["summary"]["answer_accuracy"])
        names = [e.get("event") for e in result.logs]
        assert (
            names.index("shutdown_requested") < names.index("run") < names.index("daemon_stopped")
        )
        (run,) = _events(result, "run")
        assert ("complete", report["run_id"]) == (run["outcome"], run["run_id"])
        (stopped,) = _events(result, "daemon_stopped")
        assert (0, {"complete": 1}) == (stopped["cancelled_runs"], stopped["runs"])
        assert 1 == len(_events(result, "daemon_exit"))
        assert 4 == len(_events(result, "case"))
        _assert_clean_logs(result)

    def test_run_past_the_grace_period_is_cancelled(self, tmp_path: Path, golden: Path) -> None:
        """SIGTERM while a run outlasts a 0.5 s grace: cancelled, exit 0 soon, old report kept."""
        # the second run's replies take 4 s; exiting well before proves the run was cancelled
        # (the loopback server waits for those replies when it stops: keep them short)
        with LoopbackServer(SlowAfterFirstRun(slow=4.0)) as server:
            args = _serve_args(golden, server.url, tmp_path, "--interval", "1")
            env = {"EVALUATOR_SHUTDOWN_GRACE_SECONDS": "0.5"}
            with DaemonProcess(args, workdir=tmp_path, env=env) as daemon:
                daemon.wait_ready()
                first = daemon.wait_for_log(lambda e: e.get("event") == "run", timeout=10)
                latest = _latest_path(tmp_path, server)
                before = latest.read_text("utf-8")
                _wait(lambda: len(server.requests) > len(CASES), timeout=10)  # second run going
                result = daemon.stop(timeout=15)
            after = latest.read_text("utf-8")
        # the outcome, not the wall time, proves the cancel: a failed run "cancelled by
        # shutdown" and the previous report untouched
        assert 0 == result.returncode, result.stderr
        assert before == after
        report = json.loads(after)
        assert (first["run_id"], 4, "complete") == (
            report["run_id"], len(report["cases"]), first["outcome"]
        )  # fmt: skip
        runs = _events(result, "run")
        assert [("complete", None), ("failed", "cancelled by shutdown")] == [
            (e["outcome"], e.get("reason")) for e in runs
        ]
        (stopped,) = _events(result, "daemon_stopped")
        assert (1, {"complete": 1, "failed": 1}) == (stopped["cancelled_runs"], stopped["runs"])
        _assert_clean_logs(result)


class TestBadStart:
    """Invalid configuration or golden set at start: exit 1 with one line naming the problem."""

    @staticmethod
    def _assert_one_line(result: DaemonResult, *needles: str) -> None:
        assert 1 == result.returncode, result
        lines = result.stderr.strip().splitlines()
        assert 1 == len(lines), result.stderr
        assert "Traceback" not in result.stderr
        for needle in needles:
            assert needle in lines[0], lines[0]
        assert [] == _events(result, "daemon_started")

    @pytest.mark.parametrize(
        ("extra", "env", "needles"),
        [
            (
                (),
                {"EVALUATOR_K": "0"},
                ("environment variable EVALUATOR_K", "greater than or equal to 1"),
            ),
            (("--listen", "localhost"), {}, ("listen 'localhost'", "HOST:PORT")),
            (("--cron", "70 * * * *"), {}, ("invalid cron expression '70 * * * *'",)),
            (("--interval", "0"), {}, ("jobs.0.interval_seconds",)),
        ],
        ids=["env-k", "listen", "cron", "interval"],
    )
    def test_invalid_configuration_exits_1(
        self,
        tmp_path: Path,
        golden: Path,
        extra: tuple[str, ...],
        env: dict[str, str],
        needles: tuple[str, ...],
    ) -> None:
        """A bad value from the environment or a flag names its field and exits 1."""
        args = _serve_args(golden, "http://127.0.0.1:9/rag", tmp_path, *extra)
        with DaemonProcess(args, workdir=tmp_path, env=env) as daemon:
            result = daemon.wait_exit()
        self._assert_one_line(result, *needles)

    def test_listen_port_in_use_exits_1(self, tmp_path: Path, golden: Path) -> None:
        """A listen port taken by another process is reported, not a traceback."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            address = f"127.0.0.1:{taken.getsockname()[1]}"
            args = _serve_args(golden, "http://127.0.0.1:9/rag", tmp_path, "--listen", address)
            with DaemonProcess(args, workdir=tmp_path) as daemon:
                result = daemon.wait_exit()
        self._assert_one_line(result, f"cannot listen on {address}")

    def test_invalid_golden_set_exits_1_naming_file_and_line(
        self, tmp_path: Path, golden: Path
    ) -> None:
        """A golden set with a bad second line stops the start, naming file:line."""
        golden.write_text(json.dumps(CASES[0]) + "\n{not json\n", "utf-8")
        args = _serve_args(golden, "http://127.0.0.1:9/rag", tmp_path)
        with DaemonProcess(args, workdir=tmp_path) as daemon:
            result = daemon.wait_exit()
        self._assert_one_line(result, f"{golden}:2:")

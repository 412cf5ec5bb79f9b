"""The reports folder becomes unwritable while the daemon runs on its schedule.

Tests run as root here, so permissions stop nothing: the folder is made unwritable by
putting a regular file where a folder must be (or a folder where ``latest.json`` must be).
The daemon runs in-process and writes each report in a worker thread; the folder is
swapped from inside the save that begins the first blocked run (the job's runs are
serial, so every earlier run is counted by then), never racing a write, and the counters
are read exactly.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from structlog.testing import LogCapture

from evaluator.config import HistoryConfig, HttpTargetConfig, JobConfig, RetryConfig, Settings
from evaluator.daemon import Daemon
from evaluator.daemon.report_store import LATEST
from evaluator.report import encode_report, read_report
from tests.support.inprocess import running, until
from tests.support.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.e2e

LABELS = {"target": "loop", "dataset": "golden"}
CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": [f"d{i}"], "expected_facts": [f"fact{i}"]}
    for i in range(4)
]


def _answer(request: dict[str, Any]) -> Reply:
    i = str(request["question"]).removeprefix("q")
    return Reply({"answer": f"fact{i}", "retrieved": [{"id": f"d{i}"}], "citations": [1]})


def _settings(tmp_path: Path, url: str) -> Settings:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    return Settings(
        targets=[
            HttpTargetConfig(
                name="loop",
                url=url,
                timeout_seconds=2,
                retry=RetryConfig(retries=0),
            )
        ],
        jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=0.2, run_at_start=True)],
        reports_dir=tmp_path / "reports",
        reports_keep=100,
        listen="127.0.0.1:0",
        shutdown_grace_seconds=5,
        # the history store writes from its own thread: removing the folder under it would
        # race that thread, not the report writes under test (tests/history covers it)
        history=HistoryConfig(enabled=False),
    )


def _sample(daemon: Daemon, name: str, **labels: str) -> float:
    value = daemon.registry.get_sample_value(name, {**LABELS, **labels})
    assert value is not None, name
    return value


def _on_disk(folder: Path) -> dict[str, Path]:
    """Run id -> report file, for the reports that made it to disk."""
    try:
        paths = [p for p in folder.glob("*.json") if p.name != LATEST]
    except OSError:
        return {}
    return {p.stem.rpartition("-")[2]: p for p in paths}


class Breakage:
    """One way to make the reports unwritable, and its repair."""

    def __init__(self, name: str, where: Callable[[Path], Path], as_folder: bool) -> None:
        self.name = name
        self.where = where  # job folder -> the path to block
        self.as_folder = as_folder  # block with a folder (else with a file)

    def block(self, folder: Path) -> None:
        """Make the breakage's path unusable: a folder where a file must be, or a file where a
        folder must be."""
        path = self.where(folder)
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        if self.as_folder:
            path.mkdir()
            (path / "keep").write_text("a folder where a file must be", "utf-8")
        else:
            path.write_text("a file where a folder must be", "utf-8")

    def repair(self, folder: Path) -> None:
        """Remove what :meth:`block` put in the path's place."""
        path = self.where(folder)
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    @property
    def whole_report_lost(self) -> bool:
        """Whether a blocked run writes nothing: always, since ``latest.json`` is written
        first and the numbered report only after it (latest is never older than it)."""
        return True


BREAKAGES = [
    Breakage("job-folder-is-a-file", lambda folder: folder, as_folder=False),
    Breakage("reports-dir-is-a-file", lambda folder: folder.parent, as_folder=False),
    Breakage("latest-is-a-folder", lambda folder: folder / LATEST, as_folder=True),
]


class TestReportsUnwritable:
    """Write failures are logged and counted, runs go on, and writing resumes after repair."""

    @pytest.mark.parametrize("breakage", BREAKAGES, ids=[b.name for b in BREAKAGES])
    def test_daemon_goes_on_and_resumes(self, tmp_path: Path, breakage: Breakage) -> None:
        """Blocked for three runs or more: each counted and logged, the latest from memory."""
        capture = LogCapture()
        structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
        with LoopbackServer(_answer) as server:
            settings = _settings(tmp_path, server.url)
            outcome: dict[str, Any] = {}

            async def body() -> None:
                async with running(settings) as daemon:
                    outcome.update(await _scenario(daemon, breakage))
                outcome["errors"] = _sample(daemon, "rag_eval_report_write_errors_total")
                outcome["complete"] = _sample(daemon, "rag_eval_runs_total", outcome="complete")
                outcome["not_complete"] = sum(
                    _sample(daemon, "rag_eval_runs_total", outcome=o)
                    for o in ("incomplete", "failed")
                )
                outcome["folder"] = daemon.jobs[0].store.folder
                outcome["latest"] = daemon.jobs[0].store.latest

            asyncio.run(asyncio.wait_for(body(), 30))

        runs = [e for e in capture.entries if e["event"] == "run"]
        run_ids = [e["run_id"] for e in runs]
        failures = [e for e in capture.entries if e["event"] == "report_write_failed"]
        failed_ids = [e["run_id"] for e in failures]
        # every run completed; each blocked one, and only those, is one write error
        assert (len(runs), 0.0) == (outcome["complete"], outcome["not_complete"])
        assert run_ids[outcome["blocked_at"] : outcome["repaired_at"]] == failed_ids
        assert len(failures) == outcome["errors"] >= 3
        assert {"error"} == {e["log_level"] for e in failures}
        assert all(e["error"] and e["folder"] == str(outcome["folder"]) for e in failures)
        # while blocked: healthy, the last run served from memory, the errors on /metrics
        assert (200, 200, 200) == outcome["served"]
        assert outcome["served_run_id"] in failed_ids
        assert (not breakage.whole_report_lost) == outcome["served_on_disk"]
        (line,) = outcome["counted"]
        assert float(line.rpartition(" ")[2]) >= outcome["errors_then"]
        # every report on disk reads back; the ones written after the repair are there
        folder: Path = outcome["folder"]
        on_disk = _on_disk(folder)
        for path in [*on_disk.values(), folder / LATEST]:
            read_report(path)
        if breakage.whole_report_lost:
            assert set() == set(failed_ids) & set(on_disk)
        else:
            assert set(failed_ids) <= set(on_disk)
        resumed = run_ids[run_ids.index(failed_ids[-1]) + 1 :]
        assert len(resumed) >= 2
        assert set(resumed) <= set(on_disk)
        assert run_ids[-1] == outcome["latest"].run_id
        assert json.loads(encode_report(outcome["latest"])) == json.loads(
            (folder / LATEST).read_text("utf-8")
        )


async def _scenario(daemon: Daemon, breakage: Breakage) -> dict[str, Any]:
    """Two good runs, block, three blocked runs, repair, two more runs.

    Returns the number of complete runs when the folder was blocked and repaired, and what
    the daemon served while blocked.
    """
    runner = daemon.jobs[0]
    folder = runner.store.folder
    base = f"http://127.0.0.1:{daemon.http.port}"

    def complete() -> float:
        return _sample(daemon, "rag_eval_runs_total", outcome="complete")

    def errors() -> float:
        return _sample(daemon, "rag_eval_report_write_errors_total")

    # the folder is blocked as the third run's save begins: the job's runs are serial, so
    # every earlier run is saved and counted, and none is half-saved
    store = runner.store
    save = store.save
    blocked: dict[str, float] = {}

    def blocking_save(report: Any) -> Path:
        if not blocked and len(_on_disk(folder)) >= 2:
            breakage.block(folder)
            blocked["at"] = complete()
        return save(report)

    store.save = blocking_save  # type: ignore[method-assign]
    await until(lambda: bool(blocked))
    blocked_at = blocked["at"]
    await until(lambda: errors() >= 3)
    assert errors() == complete() - blocked_at  # one error per blocked run, no more
    errors_then = errors()  # more runs may finish while the requests below are answered
    async with httpx.AsyncClient(timeout=5) as client:
        latest = await client.get(f"{base}/reports/latest")
        health = await client.get(f"{base}/healthz")
        metrics = await client.get(f"{base}/metrics")
    served = latest.json()
    counted = [
        line
        for line in metrics.text.splitlines()
        if line.startswith("rag_eval_report_write_errors_total{")
    ]
    out = {
        "blocked_at": int(blocked_at),
        "served": (latest.status_code, health.status_code, metrics.status_code),
        "served_run_id": served.get("run_id"),
        "served_on_disk": served.get("run_id") in _on_disk(folder),
        "counted": counted,
        "errors_then": errors_then,
    }
    breakage.repair(folder)
    out["repaired_at"] = int(complete())
    await until(lambda: complete() >= out["repaired_at"] + 2)
    return out

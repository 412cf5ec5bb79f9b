"""Whatever fails while a run is published, the job does not go silent.

A real daemon runs in-process against a loopback endpoint; one publishing step is made to
fail the way a bug or a broken store would (the report write, the history write, the
exporter's update). Every run must still be counted with its outcome, the failure must be
a counted error kind, and the freshness timestamps must move only once the report is
written, so ``RagEvalResultsStale`` fires when reports stop.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.config import HistoryConfig, HttpTargetConfig, JobConfig, RetryConfig, Settings
from evaluator.daemon import Daemon
from evaluator.daemon.exporter import Metrics
from evaluator.daemon.report_store import ReportStore
from evaluator.history.recorder import HistoryRecorder
from tests.support.inprocess import running, until
from tests.support.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.e2e

LABELS = {"target": "loop", "dataset": "golden"}
CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": [f"d{i}"], "expected_facts": [f"f{i}"]}
    for i in range(3)
]


def _answer(request: dict[str, Any]) -> Reply:
    i = str(request["question"]).removeprefix("q")
    return Reply({"answer": f"f{i}", "retrieved": [{"id": f"d{i}"}], "citations": [1]})


def _settings(tmp_path: Path, url: str, *, history: bool) -> Settings:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    return Settings(
        targets=[HttpTargetConfig(name="loop", url=url, retry=RetryConfig(retries=0))],
        jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=0.1, run_at_start=True)],
        reports_dir=tmp_path / "reports",
        listen="127.0.0.1:0",
        shutdown_grace_seconds=5,
        history=HistoryConfig(enabled=history),
    )


def _value(daemon: Daemon, name: str, **labels: str) -> float | None:
    return daemon.registry.get_sample_value(name, {**LABELS, **labels})


def _runs(daemon: Daemon) -> float:
    return sum(
        _value(daemon, "rag_eval_runs_total", outcome=o) or 0.0
        for o in ("complete", "incomplete", "failed")
    )


class _Broken(RuntimeError):
    """What a publishing step raises here: not an OSError, the kind a bug raises."""


def _scenario(tmp_path: Path, *, history: bool, runs: int = 3) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with LoopbackServer(_answer) as server:
        settings = _settings(tmp_path, server.url, history=history)

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: _runs(daemon) >= runs)
                seen["complete"] = _value(daemon, "rag_eval_runs_total", outcome="complete")
                seen["last_run"] = _value(daemon, "rag_eval_last_run_timestamp_seconds")
                seen["last_complete"] = _value(
                    daemon, "rag_eval_last_complete_run_timestamp_seconds"
                )
                seen["publish_errors"] = {
                    step: _value(daemon, "rag_eval_publish_errors_total", step=step)
                    for step in ("report", "metrics", "history", "gate")
                }
                seen["snapshot"] = daemon.jobs[0].state
                port = daemon.http.port
                async with asyncio.timeout(5):
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    seen["status_page"] = (await reader.read()).split(b" ", 2)[1]
                    writer.close()

        asyncio.run(asyncio.wait_for(body(), 30))
    return seen


class TestPublishFailures:
    def test_report_write_bug(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The report write raises (not an OSError): every run counted, the step counted,
        the freshness timestamps never move (no report was written)."""

        def broken(self: ReportStore, report: object) -> Path:
            raise _Broken("cannot encode")

        monkeypatch.setattr(ReportStore, "save", broken)
        seen = _scenario(tmp_path, history=False)
        assert seen["complete"] >= 3
        assert seen["publish_errors"]["report"] == seen["complete"]
        assert seen["last_run"] is None or seen["last_run"] == 0
        assert seen["last_complete"] is None or seen["last_complete"] == 0
        assert seen["snapshot"].outcome == "complete"
        assert seen["snapshot"].report_written is False
        assert seen["status_page"] == b"200"

    def test_history_write_bug(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The history write raises in its thread: runs counted, freshness moves (the report
        was written), the failure counted by step."""

        def broken(self: HistoryRecorder, *args: object) -> object:
            raise _Broken("history store bug")

        monkeypatch.setattr(HistoryRecorder, "record", broken)
        seen = _scenario(tmp_path, history=True)
        assert seen["complete"] >= 3
        assert seen["last_complete"] is not None and seen["last_complete"] > 0
        assert (seen["publish_errors"]["history"] or 0) >= seen["complete"] - 1
        assert seen["snapshot"].report_written is True

    def test_exporter_bug(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The exporter's update raises: the run is still counted, the step counted."""

        def broken(self: Metrics, *args: object, **kwargs: object) -> None:
            raise _Broken("exporter bug")

        monkeypatch.setattr(Metrics, "run_finished", broken)
        seen = _scenario(tmp_path, history=False)
        assert seen["complete"] >= 3
        assert seen["publish_errors"]["metrics"] == seen["complete"]
        assert seen["snapshot"].report_written is True

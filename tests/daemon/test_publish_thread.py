"""A finished run's report is written in a worker thread, never on the event loop: its
fsyncs, temporary file and pruning scan held the loop for tens of milliseconds per run, and
runs ending together stalled ``/healthz`` (the fuzz tier's normalisation class)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.daemon.report_store import ReportStore
from tests.support.inprocess import running, until
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import GOOD_BODY

pytestmark = pytest.mark.e2e


def test_the_report_is_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon writes a run's report from a worker thread, never on the event loop."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "c1", "question": "q", "relevant_ids": ["d1"]}\n', "utf-8")
    writers: list[str] = []
    save = ReportStore.save

    def recording(self: ReportStore, report: object) -> Path:
        writers.append(threading.current_thread().name)
        return save(self, report)  # type: ignore[arg-type]

    monkeypatch.setattr(ReportStore, "save", recording)
    with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as target:
        settings = Settings(
            targets=[HttpTargetConfig(name="loop", url=target.url)],
            jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=3600)],
            reports_dir=tmp_path / "reports",
            listen="127.0.0.1:0",
        )

        async def one_run() -> tuple[str | None, bool]:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].state.outcome is not None)
                state = daemon.jobs[0].state
                return state.outcome, state.report_written

        outcome, written = asyncio.run(one_run())
    assert (outcome, written) == ("complete", True)
    assert writers and all(name != threading.main_thread().name for name in writers)
    assert list((tmp_path / "reports").rglob("latest.json"))

"""The event-loop lag monitor, and the lag a run records next to its latency P95."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from evaluator.models import Case, Dataset, Dialogue, TargetResponse
from evaluator.report import read_report, write_report
from evaluator.run.looplag import LoopLagMonitor
from evaluator.run.runner import RunOptions, run_dataset


class _Hogging:
    """A callable target whose every answer holds the event loop for ``hold`` seconds."""

    name = "hog"

    def __init__(self, hold: float) -> None:
        self.hold = hold

    def identity(self) -> dict[str, str]:
        return {"kind": "hog"}

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        await asyncio.sleep(0.03)
        time.sleep(self.hold)  # noqa: ASYNC251 - holding the loop is the point
        return TargetResponse()

    async def aclose(self) -> None:
        pass


def _dataset(n: int) -> Dataset:
    cases = tuple(Case(id=f"c{i}", question=f"q{i}", relevance={"d": 1}) for i in range(n))
    return Dataset(path="x.jsonl", name="x", cases=cases, content_hash="0" * 64)


def test_a_blocked_loop_shows_as_lag() -> None:
    """Holding the loop 150 ms shows up as at least 100 ms of lag (a lower bound only)."""

    async def go() -> LoopLagMonitor:
        async with LoopLagMonitor(interval=0.01) as lag:
            await asyncio.sleep(0.05)
            time.sleep(0.15)  # noqa: ASYNC251 - holding the loop is the point
            await asyncio.sleep(0.05)
        return lag

    lag = asyncio.run(go())
    assert lag.max is not None and lag.max >= 0.1
    assert lag.p95 is not None and lag.samples


def test_no_samples_is_none() -> None:
    """Without samples the loop lag's P95 and maximum are None."""
    assert LoopLagMonitor().p95 is None
    assert LoopLagMonitor().max is None


def test_run_reports_its_loop_lag(tmp_path: Path) -> None:
    """A run whose target holds the loop records the lag in its summary; it survives a
    write and read back."""
    report = asyncio.run(run_dataset(_dataset(6), _Hogging(0.06), RunOptions(k=1, concurrency=3)))
    summary = report.summary
    assert summary.event_loop_lag_max_seconds is not None
    assert summary.event_loop_lag_max_seconds >= 0.04
    assert summary.event_loop_lag_p95_seconds is not None
    assert "event_loop_lag_p95_seconds" in summary.to_dict()
    write_report(report, tmp_path / "r.json")
    back = read_report(tmp_path / "r.json").summary
    assert summary.event_loop_lag_p95_seconds == back.event_loop_lag_p95_seconds
    assert summary.event_loop_lag_max_seconds == back.event_loop_lag_max_seconds


def test_runs_open_at_once_share_one_sampling_task() -> None:
    """Many monitors open together wake the loop once per interval, not once each; each
    keeps only the samples of its own time, and the task ends with the last one."""

    def lag_tasks() -> list[asyncio.Task[object]]:
        return [t for t in asyncio.all_tasks() if t.get_name() == "event-loop-lag"]

    async def go() -> tuple[int, int, int, int]:
        outer = LoopLagMonitor(interval=0.01)
        async with outer:
            inner = [LoopLagMonitor(interval=0.01) for _ in range(20)]
            for monitor in inner:
                await monitor.__aenter__()
            shared = len(lag_tasks())
            await asyncio.sleep(0.1)
            for monitor in inner:
                await monitor.__aexit__(None, None, None)
            await asyncio.sleep(0.1)
        inner_samples = max(len(m.samples) for m in inner)
        return shared, inner_samples, len(outer.samples), len(lag_tasks())

    shared, inner_samples, outer_samples, left = asyncio.run(go())
    assert shared == 1
    assert 0 < inner_samples < outer_samples
    assert left == 0

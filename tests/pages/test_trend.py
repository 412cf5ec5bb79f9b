"""Trend lines' data: the recent runs kept per job when there is no history store."""

from __future__ import annotations

from evaluator.pages.trend import RecentRuns, RunPoint


def test_recent_runs_are_newest_first_and_bounded() -> None:
    """The recent runs kept per job are newest first and bounded."""
    runs = RecentRuns(keep=3)
    for i in range(5):
        runs.add("t", "d", RunPoint(f"r{i}", float(i), "complete", {"mrr": i / 10}))

    assert ["r4", "r3", "r2"] == [r.run_id for r in runs.runs("t", "d")]
    assert ["r4"] == [r.run_id for r in runs.runs("t", "d", limit=1)]
    assert [] == runs.runs("t", "other")

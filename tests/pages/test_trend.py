"""Trend lines: points of an inline SVG polyline, worked examples."""

from __future__ import annotations

import math

from evaluator.pages.trend import RecentRuns, RunPoint, sparkline


def test_points_span_the_box_and_ratios_sit_on_zero_to_one() -> None:
    """A sparkline's points span its box; a ratio is drawn on the 0..1 scale."""
    line = sparkline([0.0, 0.5, 1.0], width=104, height=24, floor=0.0, ceiling=1.0)

    # x from 2 to 102 in two steps; y from 22 (value 0) to 2 (value 1)
    assert "2,22 52,12 102,2" == line.points
    assert (3, 1.0, 0.0, 1.0, (102.0, 2.0)) == (
        line.count,
        line.last,
        line.low,
        line.high,
        line.end,
    )


def test_missing_and_non_finite_values_are_skipped_in_place() -> None:
    """Missing and non-finite values are skipped, the others keeping their run's place."""
    line = sparkline([1.0, None, math.nan, 3.0], width=34, height=14)
    # x positions keep their run (0 and 3 of 3 steps); y on the values' own range 1..3
    assert "2,12 32,2" == line.points
    assert 2 == line.count


def test_one_value_is_a_flat_line_and_none_is_nothing() -> None:
    """One value is a flat line; no values draw nothing."""
    assert "2,7 32,7" == sparkline([0.5], width=34, height=14).points
    empty = sparkline([None])
    assert ("", 0, None) == (empty.points, empty.count, empty.end)


def test_recent_runs_are_newest_first_and_bounded() -> None:
    """The recent runs kept per job are newest first and bounded."""
    runs = RecentRuns(keep=3)
    for i in range(5):
        runs.add("t", "d", RunPoint(f"r{i}", float(i), "complete", {"mrr": i / 10}))

    assert ["r4", "r3", "r2"] == [r.run_id for r in runs.runs("t", "d")]
    assert ["r4"] == [r.run_id for r in runs.runs("t", "d", limit=1)]
    assert [] == runs.runs("t", "other")

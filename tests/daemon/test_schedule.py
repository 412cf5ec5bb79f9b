"""The daemon's scheduling as pure functions of time, as arq tests `next_cron`: no sleeps."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from evaluator.config import JobConfig
from evaluator.daemon.schedule import (
    DEFAULT_INTERVAL_SECONDS,
    build_trigger,
    first_run,
    interval_of,
    stagger_offsets,
    stagger_spread,
    staggered_starts,
)

START = datetime(2026, 1, 2, 10, 30, tzinfo=UTC)  # a Friday


def _job(**schedule: object) -> JobConfig:
    return JobConfig(target="rag", dataset=Path("evals/a.jsonl"), **schedule)


class TestStaggerOffsets:
    """First runs spread over the spread, first one at once, off any round lattice."""

    @pytest.mark.parametrize(
        ("count", "spread", "expected"),
        [
            (0, 60.0, []),
            (1, 60.0, [0.0]),
            # 60 x frac(1 x 0.6180...), then 10 x frac(2 x 0.6180...) = 10 x 0.2360...
            (2, 60.0, [0.0, 37.082]),
            (3, 10.0, [0.0, 6.18, 2.361]),
            (4, 0.0, [0.0, 0.0, 0.0, 0.0]),
        ],
    )
    def test_offsets(self, count: int, spread: float, expected: list[float]) -> None:
        """The first runs start with one at once and the rest spread over the spread by the
        golden ratio, off any round lattice."""
        assert expected == stagger_offsets(count, spread)

    @pytest.mark.parametrize("count", [10, 100, 1000])
    def test_spread_evenly(self, count: int) -> None:
        """Within the spread, and no gap between neighbours wider than 2.7 x an even
        step (the golden ratio's three-gap bound)."""
        offsets = sorted(stagger_offsets(count, 10.0))
        assert 0.0 <= offsets[0] and offsets[-1] < 10.0
        gaps = [b - a for a, b in zip(offsets, [*offsets[1:], 10.0], strict=True)]
        assert max(gaps) <= 2.7 * 10.0 / count

    @pytest.mark.parametrize("period", [0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 3.0])
    def test_out_of_phase_with_round_periods(self, period: float) -> None:
        """100 jobs paced at a round rate (one request every ``period`` s) keep the phases
        their first runs give them: no twentieth of the period holds more than twice its
        share. Evenly spaced offsets (0.1 s apart) put 50 jobs on each of two phases of a
        0.2 s period: 50 requests at once, every 0.1 s."""
        phases = [offset % period for offset in stagger_offsets(100, 10.0)]
        bins = Counter(int(phase / period * 20) for phase in phases)
        assert max(bins.values()) <= 10


class TestStaggerSpread:
    """Half a second a job, at most the shortest interval; cron jobs set no bound."""

    @pytest.mark.parametrize(
        ("schedules", "expected"),
        [
            ([], 0.0),
            ([{}], 0.5),
            # 100 jobs at the default 300 s: 50 s, so 100 runs of one size do not end together
            ([{}] * 100, 50.0),
            ([{"interval_seconds": 300}] * 2, 1.0),
            # the quickest job runs again after 20 s: every first run comes before that
            ([{"interval_seconds": 20}] + [{}] * 99, 20.0),
            ([{"cron": "*/15 * * * *"}] * 4, 2.0),
            ([{"cron": "* * * * *"}] * 200, 100.0),
        ],
    )
    def test_spread(self, schedules: list[dict[str, object]], expected: float) -> None:
        """The spread is half a second a job, at most the shortest interval, with no bound from
        cron jobs."""
        assert expected == stagger_spread([_job(**s) for s in schedules])


class TestFirstRun:
    """Where a job's schedule begins, its first run: at once, or one period later."""

    def test_staggered_starts(self) -> None:
        """Three jobs over 1.5 s from ``START``, in the jobs' order."""
        starts = staggered_starts([_job()] * 3, START)
        offsets = [(at - START).total_seconds() for at in starts]
        assert [0.0, 0.927, 0.354] == offsets

    @pytest.mark.parametrize(
        ("schedule", "expected"),
        [
            ({"interval_seconds": 60}, START),
            (
                {"interval_seconds": 60, "run_at_start": False},
                datetime(2026, 1, 2, 10, 31, tzinfo=UTC),
            ),
            ({"cron": "0 * * * *"}, START),
            ({"cron": "0 * * * *", "run_at_start": False}, datetime(2026, 1, 2, 11, tzinfo=UTC)),
        ],
    )
    def test_first_run(self, schedule: dict[str, object], expected: datetime) -> None:
        """A job's first run is at once or one period later, as its schedule says."""
        job = _job(**schedule)
        assert expected == first_run(job, build_trigger(job, START), START)


class TestBuildTrigger:
    """A job's trigger: its interval from the start, or its cron in UTC, with jitter."""

    def test_interval_fires_first_at_start(self) -> None:
        """An interval job runs at start, then every interval."""
        trigger = build_trigger(_job(interval_seconds=60), START)
        assert isinstance(trigger, IntervalTrigger)
        first = trigger.get_next_fire_time(None, START)
        assert START == first
        assert datetime(2026, 1, 2, 10, 31, tzinfo=UTC) == trigger.get_next_fire_time(first, first)

    def test_no_schedule_is_the_default_interval(self) -> None:
        """Neither interval nor cron: every DEFAULT_INTERVAL_SECONDS."""
        trigger = build_trigger(_job(), START)
        assert DEFAULT_INTERVAL_SECONDS == interval_of(trigger, START)

    def test_cron_is_utc(self) -> None:
        """``0 3 * * *`` fires at 03:00 UTC, the next day when 03:00 has passed."""
        trigger = build_trigger(_job(cron="0 3 * * *"), START)
        assert isinstance(trigger, CronTrigger)
        assert datetime(2026, 1, 3, 3, 0, tzinfo=UTC) == trigger.get_next_fire_time(None, START)

    @pytest.mark.parametrize(("jitter", "expected"), [(0.0, None), (15.0, 15)])
    def test_jitter(self, jitter: float, expected: int | None) -> None:
        """Zero jitter is none at all; otherwise whole seconds."""
        trigger = build_trigger(_job(interval_seconds=60, jitter_seconds=jitter), START)
        assert expected == trigger.jitter


class TestIntervalOf:
    """The gap between a trigger's next two fires, exported as the run interval gauge."""

    @pytest.mark.parametrize(
        ("cron", "seconds"),
        [
            ("*/15 * * * *", 900.0),
            ("0 3 * * *", 86400.0),
            # Friday 10:30: the next two weekday 09:00s are Monday and Tuesday
            ("0 9 * * mon-fri", 86400.0),
            # Friday 10:30: the next Monday-or-Friday 09:00s are Monday, then Friday
            ("0 9 * * mon,fri", 4 * 86400.0),
        ],
    )
    def test_cron(self, cron: str, seconds: float) -> None:
        """A cron trigger's interval is the gap between its next two fires."""
        assert seconds == interval_of(build_trigger(_job(cron=cron), START), START)

    def test_interval(self) -> None:
        """An interval trigger's interval is its period."""
        assert 42.5 == interval_of(build_trigger(_job(interval_seconds=42.5), START), START)

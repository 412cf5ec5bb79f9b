"""The daemon's scheduling as pure functions of time, as arq tests `next_cron`: no sleeps."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from evaluator.config import JobConfig
from evaluator.daemon.schedule import (
    DEFAULT_INTERVAL_SECONDS,
    build_trigger,
    interval_of,
    stagger_offsets,
)

START = datetime(2026, 1, 2, 10, 30, tzinfo=UTC)  # a Friday


def _job(**schedule: object) -> JobConfig:
    return JobConfig(target="rag", dataset=Path("evals/a.jsonl"), **schedule)


class TestStaggerOffsets:
    """First runs spread evenly over the spread, first one at once."""

    @pytest.mark.parametrize(
        ("count", "spread", "expected"),
        [
            (0, 60.0, []),
            (1, 60.0, [0.0]),
            (2, 60.0, [0.0, 30.0]),
            (3, 10.0, [0.0, 3.333, 6.667]),
            (4, 0.0, [0.0, 0.0, 0.0, 0.0]),
        ],
    )
    def test_offsets(self, count: int, spread: float, expected: list[float]) -> None:
        assert expected == stagger_offsets(count, spread)


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
        assert seconds == interval_of(build_trigger(_job(cron=cron), START), START)

    def test_interval(self) -> None:
        assert 42.5 == interval_of(build_trigger(_job(interval_seconds=42.5), START), START)

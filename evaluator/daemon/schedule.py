"""Triggers for APScheduler 3.x: interval or cron, with jitter and staggered first runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.interval import IntervalTrigger

from evaluator.config import JobConfig, cron_trigger
from evaluator.config.jobs import DEFAULT_INTERVAL_SECONDS
from evaluator.errors import ConfigError

__all__ = [
    "DEFAULT_INTERVAL_SECONDS",
    "STAGGER_STEP_SECONDS",
    "build_trigger",
    "first_run",
    "interval_of",
    "stagger_offsets",
    "stagger_spread",
    "staggered_starts",
]

#: first runs of several jobs are spread over this many seconds per job (two starts a
#: second on average), at most the shortest interval
STAGGER_STEP_SECONDS = 0.5


#: the golden ratio's fractional part: successive multiples of it, taken modulo 1, fill
#: [0, 1) evenly without ever falling on a lattice (a Weyl sequence)
_GOLDEN = (5**0.5 - 1) / 2


def stagger_offsets(count: int, spread_seconds: float) -> list[float]:
    """First-run offsets that spread ``count`` jobs over ``spread_seconds``, first one at once.

    Many jobs starting at the same second would hit shared targets all at once. Evenly
    spaced offsets (i x spread / count) did worse than that for paced targets: 100 jobs
    0.1 s apart, each at 5 requests/s, sent their requests on one 0.1 s lattice, 50 at
    a time, and the bursts queued in the service and the evaluator's loop (added latency
    P50 5.8 ms against 0.65 ms with unaligned starts, platform benchmark). The offsets are
    a Weyl sequence instead: as evenly spread, and out of phase with any round rate or
    interval.
    """
    return [round(spread_seconds * (i * _GOLDEN % 1.0), 3) for i in range(count)]


def stagger_spread(jobs: Sequence[JobConfig]) -> float:
    """Seconds over which the jobs' first runs are spread: :data:`STAGGER_STEP_SECONDS` per
    job, at most the shortest interval of the interval jobs (so every job has run once
    before the quickest runs again; cron jobs keep their own times).

    Per job rather than one fixed window, because what the spread bounds is how many runs
    start, and end, together. Runs of the same size end as they started: 100 jobs started
    within 10 s ended within 10 s, and each end's summary, report and history (about 50 ms
    of CPU for 1,000 cases) took the GIL from the cases still being timed. With 100 jobs x
    1,000 cases paced at 5 requests/s, the cases of those last 10 s had added latency P95
    11-16 ms, against 1.2 ms in the rest of the cycle (platform benchmark); spread over
    50 s, 1.7 ms. A few jobs start within a second or two.
    """
    intervals = [
        job.interval_seconds or DEFAULT_INTERVAL_SECONDS for job in jobs if job.cron is None
    ]
    return min([STAGGER_STEP_SECONDS * len(jobs), *intervals])


def staggered_starts(jobs: Sequence[JobConfig], now: datetime) -> list[datetime]:
    """When each of ``jobs``, starting together at ``now``, begins its schedule: the
    :func:`stagger_offsets` over the :func:`stagger_spread`, in the jobs' order."""
    offsets = stagger_offsets(len(jobs), stagger_spread(jobs))
    return [now + timedelta(seconds=offset) for offset in offsets]


def first_run(job: JobConfig, trigger: BaseTrigger, start: datetime) -> datetime | None:
    """The first run of a job whose schedule begins at ``start`` (its trigger built from
    it): ``start`` itself with ``run_at_start``, else the trigger's next fire after it (an
    interval job one interval later, a cron job its next time)."""
    return start if job.run_at_start else trigger.get_next_fire_time(start, start)


def build_trigger(job: JobConfig, start: datetime) -> BaseTrigger:
    """The job's trigger: its cron expression (UTC) or its interval starting at ``start``.

    Raises:
        ConfigError: an invalid cron expression, naming the job.
    """
    jitter = int(job.jitter_seconds) or None
    if job.cron is not None:
        try:
            return cron_trigger(job.cron, jitter)
        except ValueError as exc:
            raise ConfigError(f"job {job.key!r}: {exc}") from exc
    seconds = job.interval_seconds or DEFAULT_INTERVAL_SECONDS
    return IntervalTrigger(seconds=seconds, start_date=start, timezone=UTC, jitter=jitter)


def interval_of(trigger: BaseTrigger, now: datetime) -> float | None:
    """Seconds between the trigger's next two fire times (for a cron job, the current gap)."""
    if isinstance(trigger, IntervalTrigger):
        return float(trigger.interval.total_seconds())
    first = trigger.get_next_fire_time(None, now)
    if first is None:
        return None
    second = trigger.get_next_fire_time(first, first + timedelta(microseconds=1))
    if second is None:
        return None
    return float((second - first).total_seconds())

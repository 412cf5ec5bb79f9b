"""The event loop's own lag during a run: how late a timer fires.

A latency P95 can move because the service slowed down or because the evaluator's own loop
was busy (decoding, mapping, scoring, a /metrics scrape) and read the responses late. The
monitor sleeps ``interval`` seconds in a loop and keeps how much later than asked each wake
came (one task per loop, however many runs are open); a run reports the P95 and the maximum
of those samples next to its latency P95, so the two can be told apart: a P95 that grew
while the loop lag stayed near zero is the service's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from types import TracebackType

from evaluator.summary import nearest_rank

__all__ = ["LoopLagMonitor"]

#: time between samples: 50 wakes a second cost well under 1% of a core
INTERVAL = 0.02


class _Sampler:
    """One loop's one sampling task, shared by every monitor open on that loop.

    A monitor per run woke the loop 50 times a second per run: 100 jobs running at once
    made 5,000 wakes a second, about 4% of the daemon's event-loop CPU (py-spy, platform
    benchmark). Every run open at the same time sees the same lag, so one task samples and
    each open monitor keeps the samples taken while it was open.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.open: list[list[float]] = []
        self.task: asyncio.Task[None] | None = None

    async def sample(self) -> None:
        interval, clock = self.interval, time.perf_counter
        while True:
            asked = clock()
            await asyncio.sleep(interval)
            lag = max(clock() - asked - interval, 0.0)
            for samples in self.open:
                samples.append(lag)


#: the sampler of each running loop and interval; a loop's entry goes with the loop
_SAMPLERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, _Sampler]] = (
    weakref.WeakKeyDictionary()
)


class LoopLagMonitor:
    """``async with LoopLagMonitor() as lag: ...`` then ``lag.p95`` and ``lag.max``.

    Example::

        async with LoopLagMonitor() as lag:
            await run_every_case()
        report_lag(lag.p95, lag.max)  # seconds; None when the block was shorter than a sample
    """

    def __init__(self, interval: float = INTERVAL) -> None:
        self._interval = interval
        self.samples: list[float] = []
        self._sampler: _Sampler | None = None

    async def __aenter__(self) -> LoopLagMonitor:
        loop = asyncio.get_running_loop()
        sampler = _SAMPLERS.setdefault(loop, {}).setdefault(
            self._interval, _Sampler(self._interval)
        )
        sampler.open.append(self.samples)
        if sampler.task is None:
            sampler.task = loop.create_task(sampler.sample(), name="event-loop-lag")
        self._sampler = sampler
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return
        # by identity: two monitors' lists may be equal
        sampler.open[:] = [s for s in sampler.open if s is not self.samples]
        if not sampler.open and sampler.task is not None:
            task, sampler.task = sampler.task, None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def p95(self) -> float | None:
        """Nearest-rank P95 of the samples, seconds."""
        return nearest_rank(self.samples, 95)

    @property
    def max(self) -> float | None:
        return max(self.samples) if self.samples else None

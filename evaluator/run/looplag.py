"""The event loop's own lag during a run: how late a timer fires.

A latency P95 can move because the service slowed down or because the evaluator's own loop
was busy (decoding, mapping, scoring, a /metrics scrape) and read the responses late. The
monitor sleeps ``interval`` seconds in a loop and keeps how much later than asked each wake
came; a run reports the P95 and the maximum of those samples next to its latency P95, so
the two can be told apart: a P95 that grew while the loop lag stayed near zero is the
service's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType

from evaluator.summary import nearest_rank

__all__ = ["LoopLagMonitor"]

#: time between samples: 50 wakes a second cost well under 1% of a core
INTERVAL = 0.02


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
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        interval, samples, clock = self._interval, self.samples, time.perf_counter
        while True:
            asked = clock()
            await asyncio.sleep(interval)
            samples.append(max(clock() - asked - interval, 0.0))

    async def __aenter__(self) -> LoopLagMonitor:
        self._task = asyncio.create_task(self._sample(), name="event-loop-lag")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def p95(self) -> float | None:
        """Nearest-rank P95 of the samples, seconds."""
        return nearest_rank(self.samples, 95)

    @property
    def max(self) -> float | None:
        return max(self.samples) if self.samples else None

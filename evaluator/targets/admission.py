"""Admission to a target: per-target concurrency and request rate, and the time spent waiting.

The evaluator measures latency, so time a request spends queued behind our own limits is
not the target's: :class:`Admission` reports each wait to the meter that
:func:`measure_queue_wait` opens around a case, and the runner subtracts it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = [
    "Admission",
    "QueueWait",
    "RateLimiter",
    "measure_queue_wait",
    "record_queue_wait",
    "record_received",
    "record_trace",
]


@dataclass
class QueueWait:
    """Seconds one case spent waiting for admission, summed over its attempts, and when the
    last byte of its latest response arrived (``time.perf_counter()``), if a target said."""

    seconds: float = 0.0
    received_at: float | None = None
    #: the W3C trace id of the latest attempt, when the target sends one
    trace_id: str | None = None
    #: the parent span id that attempt's ``traceparent`` carried (the case span's id)
    span_id: str | None = None


_meter: ContextVar[QueueWait | None] = ContextVar("evaluator_queue_wait", default=None)


class measure_queue_wait:
    """Collect the admission waits of the calls made inside the block (same task).

    A class rather than a ``@contextmanager`` generator: it is entered once per case.
    """

    __slots__ = ("_meter", "_token")

    def __init__(self) -> None:
        self._meter = QueueWait()

    def __enter__(self) -> QueueWait:
        self._token = _meter.set(self._meter)
        return self._meter

    def __exit__(self, *exc: object) -> None:
        _meter.reset(self._token)


def record_queue_wait(seconds: float) -> None:
    """Add a wait to the current meter, if a caller opened one."""
    meter = _meter.get()
    if meter is not None:
        meter.seconds += seconds


def record_received(at: float) -> None:
    """Note when the last byte of a response arrived: the case's latency ends there, not
    after the evaluator decoded and mapped it."""
    meter = _meter.get()
    if meter is not None:
        meter.received_at = at


def record_trace(trace_id: str, span_id: str | None = None) -> None:
    """Note the trace id (and parent span id) the latest attempt carried (kept with the
    case, failed or not)."""
    meter = _meter.get()
    if meter is not None:
        meter.trace_id = trace_id
        meter.span_id = span_id


class RateLimiter:
    """At most ``rate`` requests per second, evenly spaced (a bucket of one token).

    Each caller reserves the next free slot and sleeps until it comes; there is no lock
    because nothing awaits between reading and moving the next slot.
    """

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self._interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0

    async def wait(self) -> None:
        now = self._clock()
        slot = max(now, self._next)
        self._next = slot + self._interval
        if slot > now:
            await self._sleep(slot - now)


class Admission:
    """At most ``max_concurrent`` calls in flight and, optionally, a request rate."""

    def __init__(self, max_concurrent: int, rate: float | None = None) -> None:
        self._slots = asyncio.Semaphore(max_concurrent)
        self._rate = RateLimiter(rate) if rate is not None else None

    async def enter(self) -> None:
        """Take one call slot (give it back with :meth:`leave`); the wait to get it is
        recorded as queue wait. The pair is what the HTTP target's hot path uses: a
        generator-based context manager per call cost more than the semaphore itself."""
        started = time.perf_counter()
        await self._slots.acquire()
        try:
            if self._rate is not None:
                await self._rate.wait()
        except BaseException:
            self._slots.release()
            raise
        record_queue_wait(time.perf_counter() - started)

    def leave(self) -> None:
        """Give back the slot :meth:`enter` took."""
        self._slots.release()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one call slot; the wait to get it is recorded as queue wait."""
        await self.enter()
        try:
            yield
        finally:
            self.leave()

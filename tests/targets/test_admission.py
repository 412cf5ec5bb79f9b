"""Per-target concurrency and rate limits, and their waits kept out of measured latency."""

from __future__ import annotations

import asyncio
import time

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.targets.admission import Admission, RateLimiter, measure_queue_wait
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import GOOD_BODY, dataset, run_config


class FakeClock:
    """A monotonic clock whose sleeps are recorded; ``advance`` makes them pass time."""

    def __init__(self, advance: bool = True) -> None:
        self.now = 100.0
        self.advance = advance
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        """The clock's current time."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Record the sleep and, when the clock advances, move time on by it."""
        self.sleeps.append(round(seconds, 6))
        if self.advance:
            self.now += seconds


class TestRateLimiter:
    """Requests are spaced 1/rate apart; an idle limiter lets the next one through."""

    def test_spacing(self) -> None:
        """Successive calls are spaced by one over the rate."""
        clock = FakeClock()
        limiter = RateLimiter(4.0, clock=clock, sleep=clock.sleep)

        async def go() -> None:
            for _ in range(3):
                await limiter.wait()

        asyncio.run(go())
        assert [0.25, 0.25] == clock.sleeps

    def test_concurrent_callers_get_distinct_slots(self) -> None:
        """Callers waiting at the same time each get their own slot, one interval apart."""
        clock = FakeClock(advance=False)
        limiter = RateLimiter(10.0, clock=clock, sleep=clock.sleep)

        async def go() -> None:
            await asyncio.gather(*(limiter.wait() for _ in range(4)))

        asyncio.run(go())
        assert [0.1, 0.2, 0.3] == sorted(clock.sleeps)

    def test_idle_resets(self) -> None:
        """After an idle spell longer than the interval the next call does not wait."""
        clock = FakeClock()
        limiter = RateLimiter(2.0, clock=clock, sleep=clock.sleep)

        async def go() -> None:
            await limiter.wait()
            clock.now += 10
            await limiter.wait()

        asyncio.run(go())
        assert [] == clock.sleeps

    def test_rate_must_be_positive(self) -> None:
        """A rate of zero is refused."""
        with pytest.raises(ValueError):
            RateLimiter(0)


class TestAdmission:
    """At most max_concurrent in flight; the wait is recorded for the case."""

    def test_concurrency_bounded_and_waits_recorded(self) -> None:
        """No more calls than the limit are in flight at once, and the time each waited for its
        slot is measured."""
        admission = Admission(2)
        in_flight, peak = 0, 0

        async def call() -> float:
            nonlocal in_flight, peak
            with measure_queue_wait() as waited:
                async with admission.slot():
                    in_flight += 1
                    peak = max(peak, in_flight)
                    await asyncio.sleep(0.05)
                    in_flight -= 1
            return waited.seconds

        async def go() -> list[float]:
            return await asyncio.gather(*(call() for _ in range(4)))

        waits = sorted(asyncio.run(go()))
        assert 2 == peak
        assert waits[0] < 0.02 and waits[1] < 0.02
        assert waits[2] >= 0.04 and waits[3] >= 0.04


@pytest.mark.e2e
class TestLatencyExcludesOwnLimits:
    """Cases queued behind the target's rate limit report the target's latency only."""

    def test_rate_limited_run(self) -> None:
        """A rate-limited run holds its rate, and the time cases wait in the evaluator's own
        queue is not counted as their latency."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            config = HttpTargetConfig(url=server.url, requests_per_second=20, max_connections=2)
            started = time.perf_counter()
            report, _ = run_config(config, dataset([f"q{i}" for i in range(8)]), concurrency=8)
            elapsed = time.perf_counter() - started
        assert elapsed >= 7 / 20  # the limit held: 8 requests at 20/s take 0.35 s at least
        assert all(c.error is None for c in report.cases)
        # Admitted at 20/s, the i-th request waits about i/20 s in our own queue: 1.4 s in all
        # for 8. Were that wait counted as latency, the latencies would add up to it at least,
        # whatever the load; half of it is a bound only 88 ms of loopback service time per
        # request on average could break (a timing bound on each case flaked on a loaded host).
        queued_in_all = sum(i / 20 for i in range(8))
        assert sum(c.latency_seconds for c in report.cases) < queued_in_all / 2

"""Deadlines: asyncio.timeout's semantics with one timer per target.

Each behaviour is checked against ``asyncio.timeout`` itself (the documented definition):
the same scenario under both must end the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import pytest

from evaluator.targets.deadline import Deadline, Deadlines


class _Scope(Protocol):
    def expired(self) -> bool: ...


Factory = Callable[[float], Any]


def _asyncio(seconds: float) -> Any:
    return asyncio.timeout(seconds)


def _ours(seconds: float) -> Any:
    return Deadlines(seconds).new()


IMPLEMENTATIONS = pytest.mark.parametrize("make", [_asyncio, _ours], ids=["asyncio", "ours"])


async def _outcome(
    scope: AbstractAsyncContextManager[Any] | Deadline, body: Callable[[], Awaitable[None]]
) -> str:
    try:
        if isinstance(scope, Deadline):  # ours is a plain context manager
            with scope:
                await body()
        else:
            async with scope:
                await body()
    except TimeoutError:
        return "timeout"
    return "done"


@IMPLEMENTATIONS
def test_a_call_within_its_deadline_ends_normally(make: Factory) -> None:
    """A call that finishes before its deadline ends normally and the deadline has not
    expired."""

    async def main() -> tuple[str, bool]:
        scope = make(1.0)
        return await _outcome(scope, lambda: asyncio.sleep(0.001)), scope.expired()

    assert asyncio.run(main()) == ("done", False)


@IMPLEMENTATIONS
def test_a_call_past_its_deadline_becomes_a_timeout(make: Factory) -> None:
    """A call still running at its deadline becomes a timeout, never before the deadline."""

    async def main() -> tuple[str, bool, float]:
        loop = asyncio.get_running_loop()
        scope = make(0.02)
        started = loop.time()
        outcome = await _outcome(scope, lambda: asyncio.sleep(10))
        return outcome, scope.expired(), loop.time() - started

    outcome, expired, took = asyncio.run(main())
    assert (outcome, expired) == ("timeout", True)
    assert took >= 0.02  # never before the deadline


@IMPLEMENTATIONS
def test_a_timeout_error_of_the_call_itself_is_not_the_deadline(make: Factory) -> None:
    """A TimeoutError raised by the call itself is a timeout without the deadline having
    expired."""

    async def body() -> None:
        raise TimeoutError("the call's own")

    async def main() -> tuple[str, bool]:
        scope = make(5.0)
        return await _outcome(scope, body), scope.expired()

    assert asyncio.run(main()) == ("timeout", False)


@IMPLEMENTATIONS
def test_a_cancellation_from_outside_stays_a_cancellation(make: Factory) -> None:
    """A task cancelled from outside is cancelled, not turned into a timeout."""

    async def main() -> tuple[str, bool]:
        scope = make(5.0)
        task = asyncio.create_task(_outcome(scope, lambda: asyncio.sleep(10)))
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", scope.expired()
        return "not cancelled", scope.expired()

    assert asyncio.run(main()) == ("cancelled", False)


@IMPLEMENTATIONS
def test_outside_cancellation_at_the_deadline_wins(make: Factory) -> None:
    """Ctrl-C arriving in the same loop pass as the deadline is not turned into a timeout."""

    async def main() -> tuple[str, bool]:
        scope = make(0.02)
        task = asyncio.create_task(_outcome(scope, lambda: asyncio.sleep(10)))
        await asyncio.sleep(0)  # the task is inside the block, waiting
        time.sleep(0.03)  # noqa: ASYNC251 (the loop held past the deadline: its timer is due)
        # the outside cancellation runs in the same pass as the deadline's timer
        asyncio.get_running_loop().call_soon(task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", scope.expired()
        return "not cancelled", scope.expired()

    assert asyncio.run(main()) == ("cancelled", True)


@IMPLEMENTATIONS
def test_an_exception_inside_is_passed_through(make: Factory) -> None:
    """Any other exception of the call passes through the deadline unchanged."""

    async def body() -> None:
        raise KeyError("x")

    async def main() -> None:
        await _outcome(make(5.0), body)

    with pytest.raises(KeyError):
        asyncio.run(main())


def test_a_deadline_is_entered_once() -> None:
    """Entering the same deadline a second time is refused."""

    async def main() -> None:
        deadline = Deadlines(1.0).new()
        with deadline:
            pass
        with deadline:
            pass

    with pytest.raises(RuntimeError, match="entered once"):
        asyncio.run(main())


def test_each_call_times_out_at_its_own_deadline_among_many() -> None:
    """Fast calls finishing around slow ones: only the slow ones expire, each no earlier than
    its own deadline, and the queue holds no more than the calls in flight allow.

    The deadline is 1 s against fast calls of 0-2 ms: on a loaded machine the loop can be
    starved for a few hundred milliseconds, and a 50 ms deadline then expired fast calls too
    (a wall-clock margin, not the property under test)."""
    deadline_seconds = 1.0
    deadlines = Deadlines(deadline_seconds)
    largest = 0

    async def call(seconds: float) -> tuple[str, float]:
        nonlocal largest
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = deadlines.new()
        try:
            with deadline:
                await asyncio.sleep(seconds)
        except TimeoutError:
            assert deadline.expired()
            return "timeout", loop.time() - started
        finally:
            largest = max(largest, len(deadlines._queue))
        return "done", loop.time() - started

    async def main() -> list[tuple[str, float]]:
        calls = []
        for i in range(400):
            # every 50th call never answers; the others take 0-2 ms
            calls.append(call(10.0 if i % 50 == 0 else (i % 3) / 1000))
            if i % 20 == 0:
                await asyncio.sleep(0.001)
        return await asyncio.gather(*[asyncio.ensure_future(c) for c in calls])

    results = asyncio.run(main())
    timed_out = [took for outcome, took in results if outcome == "timeout"]
    assert len(timed_out) == 8
    assert all(took >= deadline_seconds for took in timed_out)
    assert all(outcome == "done" for outcome, _ in results[1:50])
    assert deadlines._running == 0 and not deadlines._queue
    assert largest <= 400


def test_finished_calls_behind_a_stuck_one_do_not_pile_up() -> None:
    """One call that never answers heads the queue for its whole deadline; the thousands
    that finish behind it are compacted away, not kept until it expires."""
    deadlines = Deadlines(30.0)

    async def main() -> int:
        stuck = asyncio.create_task(_outcome(deadlines.new(), lambda: asyncio.sleep(60)))
        await asyncio.sleep(0)
        largest = 0
        for _ in range(5_000):
            with deadlines.new():
                pass
            largest = max(largest, len(deadlines._queue))
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        return largest

    assert asyncio.run(main()) <= 64 + 1


def test_one_timer_serves_many_calls() -> None:
    """The point of it: calls that end in time schedule no timer of their own."""
    deadlines = Deadlines(30.0)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        scheduled = []
        original = loop.call_at

        def counting(when: float, callback: Any, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            scheduled.append(when)
            return original(when, callback, *args, **kw)

        loop.call_at = counting  # type: ignore[method-assign,assignment]

        async def call() -> None:
            with deadlines.new():
                await asyncio.sleep(0)

        # 50 in flight at a time, 1,000 calls: the queue never empties between them
        pending = iter(range(1_000))

        async def worker() -> None:
            for _ in pending:
                await call()

        async with asyncio.TaskGroup() as group:
            for _ in range(50):
                group.create_task(worker())
        return len([w for w in scheduled if w > loop.time() + 20])

    assert asyncio.run(main()) == 1


def test_calls_one_after_another_share_the_timer() -> None:
    """Concurrency 1: each call finds the queue empty, yet no timer per call."""
    deadlines = Deadlines(30.0)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        scheduled = 0
        original = loop.call_at

        def counting(when: float, callback: Any, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            nonlocal scheduled
            scheduled += when > loop.time() + 20
            return original(when, callback, *args, **kw)

        loop.call_at = counting  # type: ignore[method-assign,assignment]
        for _ in range(100):
            with deadlines.new():
                await asyncio.sleep(0)
        late = deadlines.new()
        return scheduled + (await _outcome(late, lambda: asyncio.sleep(0)) != "done")

    assert asyncio.run(main()) == 1


def test_a_stale_timer_still_expires_the_next_call_on_time() -> None:
    """The timer left armed by an earlier call fires early for a later one: the later call
    is not cancelled then, but at its own deadline."""
    deadlines = Deadlines(0.05)

    async def main() -> tuple[str, float, str, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        first = await _outcome(deadlines.new(), lambda: asyncio.sleep(0))  # arms for +0.05
        await asyncio.sleep(0.03)
        second_started = loop.time()
        second = await _outcome(deadlines.new(), lambda: asyncio.sleep(1))  # due at +0.08
        return first, started, second, loop.time() - second_started

    first, _, second, took = asyncio.run(main())
    assert (first, second) == ("done", "timeout")
    assert took >= 0.05


def test_a_new_event_loop_starts_afresh() -> None:
    """One target serves one asyncio.run after another (the CLI): the old loop's timer and
    calls are not carried over."""
    deadlines = Deadlines(0.02)

    async def main() -> str:
        return await _outcome(deadlines.new(), lambda: asyncio.sleep(1))

    assert asyncio.run(main()) == "timeout"
    assert asyncio.run(main()) == "timeout"


def test_outside_a_task_it_refuses() -> None:
    """A deadline entered outside an asyncio task is refused."""
    deadline: Deadline = Deadlines(1.0).new()

    async def enter() -> None:
        deadline.__enter__()

    coroutine = enter()
    with pytest.raises(RuntimeError):
        coroutine.send(None)

"""Retry policy for transient failures of a call to a target or the judge, on tenacity
(exponential backoff with jitter, a ``Retry-After`` honoured up to its cap): the one retry
loop of evaluator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import tenacity

from evaluator.errors import CallError
from evaluator.run_options import RetryPolicy

__all__ = ["RetryPolicy", "call_with_retries"]

T = TypeVar("T")


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, CallError) and exc.transient


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    jittered = tenacity.wait_random_exponential(
        multiplier=policy.backoff_initial, max=policy.backoff_max
    )

    def wait(state: tenacity.RetryCallState) -> float:
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, CallError) and exc.retry_after is not None:
            cap = policy.backoff_max if policy.retry_after_max is None else policy.retry_after_max
            return min(max(exc.retry_after, 0.0), cap)
        return float(jittered(state))

    return wait


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[int, CallError, float], None] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[T, int]:
    r"""Run ``call``, retrying transient :class:`CallError`\ s per ``policy``.

    ``sleep`` waits between attempts; tests pass a recorder to assert exact waits without
    waiting, as the rate limiter's clock and sleep are injected.

    Returns:
        The result and the number of attempts made.

    Raises:
        CallError: the last attempt's error, with ``attempts`` set on it.
    """
    # The first attempt runs bare: nearly every call succeeds at once, and tenacity's
    # machinery cost more per call than scoring a case (tests/benchmarks/bench_scoring.py).
    try:
        return await call(), 1
    except CallError as exc:
        if policy.retries < 1 or not _is_transient(exc):
            exc.attempts = 1
            raise
        first = exc
    return await _retried(call, first, _retrying(policy, on_retry, sleep))


def _retrying(
    policy: RetryPolicy,
    on_retry: Callable[[int, CallError, float], None] | None,
    sleep: Callable[[float], Awaitable[None]],
) -> tenacity.AsyncRetrying:
    """tenacity's loop for ``policy``: transient errors retried, jittered waits (or the
    service's Retry-After), ``on_retry`` told before each wait."""

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if on_retry is not None and isinstance(exc, CallError):
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            on_retry(state.attempt_number, exc, wait)

    return tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.retries + 1),
        wait=_wait(policy),
        retry=tenacity.retry_if_exception(_is_transient),
        before_sleep=before_sleep,
        reraise=True,
        sleep=sleep,
    )


async def _retried(
    call: Callable[[], Awaitable[T]], first: CallError, retrying: tenacity.AsyncRetrying
) -> tuple[T, int]:
    """The retries after a first attempt that failed with ``first``: tenacity's first
    attempt replays that failure, so waits, callbacks and attempt numbers are what they
    would be had tenacity made that attempt itself."""
    replay: CallError | None = first

    async def attempt_call() -> T:
        nonlocal replay
        if replay is not None:
            failed, replay = replay, None
            raise failed
        return await call()

    attempts = 0
    try:
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                result = await attempt_call()
    except CallError as exc:
        exc.attempts = attempts
        raise
    return result, attempts

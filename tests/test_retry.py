"""The retry policy: only transient errors of a call (a target's, the judge's) are retried,
Retry-After is honoured."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import pytest

from evaluator.errors import (
    BadResponseError,
    CallError,
    ResponseTooLargeError,
    TargetConnectError,
    TargetError,
    TargetExceptionError,
    TargetHTTPStatusError,
    TargetTimeout,
)
from evaluator.judge.errors import (
    JudgeConnectError,
    JudgeHTTPStatusError,
    JudgeMalformedError,
    JudgeTimeout,
)
from evaluator.retry import RetryPolicy, call_with_retries

FAST = RetryPolicy(retries=2, backoff_initial=0.01, backoff_max=0.02)


class _Script:
    """A call that raises the scripted errors in turn, then returns "ok"."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


Retry = tuple[int, str, float]


class _Sleeps:
    """An injected sleep: records each wait instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _run(
    call: Callable[[], Awaitable[str]], policy: RetryPolicy = FAST, sleeps: _Sleeps | None = None
) -> tuple[tuple[str, int], list[Retry]]:
    seen: list[Retry] = []

    def on_retry(attempt: int, exc: CallError, sleep: float) -> None:
        seen.append((attempt, exc.kind, sleep))

    sleep = sleeps if sleeps is not None else _Sleeps()
    result = asyncio.run(call_with_retries(call, policy, on_retry=on_retry, sleep=sleep))
    return result, seen


def _status(code: int, retry_after: float | None = None) -> TargetHTTPStatusError:
    return TargetHTTPStatusError(f"HTTP {code}", status=code, retry_after=retry_after)


class TestRetried:
    """Transient failures (connect errors, 429, 502, 503, 504) are retried."""

    def test_first_attempt_succeeds(self) -> None:
        """No failure: one attempt, no retry callback."""
        assert (("ok", 1), []) == _run(_Script([]))

    def test_connect_error_then_success(self) -> None:
        """Two connect errors then success: three attempts, two retry callbacks in order."""
        script = _Script([TargetConnectError("refused"), TargetConnectError("reset")])
        result, seen = _run(script)
        assert ("ok", 3) == result
        assert [(1, "connect"), (2, "connect")] == [(a, k) for a, k, _ in seen]
        assert 3 == script.calls

    @pytest.mark.parametrize("code", [429, 502, 503, 504])
    def test_transient_statuses(self, code: int) -> None:
        """These statuses are retried."""
        result, seen = _run(_Script([_status(code)]))
        assert (("ok", 2), ["http_status"]) == (result, [k for _, k, _ in seen])

    def test_backoff_bounded(self) -> None:
        """Jittered waits never exceed the exponential step nor backoff_max."""
        policy = RetryPolicy(retries=3, backoff_initial=0.01, backoff_max=0.015)
        _, seen = _run(_Script([TargetConnectError("x")] * 3), policy)
        sleeps = [s for _, _, s in seen]
        assert 3 == len(sleeps)
        assert all(0.0 <= s <= min(0.01 * 2 ** (i), 0.015) for i, s in enumerate(sleeps)), sleeps

    def test_gives_up_after_policy_retries(self) -> None:
        """The last error is raised with the attempt count set on it."""
        script = _Script([TargetConnectError(f"refused {i}") for i in range(5)])
        with pytest.raises(TargetConnectError) as info:
            _run(script)
        assert (3, 3, "refused 2") == (info.value.attempts, script.calls, info.value.message)

    @pytest.mark.parametrize(
        "error",
        [JudgeConnectError("refused"), *(JudgeHTTPStatusError("x", status=s) for s in (429, 503))],
        ids=lambda e: f"{e.kind}{getattr(e, 'status', '')}",
    )
    def test_transient_judge_errors(self, error: CallError) -> None:
        """The judge's transient failures take the same policy: retried, attempts counted."""
        result, seen = _run(_Script([error]))
        assert (("ok", 2), [error.kind]) == (result, [k for _, k, _ in seen])

    def test_zero_retries(self) -> None:
        """retries=0 makes exactly one attempt."""
        script = _Script([TargetConnectError("refused"), TargetConnectError("refused")])
        with pytest.raises(TargetConnectError) as info:
            _run(script, RetryPolicy(retries=0, backoff_initial=0.01))
        assert (1, 1) == (info.value.attempts, script.calls)


class TestNotRetried:
    """Permanent failures and foreign exceptions are raised at once."""

    @pytest.mark.parametrize(
        "error",
        [
            TargetTimeout("slow"),
            BadResponseError("not JSON"),
            ResponseTooLargeError("too big"),
            TargetExceptionError("boom"),
            _status(500),
            _status(404),
        ],
        ids=lambda e: type(e).__name__ + str(getattr(e, "status", "")),
    )
    def test_permanent_target_errors(self, error: TargetError) -> None:
        """One attempt; the error carries attempts == 1; no retry callback."""
        script = _Script([error])
        seen: list[int] = []
        with pytest.raises(type(error)) as info:
            asyncio.run(call_with_retries(script, FAST, on_retry=lambda a, e, s: seen.append(a)))
        assert (1, 1, []) == (info.value.attempts, script.calls, seen)

    @pytest.mark.parametrize(
        "error",
        [
            JudgeTimeout("slow"),
            JudgeMalformedError("no verdict"),
            JudgeHTTPStatusError("x", status=400),
        ],
        ids=lambda e: e.kind,
    )
    def test_permanent_judge_errors(self, error: CallError) -> None:
        """A judge timeout, a malformed verdict or a 400: one attempt, raised at once."""
        script = _Script([error])
        with pytest.raises(type(error)) as info:
            _run(script)
        assert (1, 1) == (info.value.attempts, script.calls)

    def test_other_exceptions_propagate(self) -> None:
        """A non-CallError is not the policy's business: raised after one attempt."""
        script = _Script([KeyError("bug")])
        with pytest.raises(KeyError):
            _run(script)
        assert 1 == script.calls


class TestRetryAfter:
    """A status error's Retry-After sets the wait, capped at backoff_max."""

    def test_honoured(self) -> None:
        """Retry-After below the cap is waited exactly."""
        policy = RetryPolicy(retries=1, backoff_initial=0.001, backoff_max=1.0)
        sleeps = _Sleeps()
        result, seen = _run(_Script([_status(429, retry_after=0.05)]), policy, sleeps)
        assert (("ok", 2), [(1, "http_status", 0.05)]) == (result, seen)
        assert [0.05] == sleeps.waits  # the wait announced is the wait taken

    def test_capped(self) -> None:
        """A Retry-After of minutes is cut to backoff_max."""
        policy = RetryPolicy(retries=1, backoff_initial=0.001, backoff_max=0.02)
        _, seen = _run(_Script([_status(503, retry_after=600.0)]), policy)
        assert [(1, "http_status", 0.02)] == seen

    def test_judges_honoured(self) -> None:
        """The judge's 429 with Retry-After waits what it asked, as a target's does."""
        policy = RetryPolicy(retries=1, backoff_initial=0.001, backoff_max=1.0)
        sleeps = _Sleeps()
        error = JudgeHTTPStatusError("HTTP 429", status=429, retry_after=0.25)
        result, _ = _run(_Script([error]), policy, sleeps)
        assert (("ok", 2), [0.25]) == (result, sleeps.waits)

    def test_negative_is_zero(self) -> None:
        """A negative Retry-After means no wait."""
        _, seen = _run(_Script([_status(429, retry_after=-3.0)]))
        assert [(1, "http_status", 0.0)] == seen

"""The judge's errors: one :class:`JudgeError` per kind, under the product's one hierarchy.

A failed judge call is recorded for the case with its kind; it is never a pass or a fail of
the check (the case stays out of the judged averages, counted by kind).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evaluator.errors import CallError

if TYPE_CHECKING:
    from evaluator.judge.parse import Completion

__all__ = [
    "JUDGE_ERROR_KINDS",
    "JudgeConnectError",
    "JudgeError",
    "JudgeHTTPStatusError",
    "JudgeMalformedError",
    "JudgeTimeout",
    "JudgeTooLargeError",
]


class JudgeError(CallError):
    """One judge call failed; ``kind`` is a bounded label (safe as a Prometheus label).

    ``completion``: what the judge answered when it did answer (its usage is paid for even
    when no verdict could be read from it), with the call's ``latency_seconds``; None when
    no completion came back.
    """

    kind = "judge_error"
    transient = False
    completion: Completion | None = None
    latency_seconds: float = 0.0


class JudgeTimeout(JudgeError):
    """The judge did not answer within ``timeout_seconds`` (not retried: it would hide it)."""

    kind = "judge_timeout"


class JudgeConnectError(JudgeError):
    """The judge could not be reached."""

    kind = "judge_connect"
    transient = True


class JudgeHTTPStatusError(JudgeError):
    """The judge answered with a non-2xx status; 429 and 5xx gateways are retried, after the
    ``Retry-After`` the judge asked for (up to the back-off's cap)."""

    kind = "judge_http_status"

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.transient = status in {429, 500, 502, 503, 504}
        self.retry_after = retry_after


class JudgeTooLargeError(JudgeError):
    """The judge's response exceeded ``max_response_bytes``."""

    kind = "judge_too_large"


class JudgeMalformedError(JudgeError):
    """No verdict could be read: not a chat completion, no JSON object, or a verdict of the
    wrong shape (missing fields count: a missing verdict is not a pass)."""

    kind = "judge_malformed"


JUDGE_ERROR_KINDS: tuple[str, ...] = (
    JudgeTimeout.kind,
    JudgeConnectError.kind,
    JudgeHTTPStatusError.kind,
    JudgeTooLargeError.kind,
    JudgeMalformedError.kind,
)

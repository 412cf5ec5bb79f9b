"""The one exception hierarchy of evaluator.

Every error the tool raises on purpose derives from :class:`EvaluatorError`, so the
CLI can print its message as one line and exit with :class:`ExitCode` ``ERROR``::

    EvaluatorError
    ├── ConfigError            bad configuration or command-line values
    ├── UsageError             command-line arguments argparse rejects
    ├── DatasetError           a golden set that cannot be loaded (carries every problem)
    ├── ReportError            a report file that is unreadable, corrupt or incompatible
    ├── OutputError            a report or JUnit file that cannot be written
    ├── PushError              the Pushgateway is unreachable or refused the gate's metrics
    ├── CallError              one call to a service failed: ``kind``, ``transient``, ``attempts``
    │   ├── TargetError            one call to the system under test failed
    │   │   ├── TargetTimeout          kind "timeout"
    │   │   ├── TargetConnectError     kind "connect"
    │   │   ├── TargetHTTPStatusError  kind "http_status" (the ``status``, ``retry_after``)
    │   │   ├── BadResponseError       kind "bad_response" (the ``field``, ``expression``)
    │   │   ├── ResponseTooLargeError  kind "response_too_large"
    │   │   ├── ResponseMemoryError    kind "out_of_memory" (memory ran out reading)
    │   │   ├── StreamInterruptedError kind "stream_interrupted" (a stream cut mid-way)
    │   │   ├── TargetExceptionError   kind "target_exception" (a callable target raised)
    │   │   └── SkippedAfterError      kind "skipped_after_error" (an earlier turn of the
    │   │                              conversation failed: this one was never asked)
    │   └── JudgeError             one call to the LLM judge failed (evaluator/judge/errors.py)
    ├── GateError              two reports that cannot be compared
    └── PageQueryError         a status page's query parameter the page cannot serve (400)

The kinds in :data:`ERROR_KINDS` are derived from :data:`CASE_ERRORS`, and context is held
in attributes set at construction, so no caller parses a message back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CASE_ERRORS",
    "ERROR_KINDS",
    "BadResponseError",
    "CallError",
    "ConfigError",
    "DatasetError",
    "DatasetProblem",
    "EvaluatorError",
    "ExitCode",
    "GateError",
    "OutputError",
    "PageQueryError",
    "PushError",
    "ReportError",
    "ResponseMemoryError",
    "ResponseTooLargeError",
    "SkippedAfterError",
    "StreamInterruptedError",
    "TargetConnectError",
    "TargetError",
    "TargetExceptionError",
    "TargetHTTPStatusError",
    "TargetTimeout",
    "UsageError",
]


class ExitCode(IntEnum):
    """The process's exit status: 2 means the gate failed and nothing else."""

    OK = 0
    #: every other failure, with one line on stderr
    ERROR = 1
    GATE_FAILED = 2
    #: Ctrl-C (128 + SIGINT), as shells report it
    INTERRUPTED = 130


class EvaluatorError(Exception):
    """Base of every error evaluator raises on purpose; its message is one actionable line."""


class ConfigError(EvaluatorError):
    """The configuration (file, environment or flags) is invalid; the message names the field."""


class UsageError(EvaluatorError):
    """Bad command-line arguments (argparse's own exit 2 is reserved for a failed gate)."""


class PageQueryError(EvaluatorError):
    """A page's query parameter is unknown, repeated or out of range; the message names it
    and what is accepted (the daemon answers it with a 400 page)."""


@dataclass(frozen=True)
class DatasetProblem:
    """One problem found in a golden set, located at ``path:line``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        # line 0 means the whole file (unreadable, empty): no line to point at
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.message}"


class DatasetError(EvaluatorError):
    """A golden set is invalid; ``problems`` lists every problem found, not just the first."""

    def __init__(self, problems: Sequence[DatasetProblem]) -> None:
        self.problems = tuple(problems)
        first = str(self.problems[0]) if self.problems else "invalid dataset"
        more = len(self.problems) - 1
        super().__init__(first + (f" (and {more} more problem(s))" if more > 0 else ""))


class ReportError(EvaluatorError):
    """A run report cannot be read back (missing, truncated, wrong schema)."""


class OutputError(EvaluatorError):
    """A file the command was asked to write (report, JUnit) cannot be written."""


class PushError(EvaluatorError):
    """The Pushgateway could not be reached or refused the push."""


class GateError(EvaluatorError):
    """Two reports cannot be compared (different golden set or K)."""


class CallError(EvaluatorError):
    """One call to a service evaluator depends on (a target, the judge) failed: what
    :func:`evaluator.retry.call_with_retries` retries.

    ``kind`` is a bounded label; ``transient`` says whether repeating the same call may
    succeed; ``attempts`` how many calls were made before giving up (set by the retry
    policy); ``retry_after`` the seconds the service asked to wait (``Retry-After``), or None.
    """

    kind = "call_error"
    transient: bool = False
    retry_after: float | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        #: attempts made before giving up (set by the retry policy)
        self.attempts = 1


class TargetError(CallError):
    """One call to the target failed; ``kind`` is the error taxonomy key used everywhere.

    Only its subclasses are raised (each has a kind in :data:`ERROR_KINDS`). ``transient``
    defaults to the class's verdict; the raiser passes it when it knows better (a TLS
    failure is a connect error that no retry fixes).
    """

    kind = "target_error"
    #: whether retrying the same call may succeed, unless the raiser says otherwise
    transient_by_default = False

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        # a class-level ``transient`` would be shadowed by the instance's, silently
        if "transient" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: set transient_by_default, not transient")

    def __init__(self, message: str, *, transient: bool | None = None) -> None:
        super().__init__(message)
        self.transient = self.transient_by_default if transient is None else transient


class TargetTimeout(TargetError):
    """The target did not answer within the configured time."""

    kind = "timeout"
    # a read timeout inside the deadline is not retried: it would hide slowness
    transient_by_default = False


class TargetConnectError(TargetError):
    """The target could not be reached (refused, reset before a response, DNS)."""

    kind = "connect"
    transient_by_default = True


class TargetHTTPStatusError(TargetError):
    """The target answered with a non-2xx status."""

    kind = "http_status"
    #: statuses that say "try again": rate limited, or a gateway in front of the target
    TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message, transient=status in self.TRANSIENT_STATUSES)
        self.status = status
        self.retry_after = retry_after


class BadResponseError(TargetError):
    """The response is not valid JSON or a mapped field is missing or of the wrong type.

    ``field`` names the response field that failed (a mapped field such as ``ids``, or a
    default-contract field such as ``answer``; ``response`` for a body that is no object),
    and ``expression`` the mapping's JMESPath for it; both None for a body that is not JSON.
    """

    kind = "bad_response"

    def __init__(
        self, message: str, *, field: str | None = None, expression: str | None = None
    ) -> None:
        super().__init__(message)
        self.field = field
        self.expression = expression


class ResponseTooLargeError(TargetError):
    """The response body exceeded the configured size cap."""

    kind = "response_too_large"


class ResponseMemoryError(TargetError):
    """Memory ran out while a response was read or decoded (the process is near its limit)."""

    kind = "out_of_memory"


class StreamInterruptedError(TargetError):
    """A streamed response ended before it was complete (connection lost, no end marker)."""

    kind = "stream_interrupted"


class TargetExceptionError(TargetError):
    """A Python-callable target raised an exception."""

    kind = "target_exception"


class SkippedAfterError(TargetError):
    """A conversation's turn was not asked: an earlier turn failed, and a follow-up sent
    without its context would be scored against a question the script never asks.

    Never raised: the runner records the turns after a failed one with this kind. They
    count as failed cases (the error rate), never as scored ones, and no latency."""

    kind = "skipped_after_error"


#: The errors a case can end in, in the order their kinds are listed.
CASE_ERRORS: tuple[type[TargetError], ...] = (
    TargetTimeout,
    TargetConnectError,
    TargetHTTPStatusError,
    BadResponseError,
    ResponseTooLargeError,
    ResponseMemoryError,
    StreamInterruptedError,
    TargetExceptionError,
    SkippedAfterError,
)

#: Every error kind a case can end in: bounded, so safe as a Prometheus label value.
ERROR_KINDS: tuple[str, ...] = tuple(error.kind for error in CASE_ERRORS)

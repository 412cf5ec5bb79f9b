"""The one exception hierarchy of evaluator.

Every error the tool raises on purpose derives from :class:`EvaluatorError`, so the
CLI can print its message as one line and exit with :class:`ExitCode` ``ERROR``::

    EvaluatorError
    ├── ConfigError            bad configuration or command-line values
    ├── UsageError             command-line arguments argparse rejects
    ├── DatasetError           a golden set that cannot be loaded (carries every problem)
    ├── ReportError            a report file that is unreadable, corrupt or incompatible
    ├── TargetError            one call to the system under test failed (has a ``kind``)
    │   ├── TargetTimeout          kind "timeout"
    │   ├── TargetConnectError     kind "connect"
    │   ├── TargetHTTPStatusError  kind "http_status" (with the status code)
    │   ├── BadResponseError       kind "bad_response"
    │   ├── ResponseTooLargeError  kind "response_too_large"
    │   ├── ResponseMemoryError    kind "out_of_memory" (memory ran out reading a response)
    │   ├── StreamInterruptedError kind "stream_interrupted" (a streamed answer cut mid-way)
    │   └── TargetExceptionError   kind "target_exception" (a callable target raised)
    └── GateError              two reports that cannot be compared
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "ERROR_KINDS",
    "BadResponseError",
    "ConfigError",
    "DatasetError",
    "DatasetProblem",
    "EvaluatorError",
    "ExitCode",
    "GateError",
    "ReportError",
    "ResponseMemoryError",
    "ResponseTooLargeError",
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


class GateError(EvaluatorError):
    """Two reports cannot be compared (different golden set or K)."""


class TargetError(EvaluatorError):
    """One call to the target failed; ``kind`` is the error taxonomy key used everywhere."""

    kind = "target_error"
    #: whether retrying the same call may succeed
    transient = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        #: attempts made before giving up (set by the retry policy)
        self.attempts = 1


class TargetTimeout(TargetError):
    """The target did not answer within the configured time."""

    kind = "timeout"
    transient = False  # a read timeout inside the deadline is not retried: it would hide slowness


class TargetConnectError(TargetError):
    """The target could not be reached (refused, reset before a response, DNS)."""

    kind = "connect"
    transient = True


class TargetHTTPStatusError(TargetError):
    """The target answered with a non-2xx status."""

    kind = "http_status"

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:  # type: ignore[override]
        return self.status in (429, 502, 503, 504)


class BadResponseError(TargetError):
    """The response is not valid JSON or a mapped field is missing or of the wrong type."""

    kind = "bad_response"


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


#: Every error kind a case can end in: bounded, so safe as a Prometheus label value.
ERROR_KINDS: tuple[str, ...] = (
    "timeout",
    "connect",
    "http_status",
    "bad_response",
    "response_too_large",
    "out_of_memory",
    "stream_interrupted",
    "target_exception",
)

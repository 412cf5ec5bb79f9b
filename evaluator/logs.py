"""Structured logging: the only place that configures structlog (global state lives here).

JSON lines on stderr by default (as daemons log: stdout stays the commands' own output),
readable console output when stderr is a terminal, coloured unless ``NO_COLOR`` is set.
Floats carry six significant digits, enough to read and to compare. Standard-library records
(apscheduler, uvicorn, httpx) go through the same processors, so they are JSON too and carry
the bound ``run_id``, in one stable shape: ``event: "library_log"``, ``logger``, ``level``,
``message`` (the library's own text) and ``timestamp``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any, Literal, TextIO

import structlog
import structlog.tracebacks

from evaluator.redaction import redactor

__all__ = [
    "MAX_LOG_LIST_ITEMS",
    "MAX_LOG_VALUE_CHARS",
    "REDACTED",
    "bound_values",
    "configure_logging",
    "redact_line",
    "redact_secrets",
    "use_colour",
]

#: the longest string value a log event carries; the rest is cut (a target's 3 MB error
#: body must not become a 3 MB log line)
MAX_LOG_VALUE_CHARS = 2000
#: the most items of a list value a log event carries
MAX_LOG_LIST_ITEMS = 50

REDACTED = "[redacted]"
# tracebacks as JSON, without frame locals: a local may hold a token or a request header
_DICT_TRACEBACKS = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)
# Known secret names, as whole words of a key: "api_token", "x-auth-token" and
# "Authorization" are secrets; "tokenize" is not, and neither are the words that measure
# usage ("input_tokens", "tokens_per_second", "max_tokens": a count of tokens is a figure).
# Secret values a key does not name are the redactor's (evaluator.redaction).
_SECRET_KEY = re.compile(
    r"(^|[_\-.])(authorization|token|api[_\-]?key|password|passwd|secrets?|cookies?"
    r"|credentials?|private[_\-]?key)($|[_\-.])",
    re.IGNORECASE,
)


def redact_secrets(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Replace the values of secret-looking keys, however deeply they are nested."""
    for key, value in list(event_dict.items()):
        if _SECRET_KEY.search(str(key)):
            event_dict[key] = REDACTED
        elif isinstance(value, MutableMapping):
            redact_secrets(_logger, _method, value)
    return event_dict


def _bounded(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        if len(value) <= MAX_LOG_VALUE_CHARS:
            return value
        # redacted before the cut: half a secret would no longer be recognised afterwards
        text = redactor().redact_text(value)
        if len(text) <= MAX_LOG_VALUE_CHARS:
            return text
        return f"{text[:MAX_LOG_VALUE_CHARS]}... ({len(text) - MAX_LOG_VALUE_CHARS} more chars)"
    if depth > 8:
        return value
    if isinstance(value, MutableMapping):
        return {k: _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_bounded(v, depth + 1) for v in value[:MAX_LOG_LIST_ITEMS]]
        if len(value) > MAX_LOG_LIST_ITEMS:
            items.append(f"... ({len(value) - MAX_LOG_LIST_ITEMS} more items)")
        return items
    return value


def bound_values(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Cut long strings and lists, so one event's size has a ceiling whatever a target sent."""
    for key, value in list(event_dict.items()):
        if isinstance(value, str | list | tuple | MutableMapping):
            event_dict[key] = _bounded(value)
    return event_dict


#: significant digits of a logged float: a ratio of 0.8333333333333334 is read as 0.833333
LOG_FLOAT_DIGITS = 6


def _readable(value: Any, depth: int = 0) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{LOG_FLOAT_DIGITS}g}")
    if depth > 8:
        return value
    if isinstance(value, MutableMapping):
        return {k: _readable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_readable(v, depth + 1) for v in value]
    return value


def readable_floats(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Floats, also nested, to :data:`LOG_FLOAT_DIGITS` significant digits."""
    for key, value in list(event_dict.items()):
        if isinstance(value, float | list | tuple | MutableMapping):
            event_dict[key] = _readable(value)
    return event_dict


def _nested_as_json(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Console lines: a nested value (the run's summary) as JSON, not a Python repr."""
    for key, value in list(event_dict.items()):
        if isinstance(value, MutableMapping | list | tuple) and key != "exception":
            event_dict[key] = json.dumps(value, ensure_ascii=False, default=str)
    return event_dict


def _library_record(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A standard-library record (APScheduler's "Run time of job ... was missed"): its free
    text moves to ``message`` and ``event`` names the kind of line, so every line of the
    stream can be filtered by ``event``."""
    event_dict["message"] = event_dict.get("event")
    event_dict["event"] = "library_log"
    return event_dict


def use_colour(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that should get colour (the logs' and the gate's)."""
    # https://no-color.org: any non-empty NO_COLOR turns colour off
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def redact_line(_logger: object, _method: str, line: Any) -> Any:
    """The rendered line, redacted of every registered secret: the logs' one egress point
    (it sees tracebacks and records from other libraries too)."""
    if isinstance(line, str):
        return redactor().redact_text(line)
    return line


def configure_logging(
    fmt: Literal["auto", "json", "console"] = "auto",
    level: str = "info",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and the standard library's root logger.

    Args:
        fmt: ``auto`` renders for a console when ``stream`` is a terminal, JSON otherwise.
        level: minimum level name.
        stream: where lines go; stderr by default.
    """
    out = stream or sys.stderr
    use_console = fmt == "console" or (fmt == "auto" and out.isatty())
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
        bound_values,
        readable_floats,
    ]
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=use_colour(out))
        if use_console
        else structlog.processors.JSONRenderer(ensure_ascii=False)
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[_library_record, *shared],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _DICT_TRACEBACKS if not use_console else _nested_as_json,
            renderer,
            redact_line,
        ],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # one line per HTTP request from httpx would drown the per-case events; APScheduler's
    # "Running job"/"executed successfully" pair repeats each run line (its warnings stay)
    for noisy in ("httpx", "httpcore", "aiohttp.access", "apscheduler"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))

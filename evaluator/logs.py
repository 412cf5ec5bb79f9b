"""Structured logging: the only place that configures structlog (global state lives here).

JSON lines on stdout by default, readable console output when stdout is a terminal.
Standard-library records (apscheduler, uvicorn, httpx) go through the same processors, so
they are JSON too and carry the bound ``run_id``.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, Literal, TextIO

import structlog
import structlog.tracebacks

__all__ = ["REDACTED", "configure_logging", "get_logger", "redact_secrets"]

REDACTED = "[redacted]"
# tracebacks as JSON, without frame locals: a local may hold a token or a request header
_DICT_TRACEBACKS = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)
# whole words of a key: "api_token" and "Authorization" are secrets, "tokenize" is not
_SECRET_KEY = re.compile(
    r"(^|[_\-.])(authorization|tokens?|api[_\-]?key|password|passwd|secrets?|cookies?)($|[_\-.])",
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


def configure_logging(
    fmt: Literal["auto", "json", "console"] = "auto",
    level: str = "info",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and the standard library's root logger.

    Args:
        fmt: ``auto`` renders for a console when ``stream`` is a terminal, JSON otherwise.
        level: minimum level name.
        stream: where lines go; stdout by default.
    """
    out = stream or sys.stdout
    use_console = fmt == "console" or (fmt == "auto" and out.isatty())
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer()
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
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _DICT_TRACEBACKS if not use_console else _identity,
            renderer,
        ],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # one line per HTTP request from httpx would drown the per-case events
    for noisy in ("httpx", "httpcore", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def _identity(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    return event_dict


def get_logger(name: str = "evaluator") -> Any:
    """A structlog logger bound to ``name``."""
    return structlog.get_logger(name)

"""Targets: the systems under test, reached over HTTP or called in-process.

Build one from configuration with :func:`evaluator.factory.build_target`. The names below
load on first use: the configuration imports this package's light modules (the template
grammar, the default target name), and must not pay for the HTTP stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluator.targets.base import Target, parse_default_response
    from evaluator.targets.callable import CallableTarget, load_callable
    from evaluator.targets.http import HttpOptions, HttpTarget
    from evaluator.targets.mapping import ResponseMapper
    from evaluator.targets.request import RequestTemplate

__all__ = [
    "CallableTarget",
    "HttpOptions",
    "HttpTarget",
    "RequestTemplate",
    "ResponseMapper",
    "Target",
    "load_callable",
    "parse_default_response",
]

_HOMES = {
    "CallableTarget": "callable",
    "HttpOptions": "http",
    "HttpTarget": "http",
    "RequestTemplate": "request",
    "ResponseMapper": "mapping",
    "Target": "base",
    "load_callable": "callable",
    "parse_default_response": "base",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'evaluator.targets' has no attribute {name!r}")
    return getattr(importlib.import_module(f"evaluator.targets.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""Targets: the systems under test, reached over HTTP or called in-process.

Build one from configuration with :func:`evaluator.targets.factory.build_target` (not
re-exported here: the factory imports the configuration, which imports this package).
"""

from __future__ import annotations

from evaluator.targets.base import Target, parse_default_response
from evaluator.targets.callable import CallableTarget, load_callable
from evaluator.targets.http import HttpOptions, HttpTarget
from evaluator.targets.mapping import ResponseMapper, mapping_diagnosis
from evaluator.targets.request import RequestTemplate

__all__ = [
    "CallableTarget",
    "HttpOptions",
    "HttpTarget",
    "RequestTemplate",
    "ResponseMapper",
    "Target",
    "load_callable",
    "mapping_diagnosis",
    "parse_default_response",
]

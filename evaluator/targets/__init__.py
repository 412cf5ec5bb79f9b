"""Targets: the systems under test, reached over HTTP or called in-process."""

from __future__ import annotations

from evaluator.targets.base import Target, parse_default_response
from evaluator.targets.callable import CallableTarget, load_callable
from evaluator.targets.http import HttpTarget

__all__ = ["CallableTarget", "HttpTarget", "Target", "load_callable", "parse_default_response"]

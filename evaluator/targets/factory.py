"""Build a :class:`Target` from its configuration."""

from __future__ import annotations

from evaluator.config import TargetConfig
from evaluator.targets.base import Target
from evaluator.targets.callable import CallableTarget
from evaluator.targets.http import HttpTarget

__all__ = ["build_target"]


def build_target(config: TargetConfig) -> Target:
    """An HTTP or callable target as ``config`` says.

    Raises:
        ConfigError: a callable that cannot be imported.
    """
    if config.callable is not None:
        return CallableTarget(config.callable, name=config.label, timeout=config.timeout_seconds)
    assert config.url is not None  # guaranteed by TargetConfig's validator
    return HttpTarget(config.url, name=config.label, timeout=config.timeout_seconds)

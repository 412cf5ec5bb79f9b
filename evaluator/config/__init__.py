"""Configuration: a TOML file overridden by ``EVALUATOR_...`` environment variables.

Priority, highest first: command-line flags, environment (``EVALUATOR_K=10``, nested with
``__``: ``EVALUATOR_SCORING__REFUSAL_PHRASES='["..."]'``), the TOML file, defaults.
Every model forbids unknown keys: a typo stops the process at start, naming the field.

The package: ``fields`` (shared building blocks), ``target`` (a target's settings), ``jobs``
(jobs, server, history, OTLP), ``settings`` (the whole), ``load`` (file, environment, errors) and
``sources`` (where settings come from, known without importing pydantic). The names below load
on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluator.config.fields import (
        DEFAULT_BUCKETS,
        MAX_SECONDS,
        MIN_REQUESTS_PER_SECOND,
        RetryConfig,
        ScoringConfig,
        TlsConfig,
    )
    from evaluator.config.jobs import (
        HistoryConfig,
        JobConfig,
        OtlpConfig,
        ServerConfig,
        cron_trigger,
    )
    from evaluator.config.load import load_settings
    from evaluator.config.settings import Settings
    from evaluator.config.sources import DEFAULT_CONFIG_PATH, ENV_PREFIX
    from evaluator.config.target import (
        KIND_NAMES,
        TARGET_KINDS,
        CallableTargetConfig,
        HttpTargetConfig,
        PricesConfig,
        RequestConfig,
        ResponseConfig,
        StreamingConfig,
        TargetConfig,
        TraceConfig,
    )

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_CONFIG_PATH",
    "ENV_PREFIX",
    "KIND_NAMES",
    "MAX_SECONDS",
    "MIN_REQUESTS_PER_SECOND",
    "TARGET_KINDS",
    "CallableTargetConfig",
    "HistoryConfig",
    "HttpTargetConfig",
    "JobConfig",
    "OtlpConfig",
    "PricesConfig",
    "RequestConfig",
    "ResponseConfig",
    "RetryConfig",
    "ScoringConfig",
    "ServerConfig",
    "Settings",
    "StreamingConfig",
    "TargetConfig",
    "TlsConfig",
    "TraceConfig",
    "cron_trigger",
    "load_settings",
]

_HOMES = {
    "CallableTargetConfig": "target",
    "DEFAULT_BUCKETS": "fields",
    "DEFAULT_CONFIG_PATH": "sources",
    "ENV_PREFIX": "sources",
    "HistoryConfig": "jobs",
    "HttpTargetConfig": "target",
    "JobConfig": "jobs",
    "KIND_NAMES": "target",
    "MAX_SECONDS": "fields",
    "MIN_REQUESTS_PER_SECOND": "fields",
    "OtlpConfig": "jobs",
    "PricesConfig": "target",
    "RequestConfig": "target",
    "ResponseConfig": "target",
    "RetryConfig": "fields",
    "ScoringConfig": "fields",
    "ServerConfig": "jobs",
    "Settings": "settings",
    "StreamingConfig": "target",
    "TARGET_KINDS": "target",
    "TargetConfig": "target",
    "TlsConfig": "fields",
    "TraceConfig": "target",
    "cron_trigger": "jobs",
    "load_settings": "load",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'evaluator.config' has no attribute {name!r}")
    return getattr(importlib.import_module(f"evaluator.config.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

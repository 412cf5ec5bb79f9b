"""Build a :class:`Target` from its configuration."""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

from evaluator.config import TargetConfig, TlsConfig
from evaluator.errors import ConfigError
from evaluator.targets.base import Target
from evaluator.targets.callable import CallableTarget
from evaluator.targets.http import HttpOptions, HttpTarget
from evaluator.targets.mapping import ResponseMapper
from evaluator.targets.request import RequestTemplate

__all__ = ["build_target"]


def build_target(
    config: TargetConfig,
    *,
    environ: Mapping[str, str] | None = None,
) -> Target:
    """An HTTP or callable target as ``config`` says.

    Args:
        config: the target's configuration.
        environ: where ``${NAME}`` references are read; default ``os.environ``.

    Raises:
        ConfigError: a callable that cannot be imported, an unset environment variable,
            an unreadable CA bundle.
    """
    if config.callable is not None:
        return CallableTarget(config.callable, name=config.label, timeout=config.timeout_seconds)
    if config.url is None:  # TargetConfig's validator guarantees one of the two
        raise ConfigError("target has neither 'url' nor 'callable'")
    where = f"target {config.label!r}"
    try:
        template = RequestTemplate.from_config(
            config.url,
            method=config.request.method,
            params=config.request.params,
            headers=config.request.headers,
            body=config.request.body,
            environ=os.environ if environ is None else environ,
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    options = HttpOptions(
        deadline=config.timeout_seconds,
        connect_timeout=config.connect_timeout_seconds,
        read_timeout=config.read_timeout_seconds,
        max_response_bytes=config.max_response_bytes,
        max_connections=config.max_connections,
        requests_per_second=config.requests_per_second,
        verify=_verify(config.tls, where),
    )
    mapper = ResponseMapper(config.response.compiled) if config.response is not None else None
    return HttpTarget(
        config.url,
        name=config.label,
        request=template,
        mapper=mapper,
        options=options,
    )


def _verify(tls: TlsConfig, where: str) -> ssl.SSLContext | bool:
    if tls.ca_bundle is None:
        return tls.verify
    try:
        return ssl.create_default_context(cafile=str(tls.ca_bundle))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"{where}: tls.ca_bundle {tls.ca_bundle}: cannot load CA certificates ({exc})"
        ) from None

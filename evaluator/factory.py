"""Build a :class:`Target` from its configuration."""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

import jmespath
from pydantic import JsonValue

from evaluator.config import (
    CallableTargetConfig,
    HttpTargetConfig,
    ResponseConfig,
    StreamingConfig,
    TargetConfig,
    TlsConfig,
)
from evaluator.errors import ConfigError
from evaluator.targets import presets
from evaluator.targets.base import Target
from evaluator.targets.callable import CallableTarget
from evaluator.targets.mapping import ResponseMapper
from evaluator.targets.markers import compile_markers
from evaluator.targets.streaming import StreamSpec

if TYPE_CHECKING:  # the HTTP stack (aiohttp) is imported when an HTTP target is built
    from evaluator.targets.http import HttpTarget

__all__ = ["build_http_target", "build_target"]


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
    if isinstance(config, CallableTargetConfig):
        return CallableTarget(
            config.callable,
            name=config.label,
            timeout=config.timeout_seconds,
            history=config.history,
        )
    return build_http_target(config, environ=environ)


def build_http_target(
    config: HttpTargetConfig, *, environ: Mapping[str, str] | None = None
) -> HttpTarget:
    """The HTTP target ``config`` describes, its kind's preset applied."""
    # here, not at the top: a run of a callable target never loads aiohttp (~0.15 s)
    from evaluator.targets.conversation import ConversationIds
    from evaluator.targets.http import HttpOptions, HttpTarget
    from evaluator.targets.request import RequestTemplate

    where = f"target {config.label!r}"
    applied = _preset(config)
    response, streaming = applied.response, applied.streaming
    try:
        template = RequestTemplate.from_config(
            config.url,
            method=config.request.method,
            params=config.request.params,
            headers=config.request.headers,
            body=applied.body,
            turn_body=applied.turn_body,
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
        max_ranked_ids=config.max_ranked_ids,
    )
    mapper = None
    if response is not None:
        scale = 0.001 if response.timings_unit == "milliseconds" else 1.0
        mapper = ResponseMapper(
            response.compiled,
            timings_scale=scale,
            markers=None
            if response.citation_markers is None
            else compile_markers(response.citation_markers),
            retrieved_when=None
            if response.retrieved_when is None
            else jmespath.compile(response.retrieved_when),
        )
    prices = config.prices
    stateful = config.conversation
    conversation = (
        None
        if stateful is None
        else ConversationIds(jmespath.compile(stateful.id), stateful.send, stateful.name)
    )
    return HttpTarget(
        config.url,
        name=config.label,
        request=template,
        mapper=mapper,
        options=options,
        streaming=_stream_spec(streaming),
        server_timing=config.server_timing,
        trace_header=config.trace.header if config.trace.enabled else None,
        prices=None if prices is None else (prices.input_per_1k, prices.output_per_1k),
        kind=config.kind,
        history=config.history,
        conversation=conversation,
    )


class _Applied(NamedTuple):
    """A target's request bodies, response mapping and streaming, its preset applied."""

    body: JsonValue
    #: a conversation's turn (None: ``body``, whose placeholders place the history)
    turn_body: JsonValue
    response: ResponseConfig | None
    streaming: StreamingConfig | None


def _preset(config: HttpTargetConfig) -> _Applied:
    """The bodies, response mapping and streaming of ``config``, its kind's preset applied
    (the configuration's own fields override the preset's: a body of its own is sent for
    a conversation's turn too, its placeholders saying where the history goes)."""
    if config.kind == "http":
        return _Applied(config.request.body, None, config.response, config.streaming)
    assert config.model is not None  # HttpTargetConfig's validator
    preset = presets.PRESETS[config.kind]
    body = config.request.body
    turn_body = None
    if body is None:
        body = preset.body(config.model, config.stream)
        turn_body = preset.turn_body(config.model, config.stream)
    # the configuration merged the preset's mapping under its own [response] fields
    response = config.response
    streaming = None
    if config.stream:
        # a [streaming] table was merged over the preset's by the configuration
        streaming = config.streaming or StreamingConfig.model_validate(dict(preset.streaming))
    return _Applied(body, turn_body, response, streaming)


def _stream_spec(streaming: StreamingConfig | None) -> StreamSpec | None:
    if streaming is None:
        return None
    return StreamSpec(
        format=streaming.format,
        content=jmespath.compile(streaming.content),
        fields_from=None
        if streaming.fields_from is None
        else jmespath.compile(streaming.fields_from),
        done=streaming.done,
        finish=None if streaming.finish is None else jmespath.compile(streaming.finish),
        done_event=streaming.done_event,
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

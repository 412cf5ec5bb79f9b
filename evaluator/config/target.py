"""A target's settings: how to reach the system under test and read its answers.

An HTTP target (url, request template, response mapping, streaming, prices, traces) or an
in-process callable; ``TargetConfig`` tells them apart by which of ``url`` and ``callable`` is set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import jmespath
from jmespath.parser import ParsedResult
from pydantic import (
    Discriminator,
    Field,
    JsonValue,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from evaluator import border
from evaluator.bounds import DEFAULT_MAX_STAGES, DEFAULT_TEXT_CHARS, RecordLimits, StageNames
from evaluator.config.fields import (
    MIN_REQUESTS_PER_SECOND,
    RetryConfig,
    TlsConfig,
    _jmespath,
    _seconds,
    _Strict,
    _url_problem,
)
from evaluator.targets import presets
from evaluator.targets.base import HistorySource, default_target_name
from evaluator.targets.markers import compile_markers
from evaluator.targets.templates import (
    DEFAULT_BODY,
    ENV_REFERENCE,
    env_reference_problem,
    mentions_question,
)

__all__ = [
    "KIND_NAMES",
    "TARGET_KINDS",
    "CallableTargetConfig",
    "ConversationConfig",
    "HttpTargetConfig",
    "PricesConfig",
    "RequestConfig",
    "ResponseConfig",
    "StreamingConfig",
    "TargetConfig",
    "TraceConfig",
]


class RequestConfig(_Strict):
    """How a question becomes a request; the default is the default contract.

    ``{question}`` and ``{k}`` are substituted in parameter values and body strings (a body
    value of exactly ``"{k}"`` becomes the integer K); ``${NAME}`` in header and parameter
    values reads the environment variable NAME when the target is built, as a secret.
    """

    method: Literal["GET", "POST"] = "POST"
    """HTTP method."""
    params: dict[str, str] = Field(
        default_factory=dict, description="query parameters: {question}, {k}, ${ENV}"
    )
    headers: dict[str, str] = Field(default_factory=dict, description="headers: ${ENV}")
    body: JsonValue = Field(
        None,
        description='JSON body template; POST default {"question": "{question}", "top_k": "{k}"}',
    )

    @model_validator(mode="after")
    def _consistent(self) -> RequestConfig:
        """A GET has no body, every ``${VAR}`` is well formed and outside the body, and the
        question is sent somewhere."""
        if self.method == "GET" and self.body is not None:
            raise ValueError("a GET request has no body: put {question} in 'params'")
        self._check_references()
        if ENV_REFERENCE.search(self._body_text()):
            raise ValueError(
                "body: ${...} is not resolved in the body; pass secrets in headers or params"
            )
        body = DEFAULT_BODY if self.body is None and self.method == "POST" else self.body
        if not (mentions_question(body) or mentions_question(dict(self.params))):
            raise ValueError(
                "the question is sent nowhere: put '{question}' (or '{messages}') in 'params' "
                "or in the 'body'"
            )
        return self

    def _body_text(self) -> str:
        """The body template's JSON text.

        Raises:
            ValueError: it holds NaN or Infinity (TOML has them, JSON does not: the body
                would not be JSON).
        """
        try:
            return json.dumps(self.body, allow_nan=False)
        except ValueError:
            raise ValueError(
                "body: nan and inf are not JSON numbers; write a finite number"
            ) from None

    def _check_references(self) -> None:
        """Every ``${VAR}`` in a parameter or header is one the process can resolve."""
        for section, entries in (("params", self.params), ("headers", self.headers)):
            for name, value in entries.items():
                problem = env_reference_problem(value)
                if problem:
                    raise ValueError(f"{section}.{name}: {problem}")


class ResponseConfig(_Strict):
    """Where each field sits in the response: JMESPath expressions (https://jmespath.org).

    Only ``ids`` is required; without ``answer`` the target is retrieval-only (answer and
    citation metrics are not scored). Expressions are compiled here, once.
    """

    ids: str = Field(description="ranked ids, best first: 'retrieved[].id', '[].id'")
    answer: str | None = Field(None, description="the answer text; absent: retrieval-only")
    citations: str | None = Field(None, description="1-based positions or ids")
    timings: str | None = Field(None, description="object: stage -> seconds (or timings_unit)")
    texts: str | None = Field(None, description="one text per id")
    scores: str | None = Field(None, description="one score per id")
    input_tokens: str | None = Field(None, description="prompt tokens: 'usage.prompt_tokens'")
    output_tokens: str | None = Field(
        None, description="completion tokens: 'usage.completion_tokens'"
    )
    timings_unit: Literal["seconds", "milliseconds"] = Field(
        "seconds", description="unit of the timings values ('took_ms': milliseconds)"
    )
    citation_markers: str | None = Field(
        None,
        description="citations written in the answer: 'numbers' ([1], [1, 3], [^1], 【1】), "
        "'ids' ([refund-policy]) or a regex with exactly one group, around the marker",
    )
    retrieved_when: str | None = Field(
        None,
        description="JMESPath: true (not null, false or empty) for a response that reports "
        "its retrieval; one where it is not has its retrieval metrics n/a; default every one",
    )

    _compiled: dict[str, ParsedResult] = PrivateAttr(default_factory=dict)

    _compiles = field_validator(
        "ids",
        "answer",
        "citations",
        "timings",
        "texts",
        "scores",
        "input_tokens",
        "output_tokens",
        "retrieved_when",
    )(_jmespath)

    @field_validator("citation_markers")
    @classmethod
    def _markers(cls, value: str | None) -> str | None:
        if value is not None:
            compile_markers(value)
        return value

    @property
    def cites(self) -> bool:
        """Whether the mapping says where citations are (a field or markers)."""
        return self.citations is not None or self.citation_markers is not None

    def model_post_init(self, context: Any, /) -> None:
        settings = {"timings_unit", "citation_markers", "retrieved_when"}
        self._compiled = {
            name: jmespath.compile(value)
            for name, value in self.model_dump(exclude=settings).items()
            if value is not None
        }

    @property
    def compiled(self) -> dict[str, ParsedResult]:
        """Field name -> compiled expression, for the fields that are set."""
        return dict(self._compiled)


class ConversationConfig(_Strict):
    """A service that keeps the conversation itself: the id its response gives, sent back
    with the conversation's later turns (the first turn is sent without one)."""

    id: str = Field(
        description="where a response carries the service's conversation id (JMESPath): "
        "'conversation_id', 'metadata.thread_id'"
    )
    send: Literal["header", "query", "body"] = Field(
        "header", description="where the id goes back: a header, a query parameter or a body key"
    )
    name: str = Field(
        min_length=1,
        max_length=256,
        description="the header, query parameter or top-level body key it is sent back in",
    )

    _compiles = field_validator("id")(_jmespath)

    @model_validator(mode="after")
    def _sendable(self) -> ConversationConfig:
        if self.send == "header":
            problem = border.header_problem(self.name, "x")
            if problem is not None:
                raise ValueError(f"name: {problem}")
        return self


class StreamingConfig(_Strict):
    """A streamed response: SSE or NDJSON events assembled into the answer.

    ``content`` finds each event's piece of answer text; each field of the response mapping
    is read from the last event where it matches (among those where ``fields_from`` is true).
    """

    format: Literal["sse", "ndjson"] = Field(description="server-sent events or NDJSON")
    content: str = Field(description="JMESPath: the answer text in one event ('delta')")
    fields_from: str | None = Field(
        None,
        description="JMESPath: true for the events the mapping reads (each field from the "
        "last one where it matches); default every event",
    )
    done: str | None = Field(None, description="data that ends the stream ('[DONE]')")
    finish: str | None = Field(
        None,
        description="JMESPath: true for an event that finishes the answer; a close after "
        "it is complete ('choices[0].finish_reason')",
    )

    done_event: str | None = Field(
        None, description="SSE: the event name that ends the stream ('end', LangServe's)"
    )

    @field_validator("done", "fields_from", "finish", "done_event", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        return None if value == "" else value  # "": off (overriding a preset's marker)

    _check = field_validator("content", "fields_from", "finish")(_jmespath)


class PricesConfig(_Strict):
    """Prices per 1,000 tokens, in whatever currency the team budgets in."""

    input_per_1k: float = Field(0.0, ge=0, allow_inf_nan=False)
    """Price of 1,000 input (prompt) tokens."""
    output_per_1k: float = Field(0.0, ge=0, allow_inf_nan=False)
    """Price of 1,000 output (completion) tokens."""
    currency: str = Field("USD", pattern=r"^[A-Za-z]{1,12}$")
    """What the prices are in (an ISO 4217 code such as USD or EUR): printed beside the cost."""


class TraceConfig(_Strict):
    """W3C trace context sent with each case (a fresh trace id per case)."""

    enabled: bool = True
    """Send a ``traceparent`` with each case (false: send none)."""
    header: str = Field("traceparent", min_length=1, pattern=r"^[A-Za-z0-9-]+$")
    """The header name that carries it."""


class _TargetBase(_Strict):
    """What every target has, whatever calls it: its label, deadline, bounds and retries."""

    name: str | None = Field(None, description="the target label")
    timeout_seconds: float = _seconds(30.0, description="whole-call deadline per attempt")
    max_ranked_ids: int = Field(
        100,
        ge=1,
        le=100_000,
        description="ranked items read, kept and scored per case; later items are never parsed",
    )
    max_answer_chars: int = Field(
        10_000, ge=0, le=10_000_000, description="answer characters kept in reports and logs"
    )
    max_text_chars: int = Field(
        DEFAULT_TEXT_CHARS, ge=0, le=10_000_000, description="characters kept of each text"
    )
    stages: tuple[str, ...] | None = Field(
        None, description="allow-list of stage names exported; others are counted as 'other'"
    )
    max_stages: int = Field(
        DEFAULT_MAX_STAGES,
        ge=0,
        le=1000,
        description="without an allow-list, distinct stage names kept; the rest are 'other'",
    )
    retry: RetryConfig = RetryConfig()
    """Retries of transient failures (connect errors, 429, 502-504)."""
    history: HistorySource = Field(
        "service",
        description=(
            "a conversation's earlier answers as sent with a later turn: 'service' (the "
            "target's own) or 'scripted' (the golden set's, where a turn has one)"
        ),
    )

    def limits(self) -> RecordLimits:
        """How much of each response a case record keeps."""
        return RecordLimits(
            max_ranked_ids=self.max_ranked_ids,
            max_answer_chars=self.max_answer_chars,
            max_text_chars=self.max_text_chars,
        )

    def stage_names(self) -> StageNames:
        """A fresh bound on the stage names of one job of this target."""
        return StageNames(allowed=self.stages, cap=self.max_stages)


class HttpTargetConfig(_TargetBase):
    """A system under test reached over HTTP(S) at ``url`` (``kind`` picks a preset).

    ``timeout_seconds`` bounds each attempt as a whole (connect, send, the whole body);
    ``read_timeout_seconds`` bounds silence while waiting for or reading the response.
    """

    name: str | None = Field(None, description="the target label; default host:port")
    url: str
    """HTTP(S) endpoint (a target has a `url` or a `callable`, not both)."""
    connect_timeout_seconds: float = _seconds(5.0)
    """Deadline for the TCP (and TLS) connection."""
    read_timeout_seconds: float | None = _seconds(
        None, description="longest silence from the endpoint; default timeout_seconds"
    )
    max_response_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, le=1024**3, description="response size cap"
    )
    max_connections: int = Field(100, ge=1, le=10_000, description="calls in flight, at most")
    requests_per_second: float | None = Field(
        None,
        ge=MIN_REQUESTS_PER_SECOND,
        le=1_000_000,
        allow_inf_nan=False,
        description="request rate, at most",
    )
    kind: str = Field(
        "http",
        description="'http', or a preset: "
        + ", ".join(f"'{name}' ({p.description})" for name, p in presets.PRESETS.items()),
    )
    model: str | None = Field(None, description="a preset's model name sent")
    stream: bool = Field(False, description="a preset: ask for a streamed answer")
    request: RequestConfig = RequestConfig()
    """How a question becomes a request."""
    response: ResponseConfig | None = Field(
        None, description="JMESPath mapping; default the default contract"
    )
    streaming: StreamingConfig | None = Field(
        None, description="a streamed response (SSE or NDJSON); default one JSON body"
    )
    conversation: ConversationConfig | None = Field(
        None,
        description="a service that keeps the conversation: where its id is in a response and "
        "where it goes back; default none (the history is sent with each turn)",
    )
    server_timing: bool = Field(True, description="read Server-Timing headers as stage timings")
    trace: TraceConfig = TraceConfig()
    """W3C trace context sent with each case."""
    prices: PricesConfig | None = Field(None, description="prices per 1k tokens, for cost")
    tls: TlsConfig = TlsConfig()
    """TLS verification."""

    @model_validator(mode="before")
    @classmethod
    def _preset_defaults(cls, data: Any) -> Any:
        # a preset's [streaming] table overrides the preset's settings key by key (a server's
        # quirk: another end marker, none), so it is merged before it is validated
        if not isinstance(data, dict) or data.get("kind") not in presets.PRESETS:
            return data
        preset = presets.PRESETS[data["kind"]]
        if isinstance(data.get("streaming"), dict):
            data = {**data, "streaming": {**preset.streaming, **data["streaming"]}}
        # likewise [response]: each field given overrides the preset's
        given = data.get("response")
        if given is None or isinstance(given, dict):
            # the strings pydantic reads as true (an environment variable is a string)
            stream = str(data.get("stream", False)).lower() in ("true", "1", "yes", "on", "y", "t")
            data = {**data, "response": {**preset.mapping(stream), **(given or {})}}
        return data

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind != "http" and kind not in presets.PRESETS:
            known = ", ".join(map(repr, presets.PRESETS))
            raise ValueError(f"unknown kind {kind!r}: 'http' or a preset ({known})")
        return kind

    @model_validator(mode="after")
    def _consistent(self) -> HttpTargetConfig:
        """The preset's keys fit the kind, the URL is one to send to, and a conversation id
        sent in the body has an object body to go in."""
        self._check_kind_keys()
        problem = _url_problem(self.url)
        if problem:
            raise ValueError(problem)
        if self.conversation is not None and self.conversation.send == "body":
            body = self.request.body
            if self.request.method == "GET" or not (body is None or isinstance(body, dict)):
                raise ValueError(
                    "conversation.send = 'body' needs a JSON object body to add the id to"
                )
        return self

    def _check_kind_keys(self) -> None:
        """A preset kind names its model (and streams to use [streaming]); plain http has
        neither ``model`` nor ``stream``."""
        if self.kind != "http":
            if not self.model:
                raise ValueError(f"kind {self.kind!r} needs 'model' (the model name sent)")
            if self.streaming is not None and not self.stream:
                raise ValueError(
                    f"kind {self.kind!r}: [streaming] overrides the preset's streamed answer; "
                    f"set stream = true"
                )
        elif self.model is not None or self.stream:
            raise ValueError(
                "'model' and 'stream' are for a preset kind "
                f"({', '.join(map(repr, presets.PRESETS))})"
            )

    @property
    def retrieval_only(self) -> bool:
        """A mapped target without an answer expression."""
        return self.response is not None and self.response.answer is None

    @property
    def reports_citations(self) -> bool:
        """Whether the target's citations are mapped: the default contract's field, the
        preset's or the configured mapping's (else citation metrics are n/a)."""
        return self.response is None or self.response.cites

    @property
    def label(self) -> str:
        return self.name or default_target_name(self.url)


class CallableTargetConfig(_TargetBase):
    """A system under test called in-process: a Python function ``module:function``.

    It gets each case and K and returns a ``TargetResponse``; nothing of HTTP applies.
    """

    name: str | None = Field(None, description="the target label; default the function's name")
    callable: str = Field(description="module:function (a target has a `url` or a `callable`)")

    @property
    def label(self) -> str:
        return self.name or self.callable.partition(":")[2]


#: the tag of each kind of target (the discriminator's values) and its model
TARGET_KINDS: dict[str, type[HttpTargetConfig | CallableTargetConfig]] = {
    "http": HttpTargetConfig,
    "callable": CallableTargetConfig,
}
#: how a message names each kind of target: by the key that makes a target that kind
KIND_NAMES = {"http": "a 'url' target", "callable": "a 'callable' target"}
_NO_KIND = "set exactly one of 'url' or 'callable'"


def _target_kind(value: object) -> str | None:
    """Which kind of target ``value`` is: the key that names its endpoint says so, as config
    files have always written it (``url = ...`` or ``callable = ...``); None for both or
    neither, which pydantic reports at the target as :data:`_NO_KIND`."""
    if isinstance(value, HttpTargetConfig | CallableTargetConfig):
        return "http" if isinstance(value, HttpTargetConfig) else "callable"
    if not isinstance(value, Mapping):
        return "http"  # not a table: the HTTP model reports it ("a valid dictionary")
    has_url, has_callable = "url" in value, "callable" in value
    if has_url == has_callable:
        return None
    return "http" if has_url else "callable"


#: One system under test: an HTTP endpoint (``url``) or a Python callable (``callable``).
TargetConfig = Annotated[
    Annotated[HttpTargetConfig, Tag("http")] | Annotated[CallableTargetConfig, Tag("callable")],
    Discriminator(_target_kind, custom_error_type="target_kind", custom_error_message=_NO_KIND),
]

"""Configuration: a TOML file overridden by ``EVALUATOR_...`` environment variables.

Priority, highest first: command-line flags, environment (``EVALUATOR_K=10``, nested with
``__``: ``EVALUATOR_SCORING__REFUSAL_PHRASES='["..."]'``), the TOML file, defaults.
Every model forbids unknown keys: a typo stops the process at start, naming the field.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from evaluator import border
from evaluator.bounds import DEFAULT_TEXT_CHARS, RecordLimits
from evaluator.config_sources import DEFAULT_CONFIG_PATH, ENV_PREFIX
from evaluator.errors import ConfigError
from evaluator.judge.settings import JudgeConfig, merged
from evaluator.run_options import RetryPolicy, RunOptions
from evaluator.scoring import DEFAULT_REFUSAL_PHRASES, ScoringSettings
from evaluator.stage_names import DEFAULT_MAX_STAGES, StageNames
from evaluator.targets.base import default_target_name
from evaluator.targets.markers import compile_markers
from evaluator.targets.presets import KINDS as PRESET_KINDS
from evaluator.targets.presets import preset_response, preset_streaming
from evaluator.targets.templates import (
    DEFAULT_BODY,
    ENV_REFERENCE,
    env_reference_problem,
    mentions_question,
)

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_CONFIG_PATH",
    "TARGET_KINDS",
    "CallableTargetConfig",
    "HistoryConfig",
    "HttpTargetConfig",
    "JobConfig",
    "OtlpConfig",
    "RequestConfig",
    "ResponseConfig",
    "RetryConfig",
    "ScoringConfig",
    "ServerConfig",
    "Settings",
    "TargetConfig",
    "TlsConfig",
    "load_settings",
]


#: the longest duration a setting may hold (timeouts, intervals, grace periods): beyond a
#: year, a value is a typo, and infinity would overflow the scheduler's date arithmetic
MAX_SECONDS = 366 * 24 * 3600.0
#: the slowest request rate accepted: one request every 100 s
MIN_REQUESTS_PER_SECOND = 0.01


def _seconds(
    default: float | None,
    *,
    gt: float | None = 0,
    ge: float | None = None,
    description: str | None = None,
) -> Any:
    """A finite duration field in seconds, at most :data:`MAX_SECONDS`."""
    return Field(
        default, gt=gt, ge=ge, le=MAX_SECONDS, allow_inf_nan=False, description=description
    )


#: Latency buckets of the case and stage histograms, 0.5 ms to 60 s in 1-2.5-5 steps: stages
#: often take far less than a millisecond (a keyword lookup), a generation tens of seconds.
#: A quantile read from them is off by at most one bucket, a factor of 2 to 2.5.
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    60.0,
)


class _Strict(BaseModel):
    # a field's docstring is its description (docs/configuration.md is generated from them)
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ScoringConfig(_Strict):
    """Scoring settings; part of the config hash."""

    refusal_phrases: tuple[str, ...] = DEFAULT_REFUSAL_PHRASES
    """An answer containing any of these (normalised) is a refusal; replaces the defaults."""

    def to_settings(self) -> ScoringSettings:
        return ScoringSettings(refusal_phrases=self.refusal_phrases)


class RetryConfig(_Strict):
    """Retries of transient failures (connect errors, 429, 502, 503, 504)."""

    retries: int = Field(2, ge=0, le=10)
    """Extra attempts after the first, transient failures only."""
    backoff_initial_seconds: float = _seconds(0.2, gt=None, ge=0)
    """First back-off; doubles each retry, with full jitter."""
    backoff_max_seconds: float = _seconds(5.0, gt=None, ge=0)
    """Longest back-off, also the cap on a Retry-After."""

    def to_policy(self) -> RetryPolicy:
        return RetryPolicy(self.retries, self.backoff_initial_seconds, self.backoff_max_seconds)


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
        if self.method == "GET" and self.body is not None:
            raise ValueError("a GET request has no body: put {question} in 'params'")
        for section, entries in (("params", self.params), ("headers", self.headers)):
            for name, value in entries.items():
                problem = env_reference_problem(value)
                if problem:
                    raise ValueError(f"{section}.{name}: {problem}")
        if ENV_REFERENCE.search(json.dumps(self.body)):
            raise ValueError(
                "body: ${...} is not resolved in the body; pass secrets in headers or params"
            )
        body = DEFAULT_BODY if self.body is None and self.method == "POST" else self.body
        if not (mentions_question(body) or mentions_question(dict(self.params))):
            raise ValueError(
                "the question is sent nowhere: put '{question}' in 'params' or in the 'body'"
            )
        return self


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
        "'ids' ([refund-policy]) or a regex whose group is the marker",
    )

    _compiled: dict[str, ParsedResult] = PrivateAttr(default_factory=dict)

    @field_validator(
        "ids", "answer", "citations", "timings", "texts", "scores", "input_tokens", "output_tokens"
    )
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            jmespath.compile(value)
        except JMESPathError as exc:
            raise ValueError(_jmespath_problem(value, exc)) from None
        return value

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
        self._compiled = {
            name: jmespath.compile(value)
            for name, value in self.model_dump(exclude={"timings_unit", "citation_markers"}).items()
            if value is not None
        }

    @property
    def compiled(self) -> dict[str, ParsedResult]:
        """Field name -> compiled expression, for the fields that are set."""
        return dict(self._compiled)


def _jmespath(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        jmespath.compile(value)
    except JMESPathError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"invalid JMESPath expression {value!r}: {first}") from None
    return value


class StreamingConfig(_Strict):
    """A streamed response: SSE or NDJSON events assembled into the answer.

    ``content`` finds each event's piece of answer text; the response mapping reads the last
    event (or the last one where ``fields_from`` is true).
    """

    format: Literal["sse", "ndjson"] = Field(description="server-sent events or NDJSON")
    content: str = Field(description="JMESPath: the answer text in one event ('delta')")
    fields_from: str | None = Field(
        None, description="JMESPath: true for the event the mapping reads; default the last"
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


class OtlpConfig(_Strict):
    """OTLP/HTTP span export: one span per case, its stages as child spans (off by default).

    The case span's trace id and span id are the ones its ``traceparent`` carried, so the
    service's own server span of that case is a child of it. Needs the ``otlp`` extra.
    """

    enabled: bool = False
    """Export a span per case to `endpoint` (needs `pip install 'evaluator[otlp]'`)."""
    endpoint: str = "http://127.0.0.1:4318/v1/traces"
    """The collector's OTLP/HTTP traces URL (protobuf); a base URL gets `/v1/traces`."""
    service_name: str = Field("rag-evaluator", min_length=1, max_length=200)
    """`service.name` of the exported spans."""
    timeout_seconds: float = _seconds(5.0, description="deadline of one export request")
    headers: dict[str, str] = Field(
        default_factory=dict, description="headers of each export request: ${ENV}, secrets"
    )
    compression: Literal["none", "gzip"] = "none"
    """Compression of the export requests' bodies."""

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        problem = _url_problem(value)
        if problem is not None:
            raise ValueError(problem.removeprefix("url ").replace("url: ", "", 1))
        return value


class ServerConfig(_Strict):
    """Who may use the daemon's own HTTP surface (`[server]`): docs/daemon.md, "Exposure".

    A request whose Host is not an allowed name is refused (403), against DNS rebinding. IP
    literals, `localhost`, the bind address and the machine's host name are always allowed,
    so kubelet probes and Prometheus scraping by pod IP work. With `token`, the pages,
    `/cases` and `/reports/latest` (answers and evidence) need it; `/metrics`, `/healthz`
    and `/readyz` never do.
    """

    allowed_hosts: tuple[str, ...] = (
        "evaluator",
        "rag-evaluator",
        "rag-evaluator-*",
        "*.svc",
        "*.svc.cluster.local",
    )
    """Host names served besides IP literals, localhost, the bind address and this host's
    name; `*.` first matches one or more labels, another `*` part of one; `["*"]`: any.
    """
    token: str | None = Field(None, min_length=1)
    """Bearer (or Basic password) needed for the pages, /cases and /reports/latest: ${ENV}."""

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            if not re.fullmatch(r"[A-Za-z0-9*._-]+", host):
                raise ValueError(f"{host!r}: a host name (letters, digits, . - _ and *)")
        return tuple(h.lower() for h in value)

    @field_validator("token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        problem = None if value is None else env_reference_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class TlsConfig(_Strict):
    """Certificate verification: on by default; ``ca_bundle`` for a private CA."""

    verify: bool = True
    """Verify the endpoint's certificate; false only in a lab."""
    ca_bundle: Path | None = Field(None, description="PEM file of CA certificates to trust")

    @model_validator(mode="after")
    def _consistent(self) -> TlsConfig:
        if self.ca_bundle is not None and not self.verify:
            raise ValueError("ca_bundle is set but verify is false: drop one of them")
        return self


def _url_problem(url: str) -> str | None:
    """What is wrong with an endpoint URL that a request would only find out later."""
    if not url.startswith(("http://", "https://")):
        return f"url {url!r} must start with http:// or https://"
    if "${" in url:
        return "url: ${...} is not resolved in the url; use request.params"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number or out of range
    except ValueError as exc:
        return f"url {url!r} is not a valid URL: {exc}"
    if not parts.hostname:
        return f"url {url!r} has no host"
    if port == 0:
        return f"url {url!r}: port 0 cannot be connected to"
    if any(c.isspace() for c in url):
        return f"url {url!r} contains whitespace"
    return None


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
    kind: Literal["http", "openai-chat", "openai-responses"] = Field(
        "http",
        description="a preset: 'openai-chat' (chat completions) or 'openai-responses' "
        "(the Responses API)",
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
        if not isinstance(data, dict) or data.get("kind") not in PRESET_KINDS:
            return data
        kind = data["kind"]
        if isinstance(data.get("streaming"), dict):
            data = {**data, "streaming": {**preset_streaming(kind), **data["streaming"]}}
        # likewise [response]: each field given overrides the preset's
        given = data.get("response")
        if given is None or isinstance(given, dict):
            # the strings pydantic reads as true (an environment variable is a string)
            stream = str(data.get("stream", False)).lower() in ("true", "1", "yes", "on", "y", "t")
            preset = preset_response(kind, stream)
            data = {**data, "response": {**preset, **(given or {})}}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> HttpTargetConfig:
        if self.kind != "http":
            if not self.model:
                raise ValueError(f"kind {self.kind!r} needs 'model' (the model name sent)")
            if self.streaming is not None and not self.stream:
                raise ValueError(
                    f"kind {self.kind!r}: [streaming] overrides the preset's streamed answer; "
                    f"set stream = true"
                )
        elif self.model is not None or self.stream:
            raise ValueError("'model' and 'stream' are for a preset kind ('openai-chat', ...)")
        problem = _url_problem(self.url)
        if problem:
            raise ValueError(problem)
        return self

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


def cron_trigger(expression: str, jitter: int | None = None) -> CronTrigger:
    """A five-field cron expression (UTC) as a trigger.

    Raises:
        ValueError: naming what is wrong with the expression.
    """
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(
            f"cron {expression!r}: expected 5 fields (minute hour day month weekday), "
            f"got {len(fields)}"
        )
    minute, hour, day, month, day_of_week = fields
    # here, not at the top: apscheduler (and importlib.metadata) only for a cron schedule
    from apscheduler.triggers.cron import CronTrigger

    try:
        return CronTrigger(
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=day_of_week,
            timezone=UTC,
            jitter=jitter,
        )
    except ValueError as exc:
        raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None


class HistoryConfig(_Strict):
    """The per-case history store (REPORTS_DIR/history.sqlite3), stability and drift."""

    enabled: bool = True
    """Record every run's cases in the history store."""
    window: int = Field(10, ge=3, le=1000, description="runs a case's stability is judged over")
    recent: int = Field(
        3, ge=1, le=100, description="latest runs compared with the window before them (drift)"
    )
    alpha: float = Field(
        0.05, gt=0, lt=0.5, description="chance, at most, that noise makes drift significant"
    )
    keep_runs: int = Field(3000, ge=1, description="runs kept per job")
    max_age_days: float = Field(30.0, gt=0, description="runs older than this are deleted")

    @model_validator(mode="after")
    def _keeps_enough(self) -> HistoryConfig:
        if self.keep_runs < self.window + self.recent:
            raise ValueError(
                f"keep_runs {self.keep_runs} must be at least window + recent "
                f"({self.window + self.recent}): drift reads that many runs"
            )
        return self


class JobConfig(_Strict):
    """A (target, golden set) pair run on a schedule."""

    target: str = Field(description="name (label) of a configured target")
    dataset: Path
    """The golden set (JSONL)."""
    name: str | None = None
    """The job's name for --job; default `<target>/<golden set>`."""
    dataset_label: str | None = Field(None, description="the dataset label; default file stem")
    interval_seconds: float | None = _seconds(None)
    """Run every this many seconds (or set `cron`)."""
    cron: str | None = None
    """Run on this crontab schedule, UTC (instead of `interval_seconds`)."""
    jitter_seconds: float = _seconds(0.0, gt=None, ge=0)
    """Random delay up to this much before each run, so jobs do not start together."""
    run_at_start: bool = True
    """Run once at start instead of waiting a whole interval."""
    k: int | None = Field(None, ge=1)
    """This job's K (default the top-level `k`)."""
    concurrency: int | None = Field(None, ge=1)
    """This job's cases in flight (default the top-level `concurrency`)."""
    baseline: Path | None = None
    """A report to gate every run against: exports rag_eval_gate_passing."""
    judge: dict[str, Any] | None = None
    """This job's `[judge]` keys, laid over the top-level section (see docs/judge.md)."""

    @model_validator(mode="after")
    def _one_schedule(self) -> JobConfig:
        if self.interval_seconds is not None and self.cron is not None:
            raise ValueError("set at most one of 'interval_seconds' or 'cron'")
        if self.cron is not None:
            trigger = cron_trigger(self.cron)
            if trigger.get_next_fire_time(None, datetime.now(UTC)) is None:
                raise ValueError(f"cron {self.cron!r} never fires (no such date)")
        return self

    @property
    def dataset_name(self) -> str:
        return self.dataset_label or self.dataset.stem

    @property
    def key(self) -> str:
        return self.name or f"{self.target}/{self.dataset_name}"


class Settings(BaseSettings):
    """Everything evaluator reads from its config file and environment."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        hide_input_in_errors=True,
        frozen=True,
        use_attribute_docstrings=True,
    )

    k: int = Field(5, ge=1)
    """Cutoff for recall@K and nDCG@K; a job's own `k` wins."""
    concurrency: int = Field(4, ge=1, le=1000)
    """Cases in flight per run; a job's own `concurrency` wins."""
    error_ratio_limit: float = Field(0.1, ge=0, le=1)
    """Above this share of failed cases a run is incomplete: its quality gauges are not published.
    """
    listen: str = "127.0.0.1:9464"
    """HOST:PORT of the daemon's /metrics, /healthz, /readyz and /reports/latest."""
    reports_dir: Path = Path("reports")
    """Where reports are written: `run` and `gate` write `<golden set>-<run id>.json` here,
    the daemon one folder per job.
    """
    reports_keep: int = Field(50, ge=1)
    """Reports the daemon keeps per job, besides latest.json."""
    shutdown_grace_seconds: float = _seconds(30.0, gt=None, ge=0)
    """On SIGTERM, how long a running run may finish before it is cancelled."""
    log_format: Literal["auto", "json", "console"] = "auto"
    """`json`, `console`, or `auto`: console on a terminal, JSON otherwise."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level logged."""
    log_cases: bool = True
    """One log line per case (`event: case`); `evaluator demo` turns it off so its console shows run
    lines only.
    """
    log_answers: bool = False
    """Include the answer text in per-case log lines."""
    log_answer_max_chars: int = Field(200, ge=0)
    """Answer text in a log line is cut to this many characters."""
    histogram_buckets: tuple[float, ...] = DEFAULT_BUCKETS
    """Bucket bounds (seconds) of the case and stage latency histograms."""
    shard_index: int = Field(0, ge=0)
    """This replica's shard, 0-based: it runs the cases whose id hashes to it."""
    shard_count: int = Field(1, ge=1)
    """How many replicas share each golden set."""
    gates_file: Path | None = None
    """Gate rules for `evaluator gate` and job baselines; default config/gates.toml when
    present, else the built-in rules.
    """
    history: HistoryConfig = HistoryConfig()
    """The run history store (SQLite in the reports folder)."""
    server: ServerConfig = ServerConfig()
    """Who may use the daemon's HTTP surface: allowed Host names, the pages' token."""
    otlp: OtlpConfig = OtlpConfig()
    """OTLP span export of each case (`[otlp]`, off by default)."""
    scoring: ScoringConfig = ScoringConfig()
    """How answers are judged."""
    targets: tuple[TargetConfig, ...] = ()
    """The RAG endpoints (`[[targets]]`)."""
    jobs: tuple[JobConfig, ...] = ()
    """The (target, golden set) pairs the daemon runs on a schedule (`[[jobs]]`)."""
    judge: JudgeConfig | None = None
    """The LLM judge (`[judge]`, off by default): an OpenAI-compatible chat endpoint."""

    @field_validator("histogram_buckets")
    @classmethod
    def _buckets(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if not value:
            raise ValueError("at least one bucket bound is needed")
        if not all(math.isfinite(b) and b > 0 for b in value):
            raise ValueError("bucket bounds must be finite numbers of seconds above 0")
        if any(a >= b for a, b in itertools.pairwise(value)):
            raise ValueError("bucket bounds must be strictly increasing")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if settings_cls.model_config.get("toml_file"):
            sources.append(TomlConfigSettingsSource(settings_cls))
        return tuple(sources)

    @model_validator(mode="after")
    def _references(self) -> Settings:
        if self.shard_index >= self.shard_count:
            raise ValueError(
                f"shard_index {self.shard_index} must be below shard_count {self.shard_count}"
            )
        labels = [t.label for t in self.targets]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"targets: duplicate target name(s) {dupes}; set distinct 'name's")
        for i, job in enumerate(self.jobs):
            if job.target not in labels:
                raise ValueError(
                    f"jobs.{i}.target: no target named {job.target!r} (known: {sorted(labels)})"
                )
            k, kept = job.k or self.k, self.target(job.target).max_ranked_ids
            if k > kept:
                raise ValueError(f"jobs.{i}.k: K {k} is above the target's max_ranked_ids {kept}")
        keys = [j.key for j in self.jobs]
        dupes = sorted({x for x in keys if keys.count(x) > 1})
        if dupes:
            raise ValueError(f"jobs: duplicate job(s) {dupes}; set distinct 'name's")
        for i, job in enumerate(self.jobs):
            try:
                merged(self.judge, job.judge)
            except ValidationError as exc:
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise ValueError(f"jobs.{i}.judge.{where}: {problem['msg']}") from None
        return self

    def judge_for(self, job: JobConfig | None) -> JudgeConfig | None:
        """``job``'s judge: the `[judge]` section with the job's own keys over it."""
        return merged(self.judge, job.judge if job is not None else None)

    def target(self, label: str) -> TargetConfig:
        return next(t for t in self.targets if t.label == label)

    def run_options(self, job: JobConfig) -> RunOptions:
        """How ``job`` runs: its K and concurrency (else the defaults), scoring and retries."""
        target = self.target(job.target)
        return RunOptions(
            k=job.k or self.k,
            concurrency=job.concurrency or self.concurrency,
            scoring=self.scoring.to_settings(),
            retry=target.retry.to_policy(),
            limits=target.limits(),
            stages=target.stage_names(),
        )

    def job(self, name: str | None = None) -> JobConfig:
        """The job called ``name``, or the first job.

        Raises:
            ConfigError: no job configured, or none with that name.
        """
        if not self.jobs:
            raise ConfigError(
                "no job configured: pass --dataset and --target-url (or --target), "
                "or a config file with [[targets]] and [[jobs]]"
            )
        if name is None:
            return self.jobs[0]
        for job in self.jobs:
            if job.key == name:
                return job
        raise ConfigError(f"no job named {name!r}; known: {sorted(j.key for j in self.jobs)}")


def _jmespath_problem(value: str, exc: JMESPathError) -> str:
    """The whole of a JMESPath error on one line: what, where, and the expression cut there
    (jmespath's own message spreads the expression and a caret over three lines)."""
    what = getattr(exc, "message", None) or getattr(exc, "msg", None) or type(exc).__name__
    if isinstance(exc, jmespath.exceptions.IncompleteExpressionError):
        what = "incomplete expression"
    token = getattr(exc, "token_value", None)
    if token is not None and not isinstance(exc, jmespath.exceptions.LexerError):
        what += f" {token!r}"
    position = getattr(exc, "lex_position", None)
    if not isinstance(position, int):
        return f"invalid JMESPath expression {value!r}: {what}"
    return (
        f"invalid JMESPath expression {value!r}: {what} at column {position} "
        f"({value[:position]!r} <- here -> {value[position:]!r})"
    )


def _walk(
    loc: tuple[str | int, ...],
) -> tuple[tuple[str | int, ...], type[BaseModel] | None, Mapping[str, type[BaseModel]]]:
    """``loc`` as the user wrote it, the model holding its last key, and that model's kinds.

    Pydantic puts the tag of a discriminated union into the location (``targets.0.http.url``);
    no config file says ``http`` there, so the tag is dropped from what is shown, and used to
    pick the model that holds the keys after it. The kinds are the union's tag -> model when
    the last key is in one of its members (a callable target: the HTTP target is the other
    kind); the holder is None when the member is not known (a target of no kind).
    """
    shown: list[str | int] = []
    model: type[BaseModel] | None = Settings
    holder: type[BaseModel] | None = None
    tags: dict[str, type[BaseModel]] = {}  # the union the next key enters
    kinds: Mapping[str, type[BaseModel]] = {}
    for part in loc:
        if isinstance(part, int):
            shown.append(part)
            continue
        if part in tags:
            model, kinds, tags = tags[part], tags, {}
            continue
        shown.append(part)
        if tags:  # a key of a union member, the member not chosen
            holder, kinds, model = None, tags, None
        else:
            holder, kinds = model, kinds if model in kinds.values() else {}
        field = None if model is None else model.model_fields.get(part)
        model = None if field is None else _inner_model(field.annotation)
        tags = {} if field is None else _tagged(field.annotation)
    return tuple(shown), holder, kinds


def _tagged(annotation: object) -> dict[str, type[BaseModel]]:
    """The tag -> model of a discriminated union somewhere in ``annotation``."""
    found: dict[str, type[BaseModel]] = {}
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        for item in metadata:
            if isinstance(item, Tag) and isinstance(base, type) and issubclass(base, BaseModel):
                found[item.tag] = base
        return found | _tagged(base)
    for arg in typing.get_args(annotation):
        found |= _tagged(arg)
    return found


def _inner_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _in_data(data: object, loc: tuple[str | int, ...]) -> bool:
    for part in loc:
        in_list = isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data)
        in_table = isinstance(part, str) and isinstance(data, dict) and part in data
        if not (in_list or in_table):
            return False
        data = data[part]  # type: ignore[index]
    return True


def _format_validation(
    exc: ValidationError,
    source: str,
    file_data: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> str:
    """One line naming each bad value where the user wrote it: the command-line flag, the
    environment variable, or the key in the config file (with "did you mean" for an unknown
    key), never a source it did not come from."""
    parts = []
    origins = flags or {}
    for kind, where, msg in _problems(exc):
        loc, holder, kinds = _walk(where)
        dotted = ".".join(str(p) for p in loc)
        env = "EVALUATOR_" + "__".join(str(p) for p in loc).upper()
        whole = "EVALUATOR_" + str(loc[0]).upper() if loc else ""
        message = msg.removeprefix("Value error, ")
        if kind == "extra_forbidden" and loc:
            message = _unknown_key(str(loc[-1]), holder, kinds)
        if loc and origins.get(str(loc[0])):
            field = origins[str(loc[0])]
        elif loc and str(loc[0]) in origins:
            field = f"{dotted} (command line)"
        elif loc and env in os.environ:
            field = f"environment variable {env} ({dotted})"
        elif len(loc) > 1 and whole in os.environ:
            # a list of tables set whole as JSON (EVALUATOR_TARGETS='[{...}]')
            field = f"environment variable {whole} ({dotted})"
        elif loc and file_data is not None and _in_data(file_data, loc):
            field = f"{source}: {dotted}"
        elif loc:
            field = dotted
        else:
            field = source
        parts.append(f"{field}: {message}")
    return "invalid configuration: " + "; ".join(parts)


def _problems(exc: ValidationError) -> list[tuple[str, tuple[str | int, ...], str]]:
    """(type, location, message) of each error; a target of no kind (neither `url` nor
    `callable`, or both) is told by its unknown keys when it has some: ``urll`` is a typo
    of ``url``, and the closest key says so better than "set exactly one". Of the input,
    only a table's keys are read, never a value (it may be a secret)."""
    known = {name for model in TARGET_KINDS.values() for name in model.model_fields}
    found: list[tuple[str, tuple[str | int, ...], str]] = []
    for err in exc.errors(include_url=False):
        loc, data = tuple(err["loc"]), err.get("input")
        unknown = []
        if err["type"] == "target_kind" and isinstance(data, Mapping):
            unknown = [str(key) for key in data if key not in known]
        found += [("extra_forbidden", (*loc, key), "") for key in unknown]
        if not unknown:
            found.append((err["type"], loc, err["msg"]))
    return found


def _unknown_key(
    key: str, holder: type[BaseModel] | None, kinds: Mapping[str, type[BaseModel]]
) -> str:
    """Why ``key`` is not accepted where it was written: a key of another kind of the same
    thing (``max_connections`` on a callable target), or a typo, with the closest key (of
    any kind when the kind is not known: ``holder`` None)."""
    if holder is not None:
        for tag, model in kinds.items():
            if model is not holder and key in model.model_fields:
                return f"only for {KIND_NAMES.get(tag, repr(tag))}"
    models = [holder] if holder is not None else list(kinds.values())
    known = list(dict.fromkeys(name for model in models for name in model.model_fields))
    close = difflib.get_close_matches(key, known, n=1)
    return "unknown key" + (f' (did you mean "{close[0]}"?)' if close else "")


def _check_environment() -> None:
    """A misspelt ``EVALUATOR_`` variable would be ignored silently: reject it by name."""
    known = set(Settings.model_fields)
    for name in sorted(os.environ):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        field = name[len(ENV_PREFIX) :].split("__", 1)[0].lower()
        if field not in known:
            hint = difflib.get_close_matches(field, known, n=1)
            also = f" (did you mean EVALUATOR_{hint[0].upper()}?)" if hint else ""
            raise ConfigError(f"unknown environment variable {name}{also}")


def load_settings(
    config_path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """Load settings from ``config_path`` (or ``config/evaluator.toml`` when it exists).

    Args:
        config_path: the TOML file; an explicit path must exist.
        overrides: values from command-line flags, highest priority.
        flags: top-level setting -> the flag that set it (``{"k": "--k"}``), so an invalid
            value is reported against the flag; ``""`` for a setting built from several
            flags (a target from ``--target-url``), reported as its field.

    Raises:
        ConfigError: unreadable or invalid TOML, or a field that fails validation.
    """
    _check_environment()
    path: Path | None
    if config_path is not None:
        path = Path(config_path)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist or is not a file")
    else:
        path = DEFAULT_CONFIG_PATH if DEFAULT_CONFIG_PATH.is_file() else None
    cls: type[Settings] = Settings
    source = "environment"
    file_data: dict[str, Any] | None = None
    if path is not None:
        source = str(path)
        try:
            text = border.read_file(path, border.MAX_SETTINGS_BYTES).decode("utf-8")
            file_data = tomllib.loads(text)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        except ValueError as exc:
            # TOMLDecodeError, or the int conversion's digit limit (a 5,000-digit integer)
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
        bound_config = SettingsConfigDict(**{**Settings.model_config, "toml_file": path})
        cls = type("FileSettings", (Settings,), {"model_config": bound_config})
    try:
        settings = cls(**(overrides or {}))
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source, file_data, flags)) from None
    except SettingsError as exc:
        # an EVALUATOR_ variable that is not valid JSON (EVALUATOR_TARGETS='[{bad')
        raise ConfigError(_env_problem(exc)) from None
    if path is None or file_data is None:
        return settings
    return _relative_to_file(settings, file_data, path.parent, set(overrides or {}))


def _from_file(file_data: Mapping[str, Any], overridden: set[str], *loc: str | int) -> bool:
    """Whether the value at ``loc`` was written in the config file (not replaced by a flag
    or an environment variable)."""
    top = str(loc[0])
    env = "EVALUATOR_" + "__".join(str(p) for p in loc).upper()
    if top in overridden or env in os.environ or f"EVALUATOR_{top.upper()}" in os.environ:
        return False
    return _in_data(file_data, loc)


def _against(base: Path, value: Path) -> Path:
    """``value`` read from a config file in ``base``: relative paths are relative to the file."""
    if value.is_absolute():
        return value
    return Path(os.path.normpath(base / value))


def _relative_to_file(
    settings: Settings, file_data: Mapping[str, Any], base: Path, overridden: set[str]
) -> Settings:
    """Resolve the paths written in the config file against the file's folder, as a user
    reading the file expects; flags and environment variables stay relative to the working
    directory, where they were typed."""
    top: dict[str, Any] = {}
    for name in ("reports_dir", "gates_file"):
        value = getattr(settings, name)
        if value is not None and _from_file(file_data, overridden, name):
            top[name] = _against(base, value)
    jobs = []
    for index, job in enumerate(settings.jobs):
        update = {
            name: _against(base, getattr(job, name))
            for name in ("dataset", "baseline")
            if getattr(job, name) is not None
            and _from_file(file_data, overridden, "jobs", index, name)
        }
        jobs.append(job.model_copy(update=update) if update else job)
    targets: list[TargetConfig] = []
    for index, target in enumerate(settings.targets):
        bundle = target.tls.ca_bundle if isinstance(target, HttpTargetConfig) else None
        written = _from_file(file_data, overridden, "targets", index, "tls", "ca_bundle")
        if isinstance(target, HttpTargetConfig) and bundle is not None and written:
            tls = target.tls.model_copy(update={"ca_bundle": _against(base, bundle)})
            target = target.model_copy(update={"tls": tls})
        targets.append(target)
    top["jobs"] = tuple(jobs)
    top["targets"] = tuple(targets)
    labels = settings.judge.drift_labels if settings.judge is not None else None
    if labels is not None and _from_file(file_data, overridden, "judge", "drift_labels"):
        top["judge"] = settings.judge.model_copy(  # type: ignore[union-attr]
            update={"drift_labels": _against(base, labels)}
        )
    return settings.model_copy(update=top)


def _env_problem(exc: SettingsError) -> str:
    """Name the variable a :class:`SettingsError` is about, never its value (a secret?)."""
    text = str(exc)
    field = text.split('"')[1] if text.count('"') >= 2 else ""
    if field:
        return (
            f"environment variable EVALUATOR_{field.upper()}: not valid JSON "
            f"(a list or object value is written as JSON, e.g. '[{{\"url\": ...}}]')"
        )
    return f"invalid configuration in environment: {text}"

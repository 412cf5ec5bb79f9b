"""Configuration: a TOML file overridden by ``EVALUATOR_...`` environment variables.

Priority, highest first: command-line flags, environment (``EVALUATOR_K=10``, nested with
``__``: ``EVALUATOR_SCORING__REFUSAL_PHRASES='["..."]'``), the TOML file, defaults.
Every model forbids unknown keys: a typo stops the process at start, naming the field.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from evaluator.errors import ConfigError
from evaluator.run_options import RetryPolicy, RunOptions
from evaluator.scoring import DEFAULT_REFUSAL_PHRASES, ScoringSettings
from evaluator.targets.base import default_target_name
from evaluator.targets.templates import (
    DEFAULT_BODY,
    ENV_REFERENCE,
    env_reference_problem,
    mentions_question,
)

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_CONFIG_PATH",
    "JobConfig",
    "RequestConfig",
    "ResponseConfig",
    "RetryConfig",
    "ScoringConfig",
    "Settings",
    "TargetConfig",
    "TlsConfig",
    "load_settings",
]

DEFAULT_CONFIG_PATH = Path("config/evaluator.toml")

#: Latency buckets for RAG calls: tens of milliseconds to minutes (LLM generation is slow).
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0,
)  # fmt: skip


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScoringConfig(_Strict):
    """Scoring settings; part of the config hash."""

    refusal_phrases: tuple[str, ...] = DEFAULT_REFUSAL_PHRASES

    def to_settings(self) -> ScoringSettings:
        return ScoringSettings(refusal_phrases=self.refusal_phrases)


class RetryConfig(_Strict):
    """Retries of transient failures (connect errors, 429, 502, 503, 504)."""

    retries: int = Field(2, ge=0, le=10)
    backoff_initial_seconds: float = Field(0.2, ge=0)
    backoff_max_seconds: float = Field(5.0, ge=0)

    def to_policy(self) -> RetryPolicy:
        return RetryPolicy(self.retries, self.backoff_initial_seconds, self.backoff_max_seconds)


class RequestConfig(_Strict):
    """How a question becomes a request; the default is the default contract.

    ``{question}`` and ``{k}`` are substituted in parameter values and body strings (a body
    value of exactly ``"{k}"`` becomes the integer K); ``${NAME}`` in header and parameter
    values reads the environment variable NAME when the target is built, as a secret.
    """

    method: Literal["GET", "POST"] = "POST"
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
    timings: str | None = Field(None, description="object: stage -> seconds")
    texts: str | None = Field(None, description="one text per id")
    scores: str | None = Field(None, description="one score per id")

    _compiled: dict[str, ParsedResult] = PrivateAttr(default_factory=dict)

    @field_validator("ids", "answer", "citations", "timings", "texts", "scores")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            jmespath.compile(value)
        except JMESPathError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"invalid JMESPath expression {value!r}: {first}") from None
        return value

    def model_post_init(self, context: Any, /) -> None:
        self._compiled = {
            name: jmespath.compile(value)
            for name, value in self.model_dump().items()
            if value is not None
        }

    @property
    def compiled(self) -> dict[str, ParsedResult]:
        """Field name -> compiled expression, for the fields that are set."""
        return dict(self._compiled)


class TlsConfig(_Strict):
    """Certificate verification: on by default; ``ca_bundle`` for a private CA."""

    verify: bool = True
    ca_bundle: Path | None = Field(None, description="PEM file of CA certificates to trust")

    @model_validator(mode="after")
    def _consistent(self) -> TlsConfig:
        if self.ca_bundle is not None and not self.verify:
            raise ValueError("ca_bundle is set but verify is false: drop one of them")
        return self


_HTTP_ONLY = (
    "request",
    "response",
    "tls",
    "connect_timeout_seconds",
    "read_timeout_seconds",
    "max_response_bytes",
    "max_connections",
    "requests_per_second",
)


class TargetConfig(_Strict):
    """One system under test: an HTTP endpoint (``url``) or a Python callable.

    ``timeout_seconds`` bounds each attempt as a whole (connect, send, the whole body);
    ``read_timeout_seconds`` bounds silence while waiting for or reading the response.
    """

    name: str | None = Field(None, description="the target label; default host:port")
    url: str | None = None
    callable: str | None = Field(None, description="module:function")
    timeout_seconds: float = Field(30.0, gt=0, description="whole-call deadline per attempt")
    connect_timeout_seconds: float = Field(5.0, gt=0)
    read_timeout_seconds: float | None = Field(
        None, gt=0, description="longest silence from the endpoint; default timeout_seconds"
    )
    max_response_bytes: int = Field(4 * 1024 * 1024, ge=1024, description="response size cap")
    max_connections: int = Field(100, ge=1, le=10_000, description="calls in flight, at most")
    requests_per_second: float | None = Field(None, gt=0, description="request rate, at most")
    request: RequestConfig = RequestConfig()
    response: ResponseConfig | None = Field(
        None, description="JMESPath mapping; default the default contract"
    )
    tls: TlsConfig = TlsConfig()
    retry: RetryConfig = RetryConfig()

    @model_validator(mode="after")
    def _one_kind(self) -> TargetConfig:
        if (self.url is None) == (self.callable is None):
            raise ValueError("set exactly one of 'url' or 'callable'")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} must start with http:// or https://")
        if self.url is not None and "${" in self.url:
            raise ValueError("url: ${...} is not resolved in the url; use request.params")
        if self.callable is not None:
            # compared with the defaults, not model_fields_set: a dumped-and-reloaded
            # config (the command line does that) sets every field
            fields = type(self).model_fields
            http_only = [n for n in _HTTP_ONLY if getattr(self, n) != fields[n].get_default()]
            if http_only:
                raise ValueError(f"{', '.join(http_only)}: only for a 'url' target")
        return self

    @property
    def retrieval_only(self) -> bool:
        """A mapped HTTP target without an answer expression."""
        return self.response is not None and self.response.answer is None

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.url is not None:
            return default_target_name(self.url)
        return (self.callable or "").partition(":")[2]


class JobConfig(_Strict):
    """A (target, golden set) pair run on a schedule."""

    target: str = Field(description="name (label) of a configured target")
    dataset: Path
    name: str | None = None
    dataset_label: str | None = Field(None, description="the dataset label; default file stem")
    interval_seconds: float | None = Field(None, gt=0)
    cron: str | None = None
    jitter_seconds: float = Field(0.0, ge=0)
    run_at_start: bool = True
    k: int | None = Field(None, ge=1)
    concurrency: int | None = Field(None, ge=1)
    baseline: Path | None = None

    @model_validator(mode="after")
    def _one_schedule(self) -> JobConfig:
        if self.interval_seconds is not None and self.cron is not None:
            raise ValueError("set at most one of 'interval_seconds' or 'cron'")
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
        env_prefix="EVALUATOR_",
        env_nested_delimiter="__",
        extra="forbid",
        hide_input_in_errors=True,
        frozen=True,
    )

    k: int = Field(5, ge=1)
    concurrency: int = Field(4, ge=1, le=1000)
    error_ratio_limit: float = Field(0.1, ge=0, le=1)
    listen: str = "127.0.0.1:9464"
    reports_dir: Path = Path("reports")
    reports_keep: int = Field(50, ge=1)
    shutdown_grace_seconds: float = Field(30.0, ge=0)
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_cases: bool = True
    log_answers: bool = False
    log_answer_max_chars: int = Field(200, ge=0)
    histogram_buckets: tuple[float, ...] = DEFAULT_BUCKETS
    shard_index: int = Field(0, ge=0)
    shard_count: int = Field(1, ge=1)
    gates_file: Path | None = None
    scoring: ScoringConfig = ScoringConfig()
    targets: tuple[TargetConfig, ...] = ()
    jobs: tuple[JobConfig, ...] = ()

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
        keys = [j.key for j in self.jobs]
        dupes = sorted({x for x in keys if keys.count(x) > 1})
        if dupes:
            raise ValueError(f"jobs: duplicate job(s) {dupes}; set distinct 'name's")
        return self

    def target(self, label: str) -> TargetConfig:
        return next(t for t in self.targets if t.label == label)

    def run_options(self, job: JobConfig) -> RunOptions:
        """How ``job`` runs: its K and concurrency (else the defaults), scoring and retries."""
        return RunOptions(
            k=job.k or self.k,
            concurrency=job.concurrency or self.concurrency,
            scoring=self.scoring.to_settings(),
            retry=self.target(job.target).retry.to_policy(),
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


def _format_validation(exc: ValidationError, source: str) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in err["loc"])
        env = "EVALUATOR_" + "__".join(str(p) for p in err["loc"]).upper()
        field = f"{loc} (env {env})" if loc else "config"
        parts.append(f"{field}: {err['msg']}")
    return f"invalid configuration in {source}: " + "; ".join(parts)


def _check_environment() -> None:
    """A misspelt ``EVALUATOR_`` variable would be ignored silently: reject it by name."""
    known = set(Settings.model_fields)
    for name in sorted(os.environ):
        if not name.upper().startswith("EVALUATOR_"):
            continue
        field = name[len("EVALUATOR_") :].split("__", 1)[0].lower()
        if field not in known:
            hint = difflib.get_close_matches(field, known, n=1)
            also = f" (did you mean EVALUATOR_{hint[0].upper()}?)" if hint else ""
            raise ConfigError(f"unknown environment variable {name}{also}")


def load_settings(
    config_path: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Load settings from ``config_path`` (or ``config/evaluator.toml`` when it exists).

    Args:
        config_path: the TOML file; an explicit path must exist.
        overrides: values from command-line flags, highest priority.

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
    if path is not None:
        source = str(path)
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
        bound_config = SettingsConfigDict(**{**Settings.model_config, "toml_file": path})
        cls = type("FileSettings", (Settings,), {"model_config": bound_config})
    try:
        return cls(**(overrides or {}))
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source)) from None

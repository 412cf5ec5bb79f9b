"""Settings' building blocks: the strict base model, durations, buckets, scoring, retries, TLS.

Everything here is shared by the target, job and daemon sections; nothing here reads a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evaluator import border
from evaluator.run_options import RetryPolicy
from evaluator.scoring import DEFAULT_REFUSAL_PHRASES, ScoringSettings

__all__ = [
    "DEFAULT_BUCKETS",
    "MAX_SECONDS",
    "MIN_REQUESTS_PER_SECOND",
    "RetryConfig",
    "ScoringConfig",
    "TlsConfig",
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


def _jmespath(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        jmespath.compile(value)
    except JMESPathError as exc:
        raise ValueError(_jmespath_problem(value, exc)) from None
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
    if "${" in url and url.startswith(("http://", "https://")):
        return "url: ${...} is not resolved in the url; use request.params"
    return border.url_problem(url)


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

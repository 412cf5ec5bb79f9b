"""The ``[judge]`` section (and a job's ``[jobs.judge]`` override): which OpenAI-compatible
chat endpoint judges answers, and how hard it may be used.

Header values may hold ``${NAME}`` references, resolved from the environment when the judge
is built and registered with the process-wide redactor exactly as a target's are (the same
:meth:`~evaluator.targets.request.RequestTemplate.from_config` does both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["JudgeConfig", "merged"]


class JudgeConfig(BaseModel):
    """An OpenAI-compatible chat-completions endpoint used as the judge (temperature 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    url: str
    """The chat-completions URL (`http://host:port/v1/chat/completions`)."""
    model: str = Field(min_length=1, max_length=200)
    """The model name sent with each request; part of the verdicts' identity."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers; `${ENV}` values are secrets, redacted everywhere."""
    timeout_seconds: float = Field(30.0, gt=0, le=600)
    """One judge call's whole time (a hanging judge costs the case a `judge_timeout`)."""
    concurrency: int = Field(2, ge=1, le=256)
    """Judge calls in flight, apart from the target's own limit."""
    retries: int = Field(1, ge=0, le=10)
    """Extra attempts after a transient failure (connect, 429, 5xx), each after a jittered
    back-off from 0.2 s to at most 2 s (a `Retry-After` is honoured up to 2 s)."""
    max_calls: int | None = Field(None, ge=1)
    """Judge calls a run may make; the cases after that are `judge_skipped` (counted)."""
    max_cost: float | None = Field(None, gt=0)
    """Cost a run may spend (at `input_price`/`output_price`); then `judge_skipped`."""
    input_price: float = Field(0.0, ge=0)
    """Price of a million input tokens."""
    output_price: float = Field(0.0, ge=0)
    """Price of a million output tokens."""
    max_response_bytes: int = Field(262_144, ge=1024, le=16_777_216)
    """A judge response above this size is a `judge_too_large` error."""
    canaries: int = Field(2, ge=1, le=20)
    """Canary cases (an injected answer without the expected facts) in every judged run."""
    cache: bool = True
    """Reuse verdicts for an unchanged question, answer and evidence (`--no-judge-cache`)."""
    drift_labels: Path | None = None
    """Human labels the daemon re-judges on its own schedule (judge drift); a JSONL file."""
    drift_interval_seconds: float | None = Field(None, ge=1)
    """How often the daemon re-judges the labelled cases of the latest report."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if "${" in value:
            raise ValueError("url: ${...} is not resolved in the url; use headers")
        return value

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        """What one call's tokens cost at the configured prices (per million tokens)."""
        return (
            (input_tokens or 0) * self.input_price + (output_tokens or 0) * self.output_price
        ) / 1e6


def merged(base: JudgeConfig | None, override: dict[str, Any] | None) -> JudgeConfig | None:
    """A job's judge: the top-level section with the job's own keys laid over it.

    Raises:
        pydantic.ValidationError: the merged section is invalid (or the job sets one
            without a top-level section and without ``url`` and ``model``).
    """
    if override is None:
        return base
    fields = base.model_dump(exclude_unset=True) if base is not None else {}
    return JudgeConfig.model_validate({**fields, **override})

"""The ``[judge]`` section (and a job's ``[jobs.judge]`` override): which OpenAI-compatible
chat endpoint judges answers, and how hard it may be used.

Header values may hold ``${NAME}`` references, resolved from the environment when the judge
is built and registered with the process-wide redactor exactly as a target's are (the same
:meth:`~evaluator.targets.request.RequestTemplate.from_config` does both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evaluator import border
from evaluator.judge.canary_verdicts import DEFAULT_LENIENT_ABOVE

__all__ = ["JudgeConfig", "PanelMember", "merged"]

#: repeated verdicts asked of each judge, at most (each one a call, counted by the budget)
MAX_SAMPLES = 9
#: judges on a panel besides the ``[judge]`` endpoint itself, at most
MAX_PANEL = 8
#: injection canaries in a run, at most
MAX_INJECTION_CANARIES = 20
#: wrong-answer canaries of each class in a run, at most
MAX_WRONG_ANSWER_CANARIES = 10


def _http_url(value: str) -> str:
    """A judge URL as given: no ``${...}`` in it (secrets go in headers), and one a request
    can be made to, by the rule of a target's url (a port out of range was an internal error
    at the first judge call)."""
    if "${" in value and value.startswith(("http://", "https://")):
        raise ValueError("url: ${...} is not resolved in the url; use headers")
    problem = border.url_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


class PanelMember(BaseModel):
    """One more judge on the panel (`[[judge.panel]]`): every other setting is the
    `[judge]` section's."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    model: str = Field(min_length=1, max_length=200)
    """The model name sent to this member."""
    url: str | None = None
    """Its chat-completions URL (default: the `[judge]` url)."""
    headers: dict[str, str] | None = None
    """Its request headers (default: the `[judge]` headers when it shares the `[judge]`
    url, none at another url: a secret never goes to an origin it was not written for)."""
    name: str | None = Field(None, min_length=1, max_length=100)
    """Its name in the report's votes (default: the model); unique on the panel."""

    @field_validator("url")
    @classmethod
    def _member_url(cls, value: str | None) -> str | None:
        return None if value is None else _http_url(value)

    @property
    def label(self) -> str:
        """The member's name in votes and in the judge's identity."""
        return self.name or self.model


class JudgeConfig(BaseModel):
    """An OpenAI-compatible chat-completions endpoint used as the judge (temperature 0 unless
    set), and the panel of judges voting beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    url: str
    """The chat-completions URL (`http://host:port/v1/chat/completions`)."""
    model: str = Field(min_length=1, max_length=200)
    """The model name sent with each request; part of the verdicts' identity."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers; `${ENV}` values are secrets, redacted everywhere."""
    timeout_seconds: float = Field(30.0, gt=0, le=600)
    """One judge call's whole time (a hanging judge costs the case a `judge_timeout`)."""
    concurrency: int = Field(8, ge=1, le=256)
    """Judge calls in flight, apart from the target's own limit (8: the most a 200 ms judge
    limited to 10 calls a second takes without losing a check, tests/benchmarks)."""
    retries: int = Field(1, ge=0, le=10)
    """Extra attempts after a transient failure (connect, 429, 5xx), each after a jittered
    back-off from 0.2 s to at most 2 s, or the `Retry-After` the judge asked for."""
    max_retry_after_seconds: float = Field(30.0, gt=0, le=600)
    """The longest `Retry-After` honoured; while one runs, no call goes to that judge."""
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
    canaries: int = Field(2, ge=1, le=MAX_INJECTION_CANARIES)
    """Canary cases (an injected answer without the expected facts) in every judged run."""
    wrong_answer_canaries: int = Field(2, ge=0, le=MAX_WRONG_ANSWER_CANARIES)
    """Wrong-answer canaries of each class in every judged run: a fact's wording with other
    numbers (specific but wrong) and a reply on the question stating none of its facts
    (vague but topical); 0 sends none."""
    lenient_above: float = Field(DEFAULT_LENIENT_ABOVE, ge=0, lt=1)
    """A judge accepting more than this share of the wrong-answer canaries is `lenient`:
    its hard judged rules fail the gate, as a compromised judge's do."""
    cache: bool = True
    """Reuse verdicts for an unchanged question, answer and evidence (`--no-judge-cache`)."""
    drift_labels: Path | None = None
    """Human labels the daemon re-judges on its own schedule (judge drift); a JSONL file."""
    drift_interval_seconds: float | None = Field(None, ge=1)
    """How often the daemon re-judges the labelled cases of the latest report."""
    samples: int = Field(1, ge=1, le=MAX_SAMPLES)
    """Verdicts asked of each judge per check; the majority decides, a split is `uncertain`."""
    temperature: float = Field(0.0, ge=0, le=2)
    """Sampling temperature sent with every request (above 0 lets a model's samples differ)."""
    panel: tuple[PanelMember, ...] = Field((), max_length=MAX_PANEL)
    """More judges voting beside this one (`[[judge.panel]]`: model, url, headers, name)."""
    checks: tuple[str, ...] | None = None
    """The judged checks this judge runs (default: every one: fact_support, groundedness,
    refusal); a check left out is neither asked nor canaried, its judged metrics n/a."""

    @field_validator("url")
    @classmethod
    def _judge_url(cls, value: str) -> str:
        return _http_url(value)

    @field_validator("checks")
    @classmethod
    def _known_checks(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        # here: the registry's modules build on the judge's records, which read this module
        from evaluator.judge.checks import check_names

        unknown = [name for name in value if name not in check_names()]
        if unknown or not value:
            raise ValueError(f"checks: name one or more of {', '.join(check_names())}")
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _distinct_members(self) -> JudgeConfig:
        names = [self.model, *(m.label for m in self.panel)]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"panel: judges named {doubled} twice; give a member its own name")
        return self

    def members(self) -> tuple[tuple[str, JudgeConfig], ...]:
        """Every judge that votes, by name: this one first, then each panel member as a
        whole config (its url, model and headers; every other setting this one's)."""
        return ((self.model, self), *((m.label, self._member(m)) for m in self.panel))

    def _member(self, member: PanelMember) -> JudgeConfig:
        url = member.url or self.url
        headers = member.headers
        if headers is None:
            headers = self.headers if url == self.url else {}
        return self.model_copy(
            update={"url": url, "model": member.model, "headers": headers, "panel": ()}
        )

    @property
    def panel_names(self) -> tuple[str, ...]:
        """The voting judges' names when there is a panel (none: the judge alone)."""
        return tuple(name for name, _ in self.members()) if self.panel else ()

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

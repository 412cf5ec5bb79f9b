"""What the daemon runs and where: jobs on a schedule, the HTTP server, history, OTLP export."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from evaluator.config.fields import _seconds, _Strict, _url_problem
from evaluator.targets.templates import env_reference_problem

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

__all__ = [
    "DEFAULT_INTERVAL_SECONDS",
    "HistoryConfig",
    "JobConfig",
    "OtlpConfig",
    "ServerConfig",
    "cron_trigger",
]

#: how often a job with neither `interval_seconds` nor `cron` runs
DEFAULT_INTERVAL_SECONDS = 300.0
#: a cron schedule's longest gap is looked for over this long (a week and a day: weekly
#: patterns, a weekend without runs) or this many runs, whichever comes first
_CRON_HORIZON = timedelta(days=8)
_CRON_RUNS = 2000


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
    evaluation_events: bool = True
    """Each case's scores, deterministic and judged, as `gen_ai.evaluation.result` log
    records tied to its span, sent to the logs URL beside `endpoint` (`/v1/logs`)."""

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
    def longest_gap_seconds(self) -> float:
        """The longest time between two of the job's runs: its interval (or the longest gap
        of its cron schedule over the next eight days) plus its jitter; inf when a cron
        schedule does not fire twice."""
        if self.cron is None:
            return (self.interval_seconds or DEFAULT_INTERVAL_SECONDS) + self.jitter_seconds
        trigger = cron_trigger(self.cron)
        now = datetime.now(UTC)
        previous = trigger.get_next_fire_time(None, now)
        longest = -1.0
        for _ in range(_CRON_RUNS):
            if previous is None:
                break
            following = trigger.get_next_fire_time(previous, previous + timedelta(seconds=1))
            if following is None:
                break
            longest = max(longest, (following - previous).total_seconds())
            if following - now > _CRON_HORIZON:
                break
            previous = following
        return longest + self.jitter_seconds if longest > 0 else float("inf")

    @property
    def dataset_name(self) -> str:
        return self.dataset_label or self.dataset.stem

    @property
    def key(self) -> str:
        return self.name or f"{self.target}/{self.dataset_name}"

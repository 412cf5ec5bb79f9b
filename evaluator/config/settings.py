"""The whole configuration: :class:`Settings`, its defaults and the checks across sections."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from evaluator.config.fields import DEFAULT_BUCKETS, ScoringConfig, _seconds
from evaluator.config.jobs import HistoryConfig, JobConfig, OtlpConfig, ServerConfig
from evaluator.config.slo import MAX_SLOS, SloConfig, burn_plan, resolve_jobs, slo_problems
from evaluator.config.sources import ENV_PREFIX
from evaluator.config.target import TargetConfig
from evaluator.errors import ConfigError
from evaluator.judge.settings import JudgeConfig, merged
from evaluator.run_options import RunOptions
from evaluator.slo.burn import BurnPlan

__all__ = ["Settings"]


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
    slos: tuple[SloConfig, ...] = Field((), max_length=MAX_SLOS)
    """Quality SLOs (`[[slos]]`): error budgets and burn-rate alerts (docs/slo.md)."""
    openslo_files: tuple[Path, ...] = ()
    """OpenSLO v1 files (YAML) whose SLOs join `[[slos]]` (the subset docs/slo.md names)."""

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
        """What no single field can check: the shard, target and job names, each job's
        target and K, each job's judge merged with the top-level one, and the SLOs."""
        if self.shard_index >= self.shard_count:
            raise ValueError(
                f"shard_index {self.shard_index} must be below shard_count {self.shard_count}"
            )
        self._check_target_names()
        self._check_jobs()
        self._check_job_judges()
        slo_problem = self.slo_problem(self.slos, lambda i, field: f"slos.{i}.{field}")
        if slo_problem is not None:
            raise ValueError(slo_problem)
        return self

    def _check_target_names(self) -> None:
        """Refuse two targets of one name: a job names its target."""
        labels = [t.label for t in self.targets]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"targets: duplicate target name(s) {dupes}; set distinct 'name's")

    def _check_jobs(self) -> None:
        """Each job names a known target, asks for no more than it keeps, and has a name of
        its own."""
        labels = [t.label for t in self.targets]
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

    def _check_job_judges(self) -> None:
        """Each job's judge keys, merged with the top-level ``[judge]``, form a valid judge."""
        for i, job in enumerate(self.jobs):
            try:
                merged(self.judge, job.judge)
            except ValidationError as exc:
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise ValueError(f"jobs.{i}.judge.{where}: {problem['msg']}") from None

    def slo_problem(
        self, slos: Sequence[SloConfig], where: Callable[[int, str], str]
    ) -> str | None:
        """The first problem of ``slos`` against this configuration's jobs and SLOs (besides
        ``slos`` themselves), as ``where(index, field): problem``; None when they are sound.
        ``where`` names the field as the user wrote it (``slos.0.window``, or an OpenSLO
        file's field)."""
        seen = {s.name for s in self.slos if s not in slos}
        for i, slo in enumerate(slos):
            if slo.name in seen:
                return f"{where(i, 'name')}: another SLO is called {slo.name!r}"
            seen.add(slo.name)
        judged = [self.judge_for(job) is not None for job in self.jobs]
        for i, slo in enumerate(slos):
            found = slo_problems(slo, self.jobs, judged)
            if found is not None:
                return f"{where(i, found[0])}: {found[1]}"
        return None

    def slo_jobs(self, slo: SloConfig) -> list[JobConfig]:
        """The jobs ``slo`` counts (it was checked when the settings were built)."""
        return resolve_jobs(slo.jobs, self.jobs)

    def burn_plan(self, slo: SloConfig) -> BurnPlan:
        """``slo``'s burn-rate alerts, sized for the jobs it counts."""
        return burn_plan(slo, self.slo_jobs(slo))

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

"""Quality SLOs (``[[slos]]``): which jobs, which SLI, the objective and the window.

One table per SLO::

    [[slos]]
    name = "answers"
    job = "ref"              # a job as the status page names it: target, or target/dataset
    sli = "answer_correct"   # an SLI of evaluator.slo.sli.SLIS
    objective = 0.99
    window = "28d"

What a table can be checked for alone is checked here; what needs the rest of the
configuration (the jobs it names, their judges, whether the window holds enough runs of
them) is checked by :func:`slo_problems`, for ``[[slos]]`` and OpenSLO files alike.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field, ValidationInfo, field_validator

from evaluator.config.fields import MAX_SECONDS, _Strict
from evaluator.slo.burn import BurnPlan, BurnPlanError, plan_burn_alerts
from evaluator.slo.duration import parse_duration
from evaluator.slo.sli import SLI_NAMES, SliChoice, sli

if TYPE_CHECKING:
    from evaluator.config.jobs import JobConfig

__all__ = [
    "MAX_SLOS",
    "SloConfig",
    "burn_plan",
    "resolve_jobs",
    "run_gap_seconds",
    "slo_problems",
]

#: SLOs a configuration may hold: each adds a few series and a rule group
MAX_SLOS = 100
#: the shortest SLO window: the workbook's alerts need room for windows of minutes
MIN_WINDOW_SECONDS = 3600
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


class SloConfig(_Strict):
    """A quality SLO: the share of good events over a rolling window (`[[slos]]`)."""

    name: str = Field(description="the SLO's name: the `slo` label of its series and alerts")
    job: str | tuple[str, ...] = Field(
        description="the job(s) it counts: a job's name, its target, or target/dataset"
    )
    sli: str = Field(description="what makes a case a good event: an SLI of docs/slo.md")
    objective: float = Field(gt=0, lt=1, allow_inf_nan=False)
    """The share of events that must be good over the window (0.99: one bad in a hundred)."""
    window: str = "28d"
    """The rolling window, as Prometheus writes durations (28d, 7d, 1d)."""
    threshold_seconds: float | None = Field(
        None, gt=0, le=MAX_SECONDS, allow_inf_nan=False, validate_default=True
    )
    """For `sli = "latency"`: a case at most this slow is good."""
    check: str | None = Field(None, validate_default=True)
    """For `sli = "judged"`: the judged check (fact_support, groundedness, refusal)."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(
                "an SLO name is 1 to 63 letters, digits, '_', '.' or '-', starting with a "
                "letter or digit (it becomes a label value and a rule group name)"
            )
        return value

    @field_validator("job")
    @classmethod
    def _job(cls, value: str | tuple[str, ...]) -> tuple[str, ...]:
        jobs = (value,) if isinstance(value, str) else tuple(value)
        if not jobs:
            raise ValueError("name at least one job")
        if len(jobs) > 100 or any(not 0 < len(j) <= 200 for j in jobs):
            raise ValueError("at most 100 jobs, each named in 1 to 200 characters")
        return jobs

    @field_validator("sli")
    @classmethod
    def _sli(cls, value: str) -> str:
        if value not in SLI_NAMES:
            close = difflib.get_close_matches(value, SLI_NAMES, n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise ValueError(f"unknown SLI{hint}; known: {', '.join(SLI_NAMES)}")
        return value

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        if parse_duration(value) < MIN_WINDOW_SECONDS:
            raise ValueError(f"{value!r} is shorter than an hour")
        return value

    @field_validator("threshold_seconds", "check")
    @classmethod
    def _parameter(cls, value: float | str | None, info: ValidationInfo) -> float | str | None:
        name = info.field_name
        chosen = info.data.get("sli")
        if chosen is None:  # the SLI itself is wrong: said once, there
            return value
        needed = sli(chosen).parameter
        if needed == name and value is None:
            raise ValueError(f"sli {chosen!r} needs {name}")
        if needed != name and value is not None:
            raise ValueError(f"only for sli {_taker(str(name))!r}")
        if name == "check" and value is not None:
            # here, not at the top: the judge's checks only for an SLO that names one
            from evaluator.judge.checks import check_names

            names = check_names()
            if value not in names:
                raise ValueError(f"{value!r} is not a judged check ({', '.join(names)})")
        return value

    @property
    def jobs(self) -> tuple[str, ...]:
        """The job names as written (the validator makes ``job`` a tuple)."""
        return self.job if isinstance(self.job, tuple) else (self.job,)

    @property
    def window_seconds(self) -> int:
        return parse_duration(self.window)

    @property
    def indicator(self) -> str:
        """The SLI and its parameter in a few words: ``latency <= 2.5s``, ``judged
        fact_support``, ``answer_correct``."""
        if self.threshold_seconds is not None:
            return f"{self.sli} <= {self.threshold_seconds:g}s"
        if self.check is not None:
            return f"{self.sli} {self.check}"
        return self.sli

    @property
    def choice(self) -> SliChoice:
        """The indicator, as the SLI table takes it."""
        return SliChoice(self.sli, self.threshold_seconds, self.check)


def _taker(parameter: str) -> str:
    return next(s for s in SLI_NAMES if sli(s).parameter == parameter)


def _job_named(name: str, jobs: Sequence[JobConfig]) -> JobConfig:
    """The one job ``name`` names (its name, or a target with exactly one job).

    Raises:
        ValueError: no such job, or a target with several.
    """
    match = [j for j in jobs if j.key == name] or [j for j in jobs if j.target == name]
    if not match:
        raise ValueError(f"no job named {name!r} (known: {', '.join(_known_names(jobs))})")
    if len(match) > 1:
        keys = ", ".join(sorted(j.key for j in match))
        raise ValueError(f"{name!r} has several jobs ({keys}): name one as target/dataset")
    return match[0]


def resolve_jobs(names: Sequence[str], jobs: Sequence[JobConfig]) -> list[JobConfig]:
    """The jobs ``names`` name, each once: a job's name (``name``, or ``target/dataset``),
    or a target that has exactly one job.

    Raises:
        ValueError: a name matching no job, or a target with several.
    """
    found: list[JobConfig] = []
    for name in names:
        job = _job_named(name, jobs)
        if job not in found:
            found.append(job)
    return found


def _known_names(jobs: Sequence[JobConfig]) -> list[str]:
    """Every name an SLO may give a job by: its key and its target, sorted."""
    return sorted({j.key for j in jobs} | {j.target for j in jobs})


def slo_problems(
    slo: SloConfig, jobs: Sequence[JobConfig], judged: Sequence[bool]
) -> tuple[str, str] | None:
    """What is wrong with ``slo`` in the configuration, as (its field, the problem), or
    None. ``judged`` says, for each of ``jobs``, whether it has a judge."""
    try:
        mine = resolve_jobs(slo.jobs, jobs)
    except ValueError as exc:
        return "job", str(exc)
    if slo.sli == "judged":
        unjudged = [j.key for j in mine if not judged[list(jobs).index(j)]]
        if unjudged:
            return "sli", f"'judged' counts judged cases, and job(s) {unjudged} have no [judge]"
    try:
        burn_plan(slo, mine)
    except BurnPlanError as exc:
        return "window", str(exc)
    return None


def run_gap_seconds(jobs: Sequence[JobConfig]) -> float:
    """The longest time between two runs of any of ``jobs`` (interval or cron, jitter
    included)."""
    return max(job.longest_gap_seconds for job in jobs)


def burn_plan(slo: SloConfig, jobs: Sequence[JobConfig]) -> BurnPlan:
    """The burn-rate alerts of ``slo`` counting ``jobs`` (see evaluator.slo.burn).

    Raises:
        BurnPlanError: the window holds too few runs of the jobs.
    """
    gap = run_gap_seconds(jobs)
    if not math.isfinite(gap):
        raise BurnPlanError("a job of it never runs again (its cron has no next time)")
    return plan_burn_alerts(slo.objective, slo.window_seconds, gap)

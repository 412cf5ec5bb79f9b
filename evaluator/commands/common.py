"""What several subcommands share: settings from flags, the selected job, one run."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluator.config import JobConfig, Settings, TargetConfig, load_settings
from evaluator.dataset import load_dataset
from evaluator.errors import ConfigError, EvaluatorError
from evaluator.factory import build_target
from evaluator.models import Dataset
from evaluator.report import RunReport, write_report
from evaluator.runner import RunOptions, run_dataset

__all__ = [
    "JobPlan",
    "check_scored",
    "plan_job",
    "run_job",
    "save_report",
    "settings_from_args",
]


def settings_from_args(args: argparse.Namespace, extra: dict[str, Any] | None = None) -> Settings:
    """Load the config file and environment, then apply the command-line flags on top."""
    overrides: dict[str, Any] = dict(extra or {})
    for flag in ("k", "concurrency"):
        value = getattr(args, flag, None)
        if value is not None:
            overrides[flag] = value
    url, spec = getattr(args, "target_url", None), getattr(args, "target", None)
    dataset = getattr(args, "dataset", None)
    if url is not None or spec is not None:
        if dataset is None:
            raise ConfigError("--target-url/--target needs --dataset FILE")
        target = TargetConfig(url=url, callable=spec) if url else TargetConfig(callable=spec)
        job: dict[str, Any] = {"target": target.label, "dataset": dataset}
        job.update(getattr(args, "job_overrides", None) or {})
        overrides["targets"] = [target.model_dump()]
        overrides["jobs"] = [job]
    settings = load_settings(getattr(args, "config", None), overrides)
    if dataset is not None and url is None and spec is None:
        # --dataset alone swaps the golden set of the selected job
        chosen = settings.job(getattr(args, "job", None))
        jobs = [
            j.model_copy(update={"dataset": dataset}) if j.key == chosen.key else j
            for j in settings.jobs
        ]
        settings = settings.model_copy(update={"jobs": tuple(jobs)})
    return settings


@dataclass(frozen=True)
class JobPlan:
    """A job resolved against its settings: target config, golden set and run options."""

    settings: Settings
    job: JobConfig
    target: TargetConfig
    dataset: Dataset
    options: RunOptions


def plan_job(settings: Settings, job_name: str | None = None) -> JobPlan:
    """Resolve a job; loads (and validates) its golden set."""
    job = settings.job(job_name)
    dataset = load_dataset(job.dataset)
    if job.dataset_label:
        dataset = replace(dataset, name=job.dataset_label)
    target = settings.target(job.target)
    options = settings.run_options(job)
    return JobPlan(settings, job, target, dataset, options)


async def _run(plan: JobPlan) -> RunReport:
    target = build_target(plan.target)
    try:
        return await run_dataset(plan.dataset, target, plan.options)
    finally:
        await target.aclose()


def save_report(report: RunReport, output: Path) -> None:
    """Write ``report`` atomically; a folder that cannot be written is a one-line error."""
    try:
        write_report(report, output)
    except OSError as exc:
        raise EvaluatorError(f"cannot write report {output}: {exc.strerror or exc}") from exc


def check_scored(report: RunReport, where: str) -> None:
    """Raise when no case could be scored: the run says nothing about quality (exit 1)."""
    if report.summary.scored_count > 0:
        return
    kinds = ", ".join(f"{k} {n}" for k, n in report.summary.errors_by_kind.items())
    first = next((c.error.message for c in report.cases if c.error is not None), "no cases")
    raise EvaluatorError(
        f"no case could be scored against {report.target}: all {report.case_count} failed "
        f"({kinds}); first error: {first}; {where}"
    )


def run_job(plan: JobPlan) -> RunReport:
    """Run a planned job once, synchronously (for the one-shot commands)."""
    return asyncio.run(_run(plan))

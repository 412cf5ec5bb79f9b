"""What several subcommands share: settings from flags, the selected job, one run."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluator.commands.flags import TargetFlags
from evaluator.commands.notices import warn
from evaluator.commands.progress import Progress
from evaluator.config import (
    CallableTargetConfig,
    HttpTargetConfig,
    JobConfig,
    Settings,
    TargetConfig,
    load_settings,
)
from evaluator.dataset import load_dataset
from evaluator.errors import ConfigError, EvaluatorError, OutputError
from evaluator.factory import build_target
from evaluator.models import Dataset
from evaluator.report import RunReport, write_report
from evaluator.report.stream import ReportStream
from evaluator.run import otlp
from evaluator.run.runner import CaseSink, RunOptions, run_dataset
from evaluator.scoring.labels import AuditTotals
from evaluator.summary import id_mismatch_warning
from evaluator.targets import offload

__all__ = [
    "JobPlan",
    "check_scored",
    "exit_if_interrupted",
    "format_repeats",
    "plan_job",
    "run_job",
    "save_report",
    "settings_from_flags",
    "streamed_run",
    "warn_id_mismatch",
]


def target_from_flags(url: str | None, spec: str | None) -> TargetConfig:
    """The target ``--target-url URL`` or ``--target MODULE:FUNCTION`` names.

    Raises:
        ConfigError: naming the flag, for a URL with a bad port or a broken IPv6 host.
    """
    try:
        if url is not None:
            return HttpTargetConfig(url=url)
        return CallableTargetConfig(callable=spec or "")
    except ValidationError as exc:
        flag = "--target-url" if url is not None else "--target"
        problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ConfigError(f"invalid configuration: {flag} {url or spec}: {problems}") from None


def settings_from_flags(
    config: str | None,
    given: TargetFlags | None = None,
    *,
    job_overrides: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Settings:
    """Load the config file and environment, then apply the command-line flags on top.

    Args:
        config: ``--config FILE``.
        given: the target flags of a command that has them.
        job_overrides: settings of the job ``--target-url``/``--target`` describe (the
            daemon's ``--interval``).
        extra: top-level settings from other flags (``--listen``).
    """
    flags = given or TargetFlags()
    overrides: dict[str, Any] = dict(extra or {})
    origins: dict[str, str] = {}
    for name, value in (("k", flags.k), ("concurrency", flags.concurrency)):
        if value is not None:
            overrides[name] = value
            origins[name] = f"--{name}"
    if flags.target_url is not None or flags.target is not None:
        _flag_job(flags, job_overrides, overrides, origins)
    settings = load_settings(config, overrides, origins)
    if flags.dataset is not None and flags.target_url is None and flags.target is None:
        settings = _swap_dataset(settings, flags, config, flags.dataset)
    return settings


def _flag_job(
    flags: TargetFlags,
    job_overrides: Mapping[str, Any] | None,
    overrides: dict[str, Any],
    origins: dict[str, str],
) -> None:
    """The one target and job ``--target-url``/``--target`` and ``--dataset`` describe,
    added to ``overrides`` (they replace the file's targets and jobs)."""
    if flags.dataset is None:
        raise ConfigError("--target-url/--target needs --dataset FILE")
    target = target_from_flags(flags.target_url, flags.target)
    job: dict[str, Any] = {
        "target": target.label,
        "dataset": flags.dataset,
        **(job_overrides or {}),
    }
    overrides["targets"] = [target.model_dump()]
    overrides["jobs"] = [job]
    # built from several flags (--target-url, --dataset, --interval...): name the field
    origins["targets"] = origins["jobs"] = ""


def _swap_dataset(
    settings: Settings, flags: TargetFlags, config: str | None, dataset: str
) -> Settings:
    """``--dataset`` alone: the selected job's golden set swapped, the rest as configured."""
    if not settings.jobs:
        raise ConfigError(_dataset_without_job(settings, config))
    chosen = settings.job(flags.job)
    jobs = [
        j.model_copy(update={"dataset": dataset}) if j.key == chosen.key else j
        for j in settings.jobs
    ]
    return settings.model_copy(update={"jobs": tuple(jobs)})


def _dataset_without_job(settings: Settings, config: str | None) -> str:
    """--dataset swaps a job's golden set; with targets but no job, say what is missing."""
    where = config or "the configuration"
    if not settings.targets:
        return (
            "--dataset needs a target: add --target-url URL (or --target module:function), "
            f"or a [[targets]] entry and a [[jobs]] entry in {where}"
        )
    names = ", ".join(repr(t.label) for t in settings.targets)
    first = settings.targets[0].label
    return (
        f"--dataset replaces the golden set of a job, and {where} has target(s) {names} but "
        f'no [[jobs]]: add [[jobs]] with target = "{first}" and dataset = "...", '
        "or pass --target-url/--target with --dataset"
    )


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


async def _run(
    plan: JobPlan,
    repeats: int,
    progress: Progress,
    run_id: str | None,
    sink: CaseSink | None,
) -> RunReport:
    otlp.install(**plan.settings.otlp.model_dump())  # before the target: nothing to close
    target = build_target(plan.target)
    try:
        return await run_dataset(
            plan.dataset,
            target,
            plan.options,
            repeats=repeats,
            on_case=progress.on_case,
            keep_partial=True,  # Ctrl-C: a partial report, marked interrupted
            run_id=run_id,
            sink=sink,
        )
    finally:
        await target.aclose()
        offload.shutdown()  # the child process that decodes large bodies, if one started
        await asyncio.to_thread(otlp.shutdown)  # flush the case spans before exit


def streamed_run(
    plan: JobPlan, repeats: int, output: Path, run_id: str
) -> tuple[RunReport, AuditTotals]:
    """Run a planned job, writing its report to ``output`` case by case as the cases finish
    (a 100,000-case run never holds every case's texts); the report, whose cases keep no
    texts, and its label audit.

    Raises:
        OutputError: the report's folder cannot be written (before the run starts), or the
            report could not be written; ``output`` is left as it was.
    """
    try:
        stream = ReportStream(output)
    except OSError as exc:
        raise OutputError(f"cannot write report {output}: {exc.strerror or exc}") from exc
    with stream:
        report = run_job(plan, repeats, run_id=run_id, stream=stream)
        try:
            stream.finish(report)
        except OSError as exc:
            raise OutputError(f"cannot write report {output}: {exc.strerror or exc}") from exc
    assert stream.audit is not None  # set by finish
    return report, stream.audit


def save_report(report: RunReport, output: Path) -> None:
    """Write ``report`` atomically; a folder that cannot be written is a one-line error."""
    try:
        write_report(report, output)
    except OSError as exc:
        raise OutputError(f"cannot write report {output}: {exc.strerror or exc}") from exc


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


def warn_id_mismatch(report: RunReport) -> None:
    """After a run: say so on stderr when no relevant id was ever retrieved."""
    warning = id_mismatch_warning(report.cases)
    if warning is not None:
        warn(warning)


def run_job(
    plan: JobPlan,
    repeats: int = 1,
    *,
    run_id: str | None = None,
    stream: ReportStream | None = None,
) -> RunReport:
    """Run a planned job once (each case ``repeats`` times), synchronously.

    With ``stream``, each case is written to the report file as it finishes and the
    returned report's cases keep no evidence texts: the caller finishes the stream with it
    (:func:`streamed_run`).

    A progress line shows on stderr when it is a terminal. Ctrl-C stops the run and
    returns the cases that finished, in a report marked ``interrupted``: the caller saves
    it and exits 130 (:func:`exit_if_interrupted`).
    """
    progress = Progress(len(plan.dataset.cases) * repeats, sys.stderr)
    done: list[RunReport] = []

    async def main() -> None:
        # the report is not the main task's result: asyncio.run's clean-up passes the
        # task's repr into an error message it discards (signal.getsignal of its SIGINT
        # handler), and a task's repr includes its result: the repr of a 100,000-case
        # report took 4 s of every such run
        sink = None if stream is None else stream.add
        done.append(await _run(plan, repeats, progress, run_id, sink))

    try:
        asyncio.run(main())
    finally:
        progress.close()
    return done[0]


def exit_if_interrupted(report: RunReport, output: Path) -> None:
    """After saving a Ctrl-C'd run's partial report: say so and stop with exit 130."""
    if not report.interrupted:
        return
    print(
        f"evaluator: interrupted: {report.case_count} of the golden set's cases finished; "
        f"partial report (marked interrupted) written to {output}",
        file=sys.stderr,
    )
    raise KeyboardInterrupt


def format_repeats(report: RunReport) -> str | None:
    """The ``--repeat`` lines of a run's output, or None for a run without repeats."""
    rep = report.repeats
    if rep is None:
        return None
    ks = sorted({1, 2, rep.n} & set(range(1, rep.n + 1)))
    hats = ", ".join(f"pass^{k} {v:.3f}" for k in ks if (v := rep.pass_hat_k(k)) is not None)
    flaky = rep.flaky_ids
    shown = ", ".join(flaky[:10]) + (f" and {len(flaky) - 10} more" if len(flaky) > 10 else "")
    lines = [f"repeats: each case {rep.n} times, interleaved; {hats or 'no case judged'}"]
    lines.append(f"flaky within this run ({len(flaky)}): {shown or '-'}")
    return "\n".join(lines)

"""``evaluator check``: is this configuration ready to run? Without calling any target.

Loads the configuration (file and environment), then what ``serve`` reads at start: the
``[server]`` token and the ``[otlp]`` export (their ``${NAME}`` variables), and for every
job: its golden set, its target (request template, ``${NAME}`` variables, response mapping,
CA bundle, or the import of a ``module:function``), its judge's headers, its baseline
report; the gates file; and every SLO
(what it counts, its burn-rate alerts and how they differ from the SRE workbook's; a
judged SLO needs a judge calibrated for its check). Every problem
is listed, one line each, and the exit code is 1 when there is any: a deploy pipeline can
run it before starting the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluator.commands.flags import CommonOptions
from evaluator.commands.target_warnings import check_warnings
from evaluator.config import CallableTargetConfig, Settings, TargetConfig
from evaluator.config.slo import SloConfig
from evaluator.daemon.access import resolve_token
from evaluator.dataset import load_dataset
from evaluator.errors import EvaluatorError, ExitCode
from evaluator.factory import build_target
from evaluator.gate.rules import load_gates
from evaluator.judge.calibration_store import CALIBRATION_FILE, read_calibration
from evaluator.judge.client import judge_headers
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.settings import JudgeConfig
from evaluator.report import read_report
from evaluator.run import otlp

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    """No flags of its own."""


def configure(parser: argparse.ArgumentParser) -> None:
    """No flags of its own: --config (and the environment) say what to check."""


async def _build_and_close(config: TargetConfig) -> None:
    target = build_target(config)  # builds the request and mapping; sends nothing
    await target.aclose()


def _check(what: str, action: Callable[[], str], problems: list[str]) -> None:
    try:
        print(f"ok    {what}: {action()}")
    except EvaluatorError as exc:
        problems.append(f"{what}: {exc}")
        print(f"FAIL  {what}: {exc}")


def _slo_line(settings: Settings, slo: SloConfig) -> str:
    """What the SLO counts and the alerts it gets; a judged SLO whose jobs' judge is not
    calibrated for its check fails (the daemon would count none of its events)."""
    jobs = settings.slo_jobs(slo)
    if slo.check is not None:
        for job in jobs:
            judge = settings.judge_for(job)
            assert judge is not None  # a judged SLO's jobs have a judge (checked at load)
            calibrated = read_calibration(settings.reports_dir / CALIBRATION_FILE).calibrated()
            if not calibrated.get((judge.model, PROMPT_VERSION), {}).get(slo.check, False):
                raise EvaluatorError(
                    f"the judge of job {job.key} ({judge.model}) is not calibrated for "
                    f"{slo.check}: its events would not be counted (run evaluator calibrate)"
                )
    plan = settings.burn_plan(slo)
    alerts = ", ".join(f"{a.severity} {a.long}/{a.short} at {a.factor:g}x" for a in plan.alerts)
    names = ", ".join(j.key for j in jobs)
    return (
        f"{slo.indicator}, objective {slo.objective:g} over {slo.window} of {names}; "
        f"alerts: {alerts}"
    )


def _slo_notes(settings: Settings, slo: SloConfig) -> list[str]:
    """How the SLO's alerts differ from the workbook's, as `evaluator slo rules` says."""
    try:
        plan = settings.burn_plan(slo)
    except ValueError:
        return []
    return plan.remarks()


def _check_started(settings: Settings, problems: list[str]) -> None:
    """What ``serve`` resolves before its jobs, the way it does: the pages' token and the
    span export (an unset ``${NAME}`` stops the daemon; it fails the check the same)."""
    if settings.server.token is not None:

        def token() -> str:
            resolve_token(settings.server.token)
            return "token set (a secret)"

        _check("server", token, problems)
    if settings.otlp.enabled:

        def export() -> str:
            settings_of = settings.otlp.model_dump()
            try:
                otlp.install(**settings_of)  # as serve does: the SDK is there too
            finally:
                otlp.shutdown()
            del settings_of["enabled"]
            return str(otlp.resolve(**settings_of)["endpoint"])

        _check("otlp", export, problems)


def _check_targets(settings: Settings, problems: list[str]) -> None:
    """Each target built (its request template, TLS, secrets) and closed, and what its
    configuration reveals."""
    for target in settings.targets:

        def build(target: TargetConfig = target) -> str:
            asyncio.run(_build_and_close(target))
            if isinstance(target, CallableTargetConfig):
                return f"callable {target.callable}"
            return target.url

        _check(f"target {target.label}", build, problems)
        for warning in check_warnings(target):
            print(f"warn  {warning}")


def _check_jobs(settings: Settings, problems: list[str]) -> None:
    """Each job's golden set read, its judge's headers resolved, its baseline read."""
    for job in settings.jobs:

        def golden(path: Path = job.dataset) -> str:
            dataset = load_dataset(path)
            return f"{path}, {len(dataset.cases)} cases"

        _check(f"job {job.key}: golden set", golden, problems)
        judge = settings.judge_for(job)
        if judge is not None:

            def judged(judge: JudgeConfig = judge) -> str:
                judge_headers(judge)
                return f"{judge.url} ({judge.model})"

            _check(f"job {job.key}: judge", judged, problems)
        if job.baseline is not None:

            def baseline(path: Path = job.baseline) -> str:
                report = read_report(path)
                return f"{path}, {report.case_count} cases, K={report.k}"

            _check(f"job {job.key}: baseline", baseline, problems)


def _check_slos(settings: Settings, problems: list[str]) -> None:
    """Each SLO in words, with what it notes of the jobs it reads."""
    for slo in settings.slos:

        def described(slo: SloConfig = slo) -> str:
            return _slo_line(settings, slo)

        _check(f"slo {slo.name}", described, problems)
        for note in _slo_notes(settings, slo):
            print(f"note  slo {slo.name}: {note}")


def handle(options: Options) -> int:
    """Check everything the configuration names, sending nothing to any target."""
    from evaluator.commands.common import settings_from_flags

    settings = settings_from_flags(options.config)
    problems: list[str] = []
    if not settings.jobs:
        problems.append("no [[jobs]]: the daemon would have nothing to run")
        print("FAIL  jobs: none configured")
    _check_started(settings, problems)
    _check_targets(settings, problems)
    _check_jobs(settings, problems)

    def gates() -> str:
        gates = load_gates(settings.gates_file)
        return f"{gates.source}, {len(gates.rules)} rules"

    _check("gate rules", gates, problems)
    _check_slos(settings, problems)
    if problems:
        print(f"{len(problems)} problem(s); nothing was sent to any target")
        return ExitCode.ERROR
    print("configuration ok; nothing was sent to any target")
    return ExitCode.OK

"""``evaluator judge REPORT``: judge a saved report's answers with the configured judge.

Writes the report back (or to ``--output``) with its ``judge`` block: the judged metrics,
each case's verdicts, the canaries and the judge's own usage. ``evaluator run`` does the
same after a run when the job has a judge.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from evaluator.commands.flags import CommonOptions
from evaluator.config import load_settings
from evaluator.errors import ConfigError, EvaluatorError, ExitCode

__all__ = ["JudgeUnavailableError", "Options", "add_cache_flag", "configure", "handle"]


class JudgeUnavailableError(EvaluatorError):
    """Nothing could be judged: every judge call failed (the message names each judge's URL
    and error)."""


@dataclass(frozen=True)
class Options(CommonOptions):
    report: str
    job: str | None
    output: str | None
    no_judge_cache: bool


def add_cache_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-judge-cache",
        action="store_true",
        help="ask the judge for every verdict, not reusing cached ones",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT", help="a saved run report (JSON)")
    parser.add_argument("--job", metavar="NAME", help="use this job's [judge] override")
    parser.add_argument("--output", metavar="FILE", help="write here instead of over REPORT")
    add_cache_flag(parser)


def handle(options: Options) -> int:
    # here, not at the top: `evaluator run` imports this module for its flag alone
    from evaluator.judge.apply import format_judged, judge_down, judge_file
    from evaluator.judge.judged_pass import CallEvent
    from evaluator.judge.store import Retention
    from evaluator.run.judged_telemetry import export_judged

    settings = load_settings(options.config)
    job = settings.job(options.job) if options.job is not None or settings.jobs else None
    config = settings.judge_for(job)
    if config is None:
        raise ConfigError("no judge configured: add a [judge] section (see docs/judge.md)")
    calls: list[CallEvent] = []
    report, judged = judge_file(
        Path(options.report),
        config,
        cache_folder=None if options.no_judge_cache else settings.reports_dir,
        output=Path(options.output) if options.output else None,
        keep_unjudged=False,
        keep=Retention(settings.history.keep_runs, settings.history.max_age_days),
        on_call=calls.append,
    )
    # the judge's calls as spans (and the judged scores as events) in the traces of the
    # cases they judged, when [otlp] is on: a judge that is down shows there too
    export_judged(settings.otlp.model_dump(), report.cases, judged, report.run_id, calls)
    print(format_judged(judged, config))
    down = judge_down(judged, config)
    if down is not None:
        # a judge that is down is a failure, and its errors never replace earlier verdicts
        raise JudgeUnavailableError(f"{down}; {options.report} left as it was")
    print(f"report: {options.output or options.report}")
    return ExitCode.OK

"""``evaluator run``: one run now; writes the report and prints the summary."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.commands.common import (
    JobPlan,
    check_scored,
    exit_if_interrupted,
    format_repeats,
    plan_job,
    settings_from_flags,
    streamed_run,
    warn_id_mismatch,
)
from evaluator.commands.display import DEFAULT_CURRENCY, format_run
from evaluator.commands.flags import CommonOptions, TargetFlags, add_repeat_flag, add_target_flags
from evaluator.commands.gcpolicy import batch_gc
from evaluator.commands.html import add_html_flag, settings_redactor, write_html_report
from evaluator.commands.judge import add_cache_flag
from evaluator.commands.notices import warn
from evaluator.commands.target_warnings import target_warnings
from evaluator.config import Settings
from evaluator.errors import ConfigError, ExitCode
from evaluator.models import CaseError
from evaluator.report import RunReport, read_report
from evaluator.run.runner import new_run_id

if TYPE_CHECKING:
    from evaluator.judge.judged_pass import CallEvent
    from evaluator.judge.record import JudgedRun
    from evaluator.judge.settings import JudgeConfig
    from evaluator.scoring.labels import AuditTotals

__all__ = ["Options", "configure", "handle", "mapping_diagnosis"]


@dataclass(frozen=True)
class Options(CommonOptions):
    target_flags: TargetFlags
    repeat: int
    output: str | None
    worst: int
    html: str | None
    no_judge_cache: bool


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_flags(parser)
    add_repeat_flag(parser)
    parser.add_argument(
        "--output", metavar="FILE", help="report path (default REPORTS_DIR/<dataset>-<run id>.json)"
    )
    parser.add_argument(
        "--worst", type=int, default=5, metavar="N", help="how many worst cases to print"
    )
    add_html_flag(parser)
    add_cache_flag(parser)


def handle(options: Options) -> int:
    with batch_gc():
        settings = settings_from_flags(options.config, options.target_flags)
        plan = plan_job(settings, options.target_flags.job)
        return _run(options, settings, plan)


def _run(options: Options, settings: Settings, plan: JobPlan) -> int:
    """Run the job, judge the written report when the job has a judge, print both, write
    the HTML report asked for; then the exit code the report says."""
    run_id = new_run_id()
    output = Path(options.output or settings.reports_dir / f"{plan.dataset.name}-{run_id}.json")
    report, audit = streamed_run(plan, options.repeat, output, run_id)
    judge = settings.judge_for(plan.job)
    judged = _judged(options, settings, judge, output) if not report.interrupted else None
    _print_run(options, plan, report, audit)
    if judged is not None and judge is not None:
        _print_judged(judged, judge)
    print(f"report: {output}")
    if options.html:
        _write_html(options, options.html, settings, judge, output)
    exit_if_interrupted(report, output)
    _check_report(plan, report, output)
    return ExitCode.OK


def _print_run(options: Options, plan: JobPlan, report: RunReport, audit: AuditTotals) -> None:
    """The run's summary (its cost in the target's currency) and its repeats, if any."""
    prices = getattr(plan.target, "prices", None)
    currency = prices.currency if prices is not None else DEFAULT_CURRENCY
    print(format_run(report, worst=options.worst, audit=audit, currency=currency))
    repeats = format_repeats(report)
    if repeats is not None:
        print(repeats)


def _print_judged(judged: JudgedRun, judge: JudgeConfig) -> None:
    """The judged figures, and a warning naming each judge that was down."""
    from evaluator.judge.apply import format_judged, judge_down

    print(format_judged(judged, judge))
    down = judge_down(judged, judge)
    if down is not None:
        warn(down)


def _check_report(plan: JobPlan, report: RunReport, output: Path) -> None:
    """Warn about what the target's answers suggest is misconfigured; refuse a report whose
    mapping read nothing, or that scored no case.

    Raises:
        ConfigError: the target's mapping found nothing in its responses.
        EvaluatorError: no case was scored.
    """
    warn_id_mismatch(report)
    diagnosis = mapping_diagnosis(report)
    for warning in target_warnings(plan.target, report.cases, mapping=diagnosis is None):
        warn(warning)
    if diagnosis is not None:
        raise ConfigError(f"target {report.target}: {diagnosis}")
    check_scored(report, f"report {output}")


def _judged(
    options: Options, settings: Settings, judge: JudgeConfig | None, output: Path
) -> JudgedRun | None:
    """The judge's pass over the written report, when the job has a judge (else None)."""
    if judge is None:
        return None
    # imported here: a run without a judge loads no judge client (nor its HTTP stack)
    from evaluator.judge.apply import judge_file
    from evaluator.judge.store import Retention

    # after the run, from the written report: judge traffic never counts in the target's
    # latency, errors or cost
    cache = None if options.no_judge_cache else settings.reports_dir
    keep = Retention(settings.history.keep_runs, settings.history.max_age_days)
    calls: list[CallEvent] = []
    report, judged = judge_file(output, judge, cache_folder=cache, keep=keep, on_call=calls.append)
    from evaluator.run.judged_telemetry import export_judged

    # the judge's calls as spans and the judged scores as events, tied to the case spans the
    # run sent
    export_judged(settings.otlp.model_dump(), report.cases, judged, report.run_id, calls)
    return judged


def _write_html(
    options: Options, path: str, settings: Settings, judge: JudgeConfig | None, output: Path
) -> None:
    """The HTML report of the run, from the written report (the cases in memory have no
    evidence texts: they went to the file)."""
    write_html_report(
        path,
        read_report(output),
        source=str(output),
        redact=settings_redactor(settings),
        worst=max(options.worst, 10),
        labels=judge.drift_labels if judge is not None else None,
    )
    print(f"html: {path}")


def mapping_diagnosis(report: RunReport) -> str | None:
    """A configuration error when the response shape failed on every case that got one.

    Returns None when some case was scored with ids, or when no case got a response at all
    (the target is down, not misconfigured). Otherwise, when every case that returned
    anything failed on a mapped field (or on the default contract's shape), one line naming
    the expression that failed most often, for ``evaluator run`` to print and exit 1 with.
    A case scored with no ids at all (an unanswerable case's empty hit list) proves nothing
    about the mapping: a typo in ``ids`` that such a case "satisfied" is still reported.
    """
    if any(not isinstance(c.outcome, CaseError) and c.ranked_ids for c in report.cases):
        return None  # a scored case (usually the first): not a walk over every record
    errors = _bad_responses(report)
    if not errors:
        return None
    # every case scored here returned no ids (one with ids returned above)
    empty = _scored(report)
    if all(e.field is not None and e.expression is not None for e in errors):
        return _mapping_failed(errors, empty)
    if _contract_only(errors):
        return _contract_failed(errors, empty)
    return None


def _scored(report: RunReport) -> int:
    """How many cases were scored (their call did not fail)."""
    return sum(1 for c in report.cases if not isinstance(c.outcome, CaseError))


def _bad_responses(report: RunReport) -> list[CaseError]:
    """The errors of the cases that got a response the mapping could not read."""
    return [e for c in report.cases if (e := c.error) is not None and e.kind == "bad_response"]


def _contract_only(errors: Sequence[CaseError]) -> bool:
    """Every error names a field without an expression: the default contract's shape failed,
    not a mapped JSON expression."""
    return all(e.field is not None and e.expression is None for e in errors)


def _mapping_failed(errors: Sequence[CaseError], empty: int) -> str:
    """Every response failed a mapped field: the expression that failed most often, with an
    example of its error (``empty``: cases scored with no ids)."""
    count = len(errors)
    if empty:
        count_text = f"{count} case(s) that returned anything ({empty} returned no ids)"
    else:
        count_text = f"{count} case(s) that got a response"
    (field, expression), _ = Counter((e.field, e.expression) for e in errors).most_common(1)[0]
    example = next(e.message for e in errors if (e.field, e.expression) == (field, expression))
    return (
        f"response mapping failed on all {count_text}: {example}; "
        f"fix response.{field} = {json.dumps(expression)} in the target's config "
        f"(try `evaluator probe`)"
    )


def _contract_failed(errors: Sequence[CaseError], empty: int) -> str:
    """No response followed the default contract's shape: map the endpoint's own."""
    return (
        f"no response of the {len(errors)} received follows the default contract"
        f"{f' ({empty} more returned no ids)' if empty else ''}: "
        f"{errors[0].message}; "
        f"describe the endpoint's shape with a [targets.response] mapping "
        f"(try `evaluator probe`)"
    )

"""``evaluator run``: one run now; writes the report and prints the summary."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.cli import add_target_flags
from evaluator.commands.common import plan_job, run_job, settings_from_args
from evaluator.display import format_run
from evaluator.errors import ConfigError, EvaluatorError
from evaluator.report import write_report
from evaluator.targets.mapping import mapping_diagnosis

__all__ = ["configure", "handle"]


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_flags(parser)
    parser.add_argument(
        "--output", metavar="FILE", help="report path (default REPORTS_DIR/<dataset>-<run id>.json)"
    )
    parser.add_argument(
        "--worst", type=int, default=5, metavar="N", help="how many worst cases to print"
    )


def handle(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    plan = plan_job(settings, args.job)
    report = run_job(plan)
    output = Path(args.output or settings.reports_dir / f"{report.dataset}-{report.run_id}.json")
    try:
        write_report(report, output)
    except OSError as exc:
        raise EvaluatorError(f"cannot write report {output}: {exc.strerror or exc}") from exc
    print(format_run(report, worst=args.worst))
    print(f"report: {output}")
    diagnosis = mapping_diagnosis(report)
    if diagnosis is not None:
        raise ConfigError(f"target {report.target}: {diagnosis}")
    if report.summary.scored_count == 0:
        kinds = ", ".join(f"{k} {n}" for k, n in report.summary.errors_by_kind.items())
        first = next((c.error.message for c in report.cases if c.error is not None), "no cases")
        raise EvaluatorError(
            f"no case could be scored against {report.target}: all {report.case_count} failed "
            f"({kinds}); first error: {first}"
        )
    return 0

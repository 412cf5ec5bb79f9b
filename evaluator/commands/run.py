"""``evaluator run``: one run now; writes the report and prints the summary."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.cli import add_target_flags
from evaluator.commands.common import (
    check_scored,
    plan_job,
    run_job,
    save_report,
    settings_from_args,
)
from evaluator.commands.display import format_run
from evaluator.errors import ConfigError
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
    save_report(report, output)
    print(format_run(report, worst=args.worst))
    print(f"report: {output}")
    diagnosis = mapping_diagnosis(report)
    if diagnosis is not None:
        raise ConfigError(f"target {report.target}: {diagnosis}")
    check_scored(report, f"report {output}")
    return 0

"""``evaluator run``: one run now; writes the report and prints the summary."""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from evaluator.commands.common import (
    check_scored,
    plan_job,
    run_job,
    save_report,
    settings_from_args,
)
from evaluator.commands.display import format_run
from evaluator.commands.flags import add_target_flags
from evaluator.commands.html import add_html_flag, settings_redactor, write_html_report
from evaluator.errors import ConfigError, ExitCode
from evaluator.report import RunReport
from evaluator.targets.mapping import mapping_failure

__all__ = ["configure", "handle", "mapping_diagnosis"]

#: the default contract parser's messages: a shape the mapping could fix
_DEFAULT_CONTRACT = re.compile(r"^(field '|response is (a|an|null) )")


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_flags(parser)
    parser.add_argument(
        "--output", metavar="FILE", help="report path (default REPORTS_DIR/<dataset>-<run id>.json)"
    )
    parser.add_argument(
        "--worst", type=int, default=5, metavar="N", help="how many worst cases to print"
    )
    add_html_flag(parser)


def handle(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    plan = plan_job(settings, args.job)
    report = run_job(plan)
    output = Path(args.output or settings.reports_dir / f"{report.dataset}-{report.run_id}.json")
    save_report(report, output)
    print(format_run(report, worst=args.worst))
    print(f"report: {output}")
    if args.html:
        write_html_report(
            args.html, report, source=str(output), redact=settings_redactor(settings),
            worst=max(args.worst, 10),
        )  # fmt: skip
        print(f"html: {args.html}")
    diagnosis = mapping_diagnosis(report)
    if diagnosis is not None:
        raise ConfigError(f"target {report.target}: {diagnosis}")
    check_scored(report, f"report {output}")
    return ExitCode.OK


def mapping_diagnosis(report: RunReport) -> str | None:
    """A configuration error when the response shape failed on every case that got one.

    Returns None when some case was scored, or when no case got a response at all (the
    target is down, not misconfigured). Otherwise, when every answered case failed on a
    mapped field (or on the default contract's shape), one line naming the expression
    that failed most often, for ``evaluator run`` to print and exit 1 with.
    """
    answered = [c for c in report.cases if c.error is None or c.error.kind == "bad_response"]
    if not answered or any(c.error is None for c in answered):
        return None
    messages = [c.error.message for c in answered if c.error is not None]
    failures = [mapping_failure(m) for m in messages]
    count = len(answered)
    if all(f is not None for f in failures):
        (field, expression), _ = Counter(f for f in failures if f is not None).most_common(1)[0]
        example = next(
            m for m, f in zip(messages, failures, strict=True) if f == (field, expression)
        )
        return (
            f"response mapping failed on all {count} case(s) that got a response: {example}; "
            f"fix response.{field} = {json.dumps(expression)} in the target's config "
            f"(try `evaluator probe`)"
        )
    if all(_DEFAULT_CONTRACT.match(m) for m in messages):
        return (
            f"no response of the {count} received follows the default contract: {messages[0]}; "
            f"describe the endpoint's shape with a [targets.response] mapping "
            f"(try `evaluator probe`)"
        )
    return None

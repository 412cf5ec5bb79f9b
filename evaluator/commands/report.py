"""``evaluator report REPORT.json [--baseline B] --html FILE``: read a saved run back.

Prints the run's summary (with a baseline, the gate's verdict on it) and writes the same
views as the daemon's pages into one HTML file. It never fails a pipeline on quality: the
exit code is 0 whatever the verdict (``evaluator gate`` is the command that decides).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from evaluator.commands.display import DEFAULT_CURRENCY, format_run
from evaluator.commands.flags import CommonOptions
from evaluator.commands.html import (
    add_html_flag,
    judge_labels,
    settings_redactor,
    write_html_report,
)
from evaluator.config import load_settings
from evaluator.errors import ConfigError, ExitCode
from evaluator.gate.render import GateSources, render
from evaluator.gate.rules import load_gates
from evaluator.gate.verdict import evaluate_gate
from evaluator.report import read_report

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    report: str
    baseline: str | None
    gates: str | None
    allow_dataset_change: bool
    html: str | None
    worst: int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT", help="a saved run report (JSON)")
    parser.add_argument("--baseline", metavar="FILE", help="compare against this report")
    parser.add_argument(
        "--gates",
        metavar="FILE",
        help="gate rules for --baseline (default: gates_file setting, else config/gates.toml)",
    )
    parser.add_argument(
        "--allow-dataset-change",
        action="store_true",
        help="compare reports of different golden sets on their shared cases",
    )
    add_html_flag(parser)
    parser.add_argument(
        "--worst", type=int, default=10, metavar="N", help="cases shown with their evidence"
    )


def handle(options: Options) -> int:
    if options.worst < 0:
        raise ConfigError("--worst must be >= 0")
    settings = load_settings(options.config)
    report = read_report(options.report)
    gate = None
    if options.baseline is not None:
        gates = load_gates(options.gates or settings.gates_file)
        baseline = read_report(options.baseline)
        gate = evaluate_gate(
            baseline, report, gates.rules, allow_dataset_change=options.allow_dataset_change
        )
        sources = GateSources(options.baseline, options.report, gates.source)
        text = render(gate, sources, "text", worst=options.worst)
        # the gate's own last line names its exit code; this command always exits 0
        print(
            re.sub(r" \(exit \d+\)$", " (evaluator report exits 0; evaluator gate decides)", text)
        )
    else:
        # the currency of the report's target as configured (the report keeps amounts only)
        target = next((t for t in settings.targets if t.name == report.target), None)
        prices = getattr(target, "prices", None)
        currency = prices.currency if prices is not None else DEFAULT_CURRENCY
        print(format_run(report, worst=options.worst, currency=currency))
    if options.html:
        write_html_report(
            options.html,
            report,
            source=options.report,
            redact=settings_redactor(settings),
            gate=gate,
            baseline_source=options.baseline,
            worst=options.worst,
            labels=judge_labels(settings, report),
        )
        print(f"html: {options.html}")
    return ExitCode.OK

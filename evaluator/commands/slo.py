"""``evaluator slo rules``: the configured SLOs' recording rules and burn-rate alerts, as a
Prometheus rules file or a PrometheusRule manifest (:mod:`evaluator.commands.slo_rules`).

The file is written atomically (``--output``), or printed. Every way an SLO's alerts differ
from the SRE workbook's (windows scaled or widened to hold two runs, burn rates adapted,
pairs left out) is a comment in the file and a ``note`` line on stderr; an SLO whose window
cannot hold enough runs of its jobs stops the configuration from loading, naming it.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from evaluator.commands.flags import CommonOptions
from evaluator.commands.slo_rules import (
    DEFAULT_RUNBOOK_BASE,
    check_runbook_base,
    render_prometheusrule,
    render_rules,
    slo_rules,
)
from evaluator.config.sources import DEFAULT_CONFIG_PATH
from evaluator.errors import ConfigError, ExitCode, OutputError, UsageError
from evaluator.report import write_bytes_atomic

__all__ = ["Options", "configure", "handle"]

_K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?")


@dataclass(frozen=True)
class Options(CommonOptions):
    action: str
    format: str
    output: Path | None
    runbook_base: str
    name: str


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", choices=("rules",), help="rules: write the SLOs' Prometheus rules"
    )
    parser.add_argument(
        "--format",
        choices=("rules", "prometheusrule"),
        default="rules",
        help="a Prometheus rules file (default) or a Prometheus Operator PrometheusRule",
    )
    parser.add_argument(
        "--output", type=Path, metavar="FILE", help="write here (atomically); default stdout"
    )
    parser.add_argument(
        "--runbook-base",
        default=DEFAULT_RUNBOOK_BASE,
        metavar="URL",
        help="absolute URL of the rendered deploy/RUNBOOK.md the alerts link to "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--name",
        default="rag-evaluator-slos",
        help="the PrometheusRule's metadata.name (default %(default)s)",
    )


def _write(path: Path, text: str) -> None:
    """``text`` at ``path``, atomically (the reports' writer: a temporary file, renamed)."""
    try:
        write_bytes_atomic(text.encode("utf-8"), path)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def handle(options: Options) -> int:
    from evaluator.commands.common import settings_from_flags

    try:
        check_runbook_base(options.runbook_base)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not _K8S_NAME.fullmatch(options.name):
        raise UsageError(f"--name {options.name!r}: lower-case letters, digits and '-'")
    settings = settings_from_flags(options.config)
    rules = slo_rules(settings)
    if not rules:
        raise ConfigError("no [[slos]] configured: there is nothing to write rules for")
    source = options.config or str(DEFAULT_CONFIG_PATH)
    if options.format == "prometheusrule":
        text = render_prometheusrule(rules, source, options.runbook_base, options.name)
    else:
        text = render_rules(rules, source, options.runbook_base)
    for one in rules:
        for remark in one.plan.remarks():
            print(f"note  slo {one.slo.name}: {remark}", file=sys.stderr)
    if options.output is None:
        sys.stdout.write(text)
    else:
        _write(options.output, text)
        print(f"wrote {options.output}: {len(rules)} SLO(s)", file=sys.stderr)
    return ExitCode.OK

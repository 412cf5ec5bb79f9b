"""``--html FILE`` for run, gate and report: one self-contained HTML file, written atomically.

The file has no script and no external asset (styles inline, trend lines inline SVG), so it
can be uploaded as a CI artifact and opened anywhere. Secrets of the configured targets are
masked in it, whatever an endpoint echoed back into an answer or a text. A judged report's
case views show the judge's verdicts, and the human labels of the judge's ``drift_labels``
file when the settings name one (the same file the daemon's case view reads).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.errors import ConfigError, EvaluatorError
from evaluator.redaction import redact_registered
from evaluator.report import RunReport, write_bytes_atomic

if TYPE_CHECKING:
    from evaluator.config import Settings
    from evaluator.pages.formatting import Redact

__all__ = ["add_html_flag", "judge_labels", "settings_redactor", "write_html_report"]


def add_html_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report (summary, rules, worst cases with evidence)",
    )


def settings_redactor(settings: Settings) -> Redact:
    """The process-wide redactor, with every secret the configured targets send registered
    (building a target's request template reads its secrets from the environment)."""
    # here, not at the top: `run` imports this module, and a run of a callable target
    # needs no request template (nor yarl, which it imports); nor does a gate of two
    # saved reports load the settings (pydantic) unless it writes a page
    from evaluator.config import HttpTargetConfig
    from evaluator.targets.request import RequestTemplate

    for target in settings.targets:
        if not isinstance(target, HttpTargetConfig):
            continue  # a callable sends nothing over the wire
        try:
            RequestTemplate.from_config(
                target.url,
                method=target.request.method,
                params=target.request.params,
                headers=target.request.headers,
                body=target.request.body,
            )
        except ConfigError:
            continue  # an unset variable: that secret cannot be in any report

    return redact_registered


def judge_labels(settings: Settings, report: RunReport) -> Path | None:
    """The human labels file the settings know for ``report``: the ``drift_labels`` of the
    judge of a job of the report's target (a job's own judge keys first), else of the
    top-level ``[judge]`` section; None when none is configured."""
    for job in settings.jobs:
        if job.target != report.target:
            continue
        judge = settings.judge_for(job)
        if judge is not None and judge.drift_labels is not None:
            return judge.drift_labels
    return settings.judge.drift_labels if settings.judge is not None else None


def write_html_report(
    path: str | Path,
    report: RunReport,
    *,
    source: str,
    redact: Redact,
    gate: object | None = None,
    baseline_source: str | None = None,
    worst: int = 10,
    labels: Path | None = None,
) -> None:
    """Render the HTML report of ``report`` (and the gate's verdict on it) to ``path``;
    ``labels``, a human labels file shown beside the judge's verdicts of a judged report.

    Raises:
        EvaluatorError: the file cannot be written; an existing file is left as it was.
    """
    # the pages (jinja2, the views) only when a page is written: a quarter of the start-up
    # of every run, gate and report command otherwise
    from evaluator.pages.judge_panel import read_known_labels, report_panels
    from evaluator.pages.render import PageRenderer
    from evaluator.pages.report import report_view
    from evaluator.pages.report_extras import report_extras

    panels = (
        report_panels(
            report,
            source=source,
            labels=read_known_labels(labels) if labels is not None else None,
            redact=redact,
        )
        if report.judge is not None
        else None
    )
    view = report_view(
        report,
        source=source,
        gate=gate,
        baseline_source=baseline_source,
        worst=worst,
        redact=redact,
        panels=panels,
    )
    extras = report_extras(view, report, gate=gate, worst=worst, redact=redact)
    html = PageRenderer(redact).report(view, extras)
    try:
        write_bytes_atomic(html.encode("utf-8"), path)
    except OSError as exc:
        raise EvaluatorError(f"cannot write {path}: {exc.strerror or exc}") from exc

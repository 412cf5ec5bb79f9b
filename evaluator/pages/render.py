"""HTML from the views: Jinja2 templates with autoescaping on, no script, no external asset.

One :class:`PageRenderer` per process (the daemon) or command: its environment compiles each
template once. Every ``{{ value }}`` is escaped by Jinja2 and, as a second line of defence,
passed through the redactor on its way out (``finalize``); the views redact at the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import jinja2
import markupsafe

from evaluator._version import __version__
from evaluator.pages.case import CaseView
from evaluator.pages.cases import CaseTableView
from evaluator.pages.formatting import Redact, verdict_badge
from evaluator.pages.report import ReportView
from evaluator.pages.report_extras import ReportExtras
from evaluator.pages.sidebyside import BaselineDiff
from evaluator.pages.status import JobView
from evaluator.redaction import redact_registered

__all__ = ["PageRenderer"]


class PageRenderer:
    """Renders the status page, the case view and the self-contained HTML report."""

    def __init__(self, redact: Redact = redact_registered) -> None:
        self._redact = redact

        def finalize(value: Any) -> Any:
            # Markup (a macro's output) is already built from finalized values
            if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
                return redact(value)
            return value

        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("evaluator.pages", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            finalize=finalize,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        # a verdict word's colour, the one mapping of every case table and case view
        self.env.filters["verdict_badge"] = verdict_badge

    def _render(self, name: str, *, refresh: int | None = None, **context: Any) -> str:
        generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return self.env.get_template(name).render(
            generated=f"evaluator {__version__} · {generated}", refresh=refresh, **context
        )

    def status(
        self,
        jobs: list[JobView],
        *,
        jobs_more: int = 0,
        refresh: int | None = None,
        notices: Sequence[str] = (),
    ) -> str:
        """The daemon's ``/``; ``refresh`` seconds makes the browser reload it (no script);
        ``notices``: what concerns the whole daemon (a rejected configuration reload)."""
        return self._render(
            "status.html.j2",
            title="evaluator status",
            jobs=jobs,
            jobs_more=jobs_more,
            refresh=refresh,
            notices=notices,
        )

    def runbook(self, body: markupsafe.Markup) -> str:
        """The on-call runbook (:mod:`evaluator.pages.runbook`) as a page of the daemon."""
        return self._render("runbook.html.j2", title="evaluator runbook", body=body)

    def case(
        self,
        view: CaseView,
        *,
        job: str,
        run_id: str,
        run_age: str,
        diff: BaselineDiff | None = None,
        stability: tuple[str, str, str] | None = None,
    ) -> str:
        """One case of a job's last run; ``diff``: the baseline's run of it beside it;
        ``stability``: the case's history class (value, words, badge colour), if known."""
        return self._render(
            "case.html.j2",
            title=f"{view.id} · {job}",
            case=view,
            diff=diff,
            job=job,
            run_id=run_id,
            run_age=run_age,
            stability=stability,
        )

    def case_table(self, view: CaseTableView, *, run_age: str) -> str:
        return self._render(
            "cases.html.j2",
            title=f"cases · {view.target} / {view.dataset}",
            t=view,
            run_age=run_age,
        )

    def report(self, view: ReportView, extras: ReportExtras | None = None) -> str:
        """The HTML report; ``extras``: its by-tag table, worst reasons, baseline diffs and
        case table (:func:`evaluator.pages.report_extras.report_extras`)."""
        return self._render("report.html.j2", title=view.title, r=view, x=extras)

    def bad_request(self, message: str) -> str:
        return self._render("error.html.j2", title="bad request", message=message)

    def not_found(self, message: str) -> str:
        return self._render("error.html.j2", title="not found", message=message)

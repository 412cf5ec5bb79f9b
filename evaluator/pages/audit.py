"""The label audit as the pages show it: cases checked, suspect labels counted, the first
:data:`SUSPECT_SHOWN` linked with their message (the status page and the HTML report)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evaluator.report import RunReport
from evaluator.scoring.labels import AuditTotals, audit_run

__all__ = ["SUSPECT_SHOWN", "AuditView", "audit_view"]

#: suspect labels listed per job or report (all are counted)
SUSPECT_SHOWN = 20


@dataclass(frozen=True, slots=True)
class AuditView:
    checked: int
    suspect: int
    cases: list[tuple[str, str, str]]  # (case id, message, href)


def audit_view(
    report: RunReport, href: Callable[[str], str], totals: AuditTotals | None = None
) -> AuditView:
    """``totals``: the report's label audit when already computed (a status page's
    :class:`~evaluator.pages.status.ReportDigest`)."""
    totals = audit_run(report.cases) if totals is None else totals
    return AuditView(
        checked=totals.checked,
        suspect=totals.suspect_count,
        cases=[
            (case_id, audit.message or "", href(case_id))
            for case_id, audit in totals.suspect[:SUSPECT_SHOWN]
        ],
    )

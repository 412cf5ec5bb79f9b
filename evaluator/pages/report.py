"""The HTML report of ``run``, ``gate`` and ``report`` (``--html FILE``): the summary, the
worst cases with their evidence, the label audit, and with a gate its rules and regressed
cases, as plain dataclasses the template only lays out.

Each case section is a :class:`~evaluator.pages.case.CaseView`, with the judge's panel when
the report was judged (``panels``: :func:`evaluator.pages.judge_panel.report_panels`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluator.models import CaseRecord
from evaluator.pages.audit import SUSPECT_SHOWN, AuditView, audit_view
from evaluator.pages.case import CaseView, case_view
from evaluator.pages.conversation import conversation_view
from evaluator.pages.formatting import Redact
from evaluator.pages.judge_panel import JudgePanelView
from evaluator.pages.metric_rows import MetricRow, metric_rows
from evaluator.pages.worst import worst_cases
from evaluator.redaction import redact_registered
from evaluator.report import RunReport, format_timestamp
from evaluator.scoring.labels import audit_run

__all__ = ["ReportView", "RuleView", "report_view"]

#: a report's judge panel of one case (None: not judged)
Panels = Callable[[CaseRecord], JudgePanelView | None]


@dataclass(frozen=True, slots=True)
class RuleView:
    status: str  # PASS, FAIL, n/a
    message: str


@dataclass(frozen=True, slots=True)
class ReportView:
    title: str
    subtitle: list[str]
    metrics: list[MetricRow]
    audit: AuditView
    errors_by_kind: list[tuple[str, int]]
    #: suspect-label cases not already shown above, with their evidence
    suspects: list[CaseView]
    worst: list[CaseView] = field(default_factory=list)
    #: with a gate: its verdict, rules and regressed cases
    verdict: str | None = None
    has_baseline: bool = False
    rules: list[RuleView] = field(default_factory=list)
    missing_ids: int = 0
    diagnosis: list[str] = field(default_factory=list)
    regressed: list[CaseView] = field(default_factory=list)
    regressed_total: int = 0
    improved_total: int = 0
    compared: int = 0


def _describe_report(label: str, report: RunReport, source: str) -> str:
    """One line naming a report: its golden set, target, K, size, run and time."""
    return (
        f"{label}: {source} ({report.dataset}, target {report.target}, K={report.k}, "
        f"{report.case_count} cases, run {report.run_id}, {format_timestamp(report.generated_at)})"
    )


def _no_panels(_record: CaseRecord) -> JudgePanelView | None:
    """A report not judged: no case has a judge panel."""
    return None


class _Sections:
    """The case sections of one report: each case's anchor, and its view made the one way
    (redacted, with its judge panel)."""

    def __init__(
        self,
        report: RunReport,
        redact: Redact,
        panels: Panels,
        baseline: RunReport | None = None,
    ) -> None:
        self.report = report
        self.redact = redact
        self.panels = panels
        self.by_id = {c.id: c for c in report.cases}
        #: a gate report's baseline cases, each turn's baseline run shown beside it
        self.baseline = None if baseline is None else {c.id: c for c in baseline.cases}
        self.anchors = {c.id: f"case-{i}" for i, c in enumerate(report.cases)}

    def href(self, case_id: str) -> str:
        """A case's section, else the report's cases."""
        return f"#{self.anchors.get(case_id, 'cases')}"

    def view(self, record: CaseRecord, changes: tuple[str, ...] = ()) -> CaseView:
        """The section of one case."""
        return case_view(
            record,
            k=self.report.k,
            redact=self.redact,
            anchor=self.anchors[record.id],
            changes=changes,
            judge=self.panels(record),
            conversation=conversation_view(
                record, self.report.cases, redact=self.redact, baseline=self.baseline
            ),
        )

    def suspects(self, shown: list[CaseView]) -> list[CaseView]:
        """The suspect-label cases not among ``shown``, each with its evidence."""
        seen = {c.id for c in shown}
        audit = audit_run(self.report.cases)
        return [
            self.view(self.by_id[case_id])
            for case_id, _ in audit.suspect[:SUSPECT_SHOWN]
            if case_id not in seen
        ]


def _run_view(report: RunReport, source: str, worst: int, sections: _Sections) -> ReportView:
    """A report on its own: its summary, worst cases and label audit."""
    shown = [sections.view(c) for c in worst_cases(report.cases, worst)]
    return ReportView(
        title=f"{report.dataset}: run {report.run_id}",
        subtitle=[sections.redact(_describe_report("report", report, source))],
        metrics=metric_rows(report.summary),
        audit=audit_view(report, sections.href),
        errors_by_kind=sorted(report.summary.errors_by_kind.items()),
        suspects=sections.suspects(shown),
        worst=shown,
    )


def _rule_views(gate: Any) -> list[RuleView]:
    """The gate's rules, failing first, then passing, then not applicable."""
    return [
        RuleView("FAIL" if not r.passed else ("PASS" if r.applicable else "n/a"), r.message)
        for r in sorted(gate.rules, key=lambda r: (r.passed, not r.applicable))
    ]


def _gate_view(
    report: RunReport,
    gate: Any,
    *,
    source: str,
    baseline_source: str | None,
    worst: int,
    sections: _Sections,
) -> ReportView:
    """A gate's report: its verdict, rules, summary against the baseline and the first
    ``worst`` regressed cases."""
    redact = sections.redact
    regressed = [
        sections.view(sections.by_id[change.id], change.changes)
        for change in gate.case_diff.regressed[:worst]
        if change.id in sections.by_id
    ]
    state = "passed" if gate.passed else "FAILED"
    return ReportView(
        title=f"gate {state}: {len(gate.failures)} of {len(gate.rules)} rules failed",
        subtitle=[
            redact(_describe_report("baseline", gate.baseline, baseline_source or "baseline")),
            redact(_describe_report("candidate", report, source)),
        ],
        verdict="PASS" if gate.passed else "FAIL",
        metrics=metric_rows(gate.candidate_summary, gate.baseline_summary),
        has_baseline=True,
        rules=_rule_views(gate),
        missing_ids=len(gate.missing_ids),
        diagnosis=[f"{f.signal}: look at {f.look_at}" for f in gate.diagnosis],
        regressed=regressed,
        regressed_total=len(gate.case_diff.regressed),
        improved_total=len(gate.case_diff.improved),
        compared=gate.case_diff.compared,
        audit=audit_view(report, sections.href),
        errors_by_kind=sorted(report.summary.errors_by_kind.items()),
        suspects=sections.suspects(regressed),
    )


def report_view(
    report: RunReport,
    *,
    source: str,
    gate: Any | None = None,
    baseline_source: str | None = None,
    worst: int = 10,
    redact: Redact = redact_registered,
    panels: Panels | None = None,
) -> ReportView:
    """The HTML report: the summary, and with a gate result its rules and regressed cases.

    ``gate`` is an :class:`evaluator.gate.GateResult` whose candidate is ``report``;
    ``panels`` gives each case section its judge panel (None: the report is not judged).
    """
    baseline = gate.baseline if gate is not None else None
    sections = _Sections(report, redact, panels or _no_panels, baseline)
    if gate is None:
        return _run_view(report, source, worst, sections)
    return _gate_view(
        report,
        gate,
        source=source,
        baseline_source=baseline_source,
        worst=worst,
        sections=sections,
    )

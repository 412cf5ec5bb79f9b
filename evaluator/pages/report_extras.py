"""What the HTML report adds to its summary and case sections: the by-tag breakdown (the
terminal's, baseline beside candidate), the worst cases with their reasons in words, the
regressed cases' baseline beside their candidate, and the filterable table of every case.

Built from a :class:`~evaluator.pages.report.ReportView` (which cases have a section, and
their anchors) and the same inputs, so the report view itself stays as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator.metrics import FLOAT_TOLERANCE, LOWER_IS_BETTER
from evaluator.pages.formatting import Redact
from evaluator.pages.report import ReportView
from evaluator.pages.report_table import ReportCaseTable, report_case_table
from evaluator.pages.sidebyside import BaselineDiff, baseline_diff
from evaluator.pages.worst import reasons, worst_cases
from evaluator.redaction import redact_registered
from evaluator.report import RunReport
from evaluator.summary import TAG_COLUMNS, Summary, tag_cells

__all__ = ["ReportExtras", "TagCell", "TagRow", "WorstLine", "report_extras", "tag_rows"]


@dataclass(frozen=True, slots=True)
class TagCell:
    label: str
    baseline: str | None
    value: str
    diff: str
    worse: bool = False
    better: bool = False


@dataclass(frozen=True, slots=True)
class TagRow:
    tag: str
    baseline_cases: int | None
    cases: int
    cells: list[TagCell]


def _two(value: float | None) -> str:
    # as the terminal's "by tag:" lines write them (display.format_tags)
    return "n/a" if value is None else f"{value:.2f}"


def _tag_cell(
    name: str, label: str, value: float | None, was: float | None, has_baseline: bool
) -> TagCell:
    """One metric of one tag, beside the baseline's (marked worse or better by which way it
    moved, lower-is-better metrics the other way round)."""
    diff = value - was if value is not None and was is not None else None
    sign = -1 if name in LOWER_IS_BETTER else 1
    moved = 0.0 if diff is None or abs(diff) < FLOAT_TOLERANCE else diff * sign
    return TagCell(
        label,
        _two(was) if has_baseline else None,
        _two(value),
        f"{diff:+.2f}" if diff is not None else "",
        worse=moved < 0,
        better=moved > 0,
    )


def tag_rows(summary: Summary, baseline: Summary | None = None) -> list[TagRow]:
    """The by-tag breakdown of :func:`evaluator.summary.tag_cells`, the candidate's tags in
    their order, each beside the baseline's slice of the same tag when there is one."""
    before = {row.tag: row for row in tag_cells(baseline)} if baseline is not None else {}
    rows = []
    for row in tag_cells(summary):
        base = before.get(row.tag)
        was_of = dict(base.cells) if base is not None else {}
        cells = [
            _tag_cell(name, label, value, was_of.get(label), baseline is not None)
            for (name, label), (_, value) in zip(TAG_COLUMNS, row.cells, strict=True)
        ]
        rows.append(
            TagRow(row.tag, base.case_count if base is not None else None, row.case_count, cells)
        )
    return rows


@dataclass(frozen=True, slots=True)
class WorstLine:
    id: str
    href: str
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReportExtras:
    tags: list[TagRow]
    tag_labels: list[str]
    has_baseline: bool
    worst: list[WorstLine]
    #: case id -> the baseline beside the candidate, for each regressed case with a section
    diffs: dict[str, BaselineDiff]
    table: ReportCaseTable


def report_extras(
    view: ReportView,
    report: RunReport,
    *,
    gate: Any | None = None,
    worst: int = 10,
    redact: Redact = redact_registered,
) -> ReportExtras:
    """``gate``: the :class:`evaluator.gate.GateResult` ``view`` was made with, if any."""
    sections = {c.id: c.anchor for c in (*view.regressed, *view.worst, *view.suspects)}

    def section(case_id: str) -> str | None:
        anchor = sections.get(case_id)
        return f"#{anchor}" if anchor is not None else None

    if gate is None:
        return ReportExtras(
            tags=tag_rows(report.summary),
            tag_labels=[label for _, label in TAG_COLUMNS],
            has_baseline=False,
            worst=_worst_lines(report, worst, section, redact),
            diffs={},
            table=report_case_table(report.cases, href=section, regressed={}, redact=redact),
        )
    return ReportExtras(
        tags=tag_rows(gate.candidate_summary, gate.baseline_summary),
        tag_labels=[label for _, label in TAG_COLUMNS],
        has_baseline=True,
        worst=_worst_lines(report, worst, section, redact),
        diffs=_baseline_diffs(view, report, gate, redact),
        table=report_case_table(
            report.cases,
            href=section,
            baseline={c.id: c for c in gate.baseline.cases},
            regressed={c.id: c.changes for c in gate.case_diff.regressed},
            improved={change.id for change in gate.case_diff.improved},
            redact=redact,
        ),
    )


def _worst_lines(
    report: RunReport, worst: int, section: Callable[[str], str | None], redact: Redact
) -> list[WorstLine]:
    """The ``worst`` worst cases with their reasons, each linked to its section, else to its
    row of the case table."""
    row_of = {c.id: i for i, c in enumerate(report.cases)}
    return [
        WorstLine(
            redact(c.id), section(c.id) or f"#row-{row_of[c.id]}", tuple(map(redact, reasons(c)))
        )
        for c in worst_cases(report.cases, worst)
    ]


def _baseline_diffs(
    view: ReportView, report: RunReport, gate: Any, redact: Redact
) -> dict[str, BaselineDiff]:
    """Each regressed case with a section: the baseline's run of it beside the candidate's."""
    baseline = {c.id: c for c in gate.baseline.cases}
    by_id = {c.id: c for c in report.cases}
    diffs: dict[str, BaselineDiff] = {}
    for c in view.regressed:
        before, after = baseline.get(c.id), by_id.get(c.id)
        if before is not None and after is not None:
            diffs[c.id] = baseline_diff(
                before,
                after,
                k=report.k,
                baseline_run=gate.baseline.run_id,
                worse=c.changes,
                redact=redact,
            )
    return diffs

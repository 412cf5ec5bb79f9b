"""Human-readable text for terminals: the run summary table and the worst cases."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from evaluator.border import printable
from evaluator.metrics import METRICS, MetricSpec, format_seconds
from evaluator.models import CaseError, CaseRecord, CaseScores
from evaluator.pages.worst import badness, worst_cases
from evaluator.report import RunReport
from evaluator.scoring.conversation import first_failing_turn
from evaluator.scoring.labels import AuditTotals, audit_run
from evaluator.summary import Summary, TagCells, position_cells, tag_cells

__all__ = [
    "badness",
    "format_conversations",
    "format_positions",
    "format_run",
    "format_summary",
    "format_tags",
    "worst_cases",
]


def _fmt(value: float | None, seconds: bool = False, count: bool = False) -> str:
    if value is None:
        return "n/a"
    if seconds:
        return format_seconds(value)
    return f"{value:,.0f}" if count else f"{value:.4f}"


#: the currency of a cost when the target's prices name none (PricesConfig's default)
DEFAULT_CURRENCY = "USD"
#: significant digits of a cost: a case costs fractions of a cent, a run a few units
_COST_DIGITS = 4


def format_cost(value: float, currency: str = DEFAULT_CURRENCY) -> str:
    """``0.0000312 USD``: significant digits, never 0.0000 nor an exponent."""
    digits = Decimal(f"{value:.{_COST_DIGITS}g}")
    return f"{digits:f} {currency}"


def _summary_value(spec: MetricSpec, raw: float | None, currency: str) -> str:
    """One metric's value as the summary writes it: a cost in its currency, a duration in
    its unit, a count whole, a ratio to four places."""
    if spec.name.startswith("cost_") and raw is not None:
        return format_cost(raw, currency)
    return _fmt(raw, seconds=spec.unit == "seconds", count=spec.unit == "count")


def format_summary(summary: Summary, currency: str = DEFAULT_CURRENCY) -> str:
    """The summary as an aligned two-column table, with the denominators shown; costs in
    ``currency`` (the target's prices)."""
    shown = [s for s in METRICS if not s.measured_only or summary.get(s.name) is not None]
    # the usual names fit 22 columns; a longer one measured (a conversation's) widens them
    width = max(22, *(len(spec.name) for spec in shown))
    lines = [f"{'metric':<{width}} {'value':>9}  cases"]
    for spec in shown:
        row = f"{spec.name:<{width}} {_summary_value(spec, summary.get(spec.name), currency):>9}"
        # the denominator beside each ratio; a percentile has none (it is over every case)
        cases = _cases(summary, spec.name) if spec.unit == "ratio" else None
        lines.append(row if cases is None else f"{row}  {cases}")
    for stage, p95 in summary.stage_p95_seconds.items():
        lines.append(f"{'  p95 ' + stage:<{width}} {_fmt(p95, True):>9}")
    return "\n".join(lines)


def format_tags(summary: Summary) -> list[str]:
    """One line per tag: how each slice of the golden set did (none when no case has tags)."""
    return _slice_lines("by tag:", tag_cells(summary), "cases")


def format_positions(summary: Summary) -> list[str]:
    """One line per turn position of a run's conversations: "turn 1 fine, follow-ups
    collapsed" at a glance (none without conversations)."""
    return _slice_lines("by turn position:", position_cells(summary), "turns")


def _slice_lines(title: str, rows: list[TagCells], unit: str) -> list[str]:
    if not rows:
        return []
    width = max(len(row.tag) for row in rows)
    lines = ["", title]
    for row in rows:
        cells = [f"{label} {value:.2f}" for label, value in row.cells if value is not None]
        lines.append(f"  {row.tag:<{width}}  {row.case_count:>4} {unit}  " + "  ".join(cells))
    return lines


def format_conversations(records: Sequence[CaseRecord]) -> list[str]:
    """How the run's conversations ended: how many had every turn right, and at which turn
    the others first went wrong (none without conversations)."""
    turns: dict[str, list[CaseScores | None]] = {}
    for record in records:
        if record.case.turn is not None:
            turns.setdefault(record.case.turn.conversation, []).append(record.scores)
    if not turns:
        return []
    first = Counter(first_failing_turn(scores) for scores in turns.values())
    right = first.pop(None, 0)
    line = f"conversations: {len(turns)}, {right} with every turn right"
    if first:
        line += "; first failing turn: " + ", ".join(
            f"turn {position} in {count}" for position, count in sorted(first.items())
        )
    return ["", line]


def _cases(summary: Summary, name: str) -> int:
    """How many cases a ratio averages over: its total's count, or every case for errors."""
    total = summary.totals.get(name)
    return summary.case_count if total is None else total.count


def _case_line(c: CaseRecord) -> str:
    s = c.outcome
    if isinstance(s, CaseError):
        what = f"error {s.kind}: {s.message}"
    else:
        answer = {True: "right", False: "wrong", None: "unscored"}[s.answer_correct]
        if s.recall_at_k is None or s.mrr is None:  # the target's ids are not mapped
            what = f"retrieval n/a answer {answer}"
        else:
            what = f"recall {s.recall_at_k:.2f} rr {s.mrr:.2f} answer {answer}"
        if c.case.unanswerable:
            what += " (unanswerable)"
    expected = ",".join(c.case.relevance) or "-"
    got = ",".join(c.ranked_ids[:5]) or "-"
    line = printable  # each field on its own: a newline inside one stays inside it
    return (
        f"  {line(c.id)}: {line(what)}\n      q: {line(c.case.question)}\n"
        f"      relevant: {line(expected)}  retrieved: {line(got)}"
    )


#: suspect labels listed in the terminal; a golden set whose labels mostly contradict the
#: evidence would otherwise print a line per case (the report keeps every one)
SUSPECT_SHOWN = 20


def format_run(
    report: RunReport,
    worst: int = 5,
    audit: AuditTotals | None = None,
    currency: str = DEFAULT_CURRENCY,
) -> str:
    """The whole terminal summary of a run (``audit``: its label audit, when known; the
    cases of a streamed run keep no texts to audit; ``currency``: of the target's prices)."""
    s = report.summary
    head = (
        f"{report.dataset} against {report.target}: {report.case_count} cases, "
        f"{s.scored_count} scored, {s.error_count} failed, K={report.k}, "
        f"{report.duration_seconds:.2f}s, config {report.config_hash}"
    )
    parts = [head, "", format_summary(s, currency)]
    parts += format_tags(s)
    parts += format_positions(s)
    parts += format_conversations(report.cases)
    if s.errors_by_kind:
        parts.append("errors: " + ", ".join(f"{k} {n}" for k, n in s.errors_by_kind.items()))
    if report.retrieval_only:
        parts.append("retrieval-only target: answer and citation metrics not scored")
    bad = worst_cases(report.cases, worst)
    if bad:
        parts += ["", f"worst {len(bad)} case(s):", *(_case_line(c) for c in bad)]
    parts += format_label_audit(audit or audit_run(report.cases))
    # ids, tags and questions come from the golden set and the target: a control character
    # in one must not drive the terminal nor start a line of its own
    return "\n".join(printable(line) for line in "\n".join(parts).split("\n"))


def format_label_audit(audit: AuditTotals) -> list[str]:
    """Lines on the labels that the run's own evidence contradicts (none when it checked
    none): the first SUSPECT_SHOWN suspect cases in golden-set order, then how many more."""
    if not audit.checked:
        return []
    head = f"label audit: {audit.suspect_count} suspect of {audit.checked} checked"
    lines = [
        "",
        head,
        *(
            f"  {printable(case_id)}: {printable(a.message or '')}"
            for case_id, a in audit.suspect[:SUSPECT_SHOWN]
        ),
    ]
    hidden = audit.suspect_count - SUSPECT_SHOWN
    if hidden > 0:
        lines.append(
            f"  ... and {hidden} more (every one in the report's label_audit.suspect_cases)"
        )
    return lines

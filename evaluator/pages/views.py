"""What the pages show, computed from reports: plain dataclasses the templates only lay out.

Every string that came from an endpoint (answers, evidence texts, ids, error messages,
stage names) passes through ``redact`` here, before it is cut into highlighted segments, so
a secret split by a highlight cannot slip through. Sizes are bounded here too: the
templates never loop over anything a target could make unbounded.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from evaluator.metrics import METRICS
from evaluator.models import CaseError, CaseRecord, Citation
from evaluator.pages.chart import Chart, Limit, hash_changes, trend_chart
from evaluator.pages.health import (
    DRIFT_METRIC,
    DRIFT_MIN_SCORED,
    Health,
    JobSignals,
    alert_limits,
    job_health,
)
from evaluator.pages.highlight import Segment, segments
from evaluator.pages.since import ChangeStart, change_start
from evaluator.pages.trend import TREND_METRICS, RunRow
from evaluator.pages.worst import worst_cases
from evaluator.redaction import redact_registered
from evaluator.report import RunReport, format_timestamp
from evaluator.scoring.answer import contains_fact, normalise
from evaluator.scoring.citation import resolve_citation
from evaluator.scoring.labels import AuditTotals, audit_record, audit_run, describe_fact
from evaluator.summary import QUALITY_METRICS, Summary

if TYPE_CHECKING:
    from evaluator.pages.judge_panel import JudgePanel

__all__ = [
    "CaseHistoryRow",
    "CaseView",
    "JobState",
    "JobView",
    "MetricRow",
    "Redact",
    "ReportDigest",
    "ReportView",
    "case_view",
    "job_view",
    "report_digest",
    "report_view",
]

Redact = Callable[[str], str]

#: characters of an answer shown; answers are capped upstream too, this bounds the page
ANSWER_SHOWN_CHARS = 8000
#: ranked items shown in a case view
RANKING_SHOWN = 20
#: citations shown in a case view
CITATIONS_SHOWN = 20
#: stage timings shown
STAGES_SHOWN = 20
#: worst cases per job on the status page
WORST_ON_STATUS = 5
#: suspect labels listed per job or report (all are counted)
SUSPECT_SHOWN = 20
#: runs drawn in a trend line
TREND_RUNS = 60
#: newly failing, recovered and flaky cases linked per job (all are counted)
CHANGED_SHOWN = 20

#: metrics where lower is better (a rise is a regression), from the registry
LOWER_IS_BETTER = frozenset(s.name for s in METRICS if s.lower_is_better)
#: each metric's unit, from the registry: how its numbers are written
_UNIT = {s.name: s.unit for s in METRICS}
#: quality rows on summaries: the ratios, then errors and latency
SUMMARY_METRICS: tuple[str, ...] = (*QUALITY_METRICS, "error_rate", "p50_seconds", "p95_seconds")


class CaseOutcomeRow(Protocol):
    """One past outcome of a case (the history store's ``CaseOutcome``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def finished_at(self) -> float: ...

    @property
    def answer(self) -> bool | None: ...

    @property
    def hit(self) -> bool | None: ...

    @property
    def mrr(self) -> float | None: ...

    @property
    def error_kind(self) -> str | None: ...


# --- numbers as people read them ----------------------------------------------------------


def fmt_value(metric: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    if _UNIT.get(metric) == "seconds":
        return fmt_seconds(value)
    return f"{value:.4f}"


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value < 0.001:
        return f"{value * 1e6:.0f}µs"
    if value < 1:
        return f"{value * 1000:.1f}ms"
    return f"{value:.2f}s"


def fmt_age(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.1f} days ago"


def fmt_diff(metric: str, diff: float | None) -> str:
    if diff is None:
        return ""
    if _UNIT.get(metric) == "seconds":
        return ("+" if diff >= 0 else "-") + fmt_seconds(abs(diff))
    return f"{diff:+.4f}"


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric of a summary, against the baseline when there is one."""

    name: str
    value: str
    count: int | None
    baseline: str | None = None
    diff: str = ""
    #: moved the wrong way against the baseline
    worse: bool = False
    better: bool = False


def metric_rows(summary: Summary, baseline: Summary | None = None) -> list[MetricRow]:
    rows = []
    for name in SUMMARY_METRICS:
        value = summary.get(name)
        total = summary.totals.get(name)
        count = total.count if total is not None else None
        if name == "error_rate":
            count = summary.case_count
        if baseline is None:
            rows.append(MetricRow(name, fmt_value(name, value), count))
            continue
        before = baseline.get(name)
        diff = None if value is None or before is None else value - before
        sign = -1 if name in LOWER_IS_BETTER else 1
        moved = 0.0 if diff is None or abs(diff) < 1e-9 else diff * sign
        rows.append(
            MetricRow(
                name,
                fmt_value(name, value),
                count,
                baseline=fmt_value(name, before),
                diff=fmt_diff(name, diff),
                worse=moved < 0,
                better=moved > 0,
            )
        )
    return rows


# --- the case view -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FactView:
    index: int
    text: str
    found: bool
    #: found by the scoring yet no span to mark (combining characters): said, not drawn
    unmarked: bool


@dataclass(frozen=True, slots=True)
class RankedView:
    rank: int
    id: str
    grade: int
    in_top_k: bool
    cited: bool
    text: list[Segment] | None
    cut: bool
    facts_in_text: list[int]


@dataclass(frozen=True, slots=True)
class CitationView:
    label: str
    resolves_to: str | None
    supported: bool


@dataclass(frozen=True, slots=True)
class CaseHistoryRow:
    run_id: str
    age: str
    outcome: str


@dataclass(frozen=True, slots=True)
class CaseView:
    id: str
    anchor: str
    question: str
    tags: tuple[str, ...]
    unanswerable: bool
    facts: list[FactView]
    missing_facts: list[str]
    answer: list[Segment] | None
    answer_cut: bool
    verdict: str
    refused: bool | None
    ranking: list[RankedView]
    ranking_more: int
    relevant_not_retrieved: list[str]
    citations: list[CitationView]
    stages: list[tuple[str, str]]
    latency: str
    attempts: int
    error: str | None
    scores: list[tuple[str, str]]
    suspect_label: str | None
    history: list[CaseHistoryRow] | None
    trace_id: str | None
    trace_url: str | None
    k: int
    changes: tuple[str, ...] = ()
    #: the judge's verdicts of this case and their human labels (None: report not judged);
    #: set by evaluator.pages.judge_panel, which reads the report's judge block
    judge: JudgePanel | None = None


def verdict_of(record: CaseRecord) -> str:
    """A case's verdict in words: the case view's badge and the case table's column."""
    s = record.scores
    if s is None:
        return "error"
    if s.answer_correct is None:
        return "not scored" if record.answer is None else "answer not checked"
    return "correct" if s.answer_correct else "incorrect"


def _citation_label(citation: Citation) -> str:
    return f"[{citation}]" if isinstance(citation, int) else str(citation)


#: the per-case scores shown, from the registry (each metric's CaseScores field, once), then
#: the citation check, which is no metric of its own
_CASE_SCORES: tuple[str, ...] = (
    *dict.fromkeys(s.score for s in METRICS if s.score is not None),
    "citation_valid",
)


def _scores(record: CaseRecord) -> list[tuple[str, str]]:
    s = record.scores
    if s is None:
        return []
    out: list[tuple[str, str]] = []
    for name in _CASE_SCORES:
        value = getattr(s, name, None)
        if isinstance(value, bool):
            out.append((name, "yes" if value else "no"))
        elif isinstance(value, int | float):
            out.append((name, f"{value:.2f}"))
    return out


def case_view(
    record: CaseRecord,
    *,
    k: int,
    redact: Redact = redact_registered,
    anchor: str = "case",
    history: Sequence[CaseOutcomeRow] | None = None,
    trace_url: str | None = None,
    now: float | None = None,
    changes: tuple[str, ...] = (),
) -> CaseView:
    """Everything the case view shows for one case of a report."""
    facts = record.case.expected_facts
    answer_text = redact(record.answer) if record.answer is not None else None
    answer_segments: list[Segment] | None = None
    fact_views: list[FactView] = []
    if answer_text is not None:
        shown = answer_text[:ANSWER_SHOWN_CHARS]
        answer_segments = segments(shown, facts)
        marked = {s.fact for s in answer_segments if s.fact is not None}
        folded = normalise(answer_text)
        for i, fact in enumerate(facts):
            found = contains_fact(folded, fact)
            fact_views.append(FactView(i, describe_fact(fact), found, found and i not in marked))
    else:
        fact_views = [FactView(i, describe_fact(f), False, False) for i, f in enumerate(facts)]
    missing = [f.text for f in fact_views if not f.found] if answer_text is not None else []

    cited = cited_ids(record)
    ranking: list[RankedView] = []
    for rank, doc_id in enumerate(record.ranked_ids[:RANKING_SHOWN], start=1):
        text = record.texts.get(doc_id)
        cut_segments = segments(redact(text), facts) if text else None
        ranking.append(
            RankedView(
                rank=rank,
                id=redact(doc_id),
                grade=record.case.relevance.get(doc_id, 0),
                in_top_k=rank <= k,
                cited=doc_id in cited,
                text=cut_segments,
                cut=doc_id in record.cut_texts,
                facts_in_text=sorted({s.fact for s in cut_segments or () if s.fact is not None}),
            )
        )
    retrieved = set(record.ranked_ids)
    citations = []
    for citation in record.citations[:CITATIONS_SHOWN]:
        target = resolve_citation(citation, record.ranked_ids)
        citations.append(
            CitationView(
                label=redact(_citation_label(citation)),
                resolves_to=redact(target) if target is not None else None,
                supported=target is not None and record.case.relevance.get(target, 0) >= 1,
            )
        )
    stages = [
        (redact(name), fmt_seconds(seconds))
        for name, seconds in list(record.stage_seconds.items())[:STAGES_SHOWN]
    ]
    audit = audit_record(record)
    trace_id = getattr(record, "trace_id", None)
    trace_id = redact(trace_id) if isinstance(trace_id, str) and trace_id else None
    now = time.time() if now is None else now
    return CaseView(
        id=record.id,
        anchor=anchor,
        question=record.case.question,
        tags=record.case.tags,
        unanswerable=record.case.unanswerable,
        facts=fact_views,
        missing_facts=missing,
        answer=answer_segments,
        answer_cut=answer_text is not None and len(answer_text) > ANSWER_SHOWN_CHARS,
        verdict=verdict_of(record),
        refused=record.scores.refused if record.scores is not None else None,
        ranking=ranking,
        ranking_more=max(len(record.ranked_ids) - RANKING_SHOWN, 0),
        relevant_not_retrieved=[
            i for i, g in record.case.relevance.items() if g >= 1 and i not in retrieved
        ],
        citations=citations,
        stages=stages,
        latency=fmt_seconds(record.latency_seconds),
        attempts=record.attempts,
        error=error_text(record, redact),
        scores=_scores(record),
        suspect_label=audit.message,
        history=(
            None
            if history is None
            else [
                CaseHistoryRow(h.run_id, fmt_age(now - h.finished_at), _history_outcome(h))
                for h in history
            ]
        ),
        trace_id=trace_id,
        trace_url=(trace_url.replace("{trace_id}", trace_id) if trace_url and trace_id else None),
        k=k,
        changes=changes,
    )


def cited_ids(record: CaseRecord) -> set[str]:
    """The ids the shown citations point at."""
    targets = (resolve_citation(c, record.ranked_ids) for c in record.citations[:CITATIONS_SHOWN])
    return {t for t in targets if t is not None}


def error_text(record: CaseRecord, redact: Redact) -> str | None:
    e = record.error
    return f"{e.kind}: {redact(e.message)}" if e is not None else None


def _history_outcome(row: CaseOutcomeRow) -> str:
    if row.error_kind:
        return f"error {row.error_kind}"
    parts = []
    if row.answer is not None:
        parts.append("answer correct" if row.answer else "answer incorrect")
    if row.hit is not None:
        parts.append("relevant retrieved" if row.hit else "relevant missed")
    if row.mrr is not None:
        parts.append(f"RR {row.mrr:.2f}")
    return ", ".join(parts) or "scored"


# --- worst cases and the label audit ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorstRow:
    id: str
    question: str
    what: str
    href: str


def describe_case(record: CaseRecord, redact: Redact = redact_registered) -> str:
    s = record.outcome
    if isinstance(s, CaseError):
        return f"error {s.kind}: {redact(s.message)}"[:300]
    answer = {True: "answer correct", False: "answer incorrect", None: "answer not checked"}
    if s.recall_at_k is None or s.mrr is None:  # the target's ids are not mapped
        return f"retrieval n/a, {answer[s.answer_correct]}"
    return f"recall {s.recall_at_k:.2f}, RR {s.mrr:.2f}, {answer[s.answer_correct]}"


@dataclass(frozen=True, slots=True)
class AuditView:
    checked: int
    suspect: int
    cases: list[tuple[str, str, str]]  # (case id, message, href)


def audit_view(
    report: RunReport, href: Callable[[str], str], totals: AuditTotals | None = None
) -> AuditView:
    """``totals``: the report's label audit when already computed (a :class:`ReportDigest`)."""
    totals = audit_run(report.cases) if totals is None else totals
    return AuditView(
        checked=totals.checked,
        suspect=totals.suspect_count,
        cases=[
            (case_id, audit.message or "", href(case_id))
            for case_id, audit in totals.suspect[:SUSPECT_SHOWN]
        ],
    )


# --- the status page -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReportDigest:
    """What the status page reads from every case of a report, computed once per report: a
    daemon keeps it beside the run (its pages then cost the same for 100 cases or 10,000)."""

    report: RunReport
    audit: AuditTotals
    worst: tuple[CaseRecord, ...]


def report_digest(report: RunReport) -> ReportDigest:
    return ReportDigest(
        report, audit_run(report.cases), tuple(worst_cases(report.cases, WORST_ON_STATUS))
    )


@dataclass(frozen=True, slots=True)
class JobState:
    """What the daemon knows of one job, handed to :func:`job_view`."""

    target: str
    dataset: str
    report: RunReport | None
    outcome: str | None
    finished_at: float | None
    baseline: RunReport | None = None
    gate_passing: bool | None = None
    gate_failing: tuple[str, ...] = ()
    runs: Sequence[RunRow] = ()
    schedule: str = ""
    #: what the health reads (None: computed from the fields above, without history)
    signals: JobSignals | None = None
    #: case ids by history class, from the latest history verdict
    newly_failing: Sequence[str] = ()
    recovered: Sequence[str] = ()
    flaky: Sequence[str] = ()
    #: the report's audit and worst cases when already computed (else computed here)
    digest: ReportDigest | None = None
    #: the gate rules' lines against the baseline (the daemon draws them from its rules)
    gate_limits: Sequence[Limit] = ()
    #: each newly failing case's verdicts over history's window (oldest first), and how many
    #: complete runs that window holds: where each began failing
    newly_failing_verdicts: Mapping[str, Sequence[bool | None]] = field(default_factory=dict)
    window_runs: int = 0


@dataclass(frozen=True, slots=True)
class ChangedCases:
    """One class of changed cases: how many, and the first :data:`CHANGED_SHOWN` linked."""

    label: str
    total: int
    cases: list[tuple[str, str]]  # (case id, href)


@dataclass(frozen=True, slots=True)
class TrendView:
    metric: str
    chart: Chart
    last: str
    low: str
    high: str


@dataclass(frozen=True, slots=True)
class BeganView:
    """The first run where the change the job shows began, in words, linked to its mark on
    the trend charts."""

    run_id: str
    when: str
    ago: str
    onsets: list[str]
    href: str


@dataclass(frozen=True, slots=True)
class JobView:
    target: str
    dataset: str
    anchor: str
    schedule: str
    outcome: str
    age: str
    duration: str
    run_id: str | None
    case_count: int
    scored: int
    failed: int
    errors_by_kind: list[tuple[str, int]]
    metrics: list[MetricRow]
    has_baseline: bool
    gate_passing: bool | None
    gate_failing: tuple[str, ...]
    trends: list[TrendView]
    worst: list[WorstRow]
    audit: AuditView | None
    report_href: str
    health: Health = field(default_factory=lambda: job_health(JobSignals(outcome=None)))
    changed: list[ChangedCases] = field(default_factory=list)
    #: the last run is not complete: what /metrics still exports (the last complete run's)
    exported: ExportedNote | None = None
    #: the history's drift verdict per check, and its window in words
    drift: list[DriftRow] = field(default_factory=list)
    drift_window: str = ""
    #: the job's case table (every case, filtered and sorted); "" where none is served
    cases_href: str = ""
    #: where the change began (None: nothing holds)
    began: BeganView | None = None
    #: configuration and golden-set changes within the trend window: (kind, words)
    config_changes: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DriftRow:
    check: str
    metric: str
    before: str
    after: str
    shift: str
    significant: bool


def drift_rows(signals: JobSignals) -> tuple[list[DriftRow], str]:
    """Each drift check with its levels, and the window (current runs against the ones
    before them) the test compared."""
    rows = [
        DriftRow(
            d.check,
            DRIFT_METRIC.get(d.check, d.check),
            fmt_value("", d.before),
            fmt_value("", d.after),
            f"{d.shift:+.3f}" if d.shift is not None else "n/a",
            d.significant,
        )
        for d in signals.drift
    ]
    window = (
        f"the last {signals.drift_current_runs} complete runs against the "
        f"{signals.drift_reference_runs} before them"
        if rows
        else ""
    )
    return rows, window


@dataclass(frozen=True, slots=True)
class ExportedNote:
    """Where the page's figures (the last run's) differ from what ``/metrics`` exports."""

    age: str
    #: (metric, this run's value, the exported value)
    rows: list[tuple[str, str, str]]


def exported_note(state: JobState, now: float) -> ExportedNote | None:
    """The quality gauges keep the last complete run's values (docs/daemon.md): after an
    incomplete run the page says so and shows both, from the trend source's run rows."""
    if state.report is None or state.outcome == "complete":
        return None
    complete = next((r for r in state.runs if r.outcome == "complete"), None)
    if complete is None:
        return ExportedNote("no complete run yet", [])
    summary = state.report.summary
    rows = [
        (m, fmt_value(m, summary.get(m)), fmt_value(m, complete.metrics.get(m)))
        for m in TREND_METRICS
        # the quality ratio gauges hold; error ratio and latency follow every run
        if _UNIT.get(m) == "ratio" and m != "error_rate" and complete.metrics.get(m) is not None
    ]
    return ExportedNote(fmt_age(now - complete.finished_at), rows)


def trend_views(
    runs: Sequence[RunRow], limits: Sequence[Limit] = (), began: str | None = None
) -> list[TrendView]:
    ordered = list(runs[:TREND_RUNS])[::-1]  # the source gives newest first
    out = []
    for metric in TREND_METRICS:
        ratio = _UNIT.get(metric) == "ratio"
        # ratios on 0..1 so a flat 0.9 is no cliff; error rates and seconds from 0 to their
        # own top (or the highest line drawn)
        bounded = ratio and metric != "error_rate"
        chart = trend_chart(
            metric,
            ordered,
            fmt=functools.partial(fmt_value, metric),
            limits=limits,
            floor=0.0,
            ceiling=1.0 if bounded else None,
            began=began,
        )
        if chart is None:
            continue
        out.append(
            TrendView(
                metric,
                chart,
                fmt_value(metric, chart.last),
                fmt_value(metric, chart.low),
                fmt_value(metric, chart.high),
            )
        )
    return out


def began_view(start: ChangeStart | None, href: str) -> BeganView | None:
    if start is None:
        return None
    when = format_timestamp_utc(start.finished_at)
    ago = (
        "the latest run"
        if start.runs_ago == 0
        else f"{start.runs_ago} run{'s' if start.runs_ago != 1 else ''} ago"
    )
    onsets = [
        o.what if o.run_id == start.run_id else f"{o.what}, since run {o.run_id}"
        for o in start.onsets
    ]
    return BeganView(start.run_id, when, ago, onsets, href)


def format_timestamp_utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def job_view(
    state: JobState,
    *,
    case_href: Callable[[str, str, str], str],
    report_href: str,
    anchor: str,
    now: float | None = None,
    redact: Redact = redact_registered,
    cases_href: str = "",
) -> JobView:
    """One job's section of the status page."""
    now = time.time() if now is None else now
    report = state.report
    summary = report.summary if report is not None else None
    baseline = state.baseline.summary if state.baseline is not None else None

    def href(case_id: str) -> str:
        return case_href(state.target, state.dataset, case_id)

    # the health's inputs from what the state holds (history's, when the daemon has one)
    signals = state.signals
    if signals is None:
        signals = JobSignals(
            outcome=state.outcome,
            scored_cases=summary.scored_count if summary is not None else 0,
            error_ratio=summary.error_rate if summary is not None else None,
            gate_passing=state.gate_passing,
            gate_failing=state.gate_failing,
            newly_failing=len(state.newly_failing),
        )
    drift = drift_rows(signals)
    # every line the trend charts draw: the baseline's values, the gate's limits against
    # them, and the shipped alerts' thresholds
    limits = [
        *(
            Limit(metric, value, "baseline", "the baseline")
            for metric in TREND_METRICS
            if baseline is not None and (value := baseline.get(metric)) is not None
        ),
        *state.gate_limits,
        *alert_limits(),
    ]
    ordered = list(state.runs[:TREND_RUNS])[::-1]
    start = change_start(
        ordered,
        limits=limits,
        newly_failing=state.newly_failing_verdicts,
        window_runs=state.window_runs,
        # the drift counts on the page's health only over enough scored cases (as the alerts)
        drifting=[
            DRIFT_METRIC.get(d.check, d.check)
            for d in signals.drift
            if d.significant and signals.scored_cases >= DRIFT_MIN_SCORED
        ],
        drift_runs=signals.drift_current_runs,
    )
    digest = state.digest
    if report is not None and (digest is None or digest.report is not report):
        digest = report_digest(report)
    return JobView(
        target=redact(state.target),
        dataset=state.dataset,
        anchor=anchor,
        schedule=state.schedule,
        outcome=state.outcome or "no run yet",
        age=fmt_age(now - state.finished_at) if state.finished_at is not None else "never",
        duration=fmt_seconds(report.duration_seconds) if report is not None else "n/a",
        run_id=report.run_id if report is not None else None,
        case_count=summary.case_count if summary is not None else 0,
        scored=summary.scored_count if summary is not None else 0,
        failed=summary.error_count if summary is not None else 0,
        errors_by_kind=sorted(summary.errors_by_kind.items()) if summary is not None else [],
        metrics=metric_rows(summary, baseline) if summary is not None else [],
        has_baseline=baseline is not None,
        gate_passing=state.gate_passing,
        gate_failing=state.gate_failing,
        trends=trend_views(state.runs, limits, start.run_id if start is not None else None),
        began=began_view(start, f"#{anchor}-trends"),
        config_changes=[
            (
                kind,
                f"{label} at run {ordered[i].run_id} "
                f"({format_timestamp_utc(ordered[i].finished_at)})",
            )
            for i, kind, label in hash_changes(ordered)
        ],
        worst=[
            WorstRow(r.id, r.case.question, describe_case(r, redact), href(r.id))
            for r in (digest.worst if report is not None and digest is not None else ())
        ],
        audit=(
            audit_view(report, href, digest.audit)
            if report is not None and digest is not None
            else None
        ),
        report_href=report_href,
        health=job_health(signals),
        drift=drift[0],
        drift_window=drift[1],
        exported=exported_note(state, now),
        cases_href=cases_href,
        changed=[
            ChangedCases(label, len(ids), [(redact(i), href(i)) for i in ids[:CHANGED_SHOWN]])
            for label, ids in (
                ("newly failing", state.newly_failing),
                ("recovered", state.recovered),
                ("flaky", state.flaky),
            )
            if ids
        ],
    )


# --- HTML reports (run, gate, report) ------------------------------------------------------


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
    return (
        f"{label}: {source} ({report.dataset}, target {report.target}, K={report.k}, "
        f"{report.case_count} cases, run {report.run_id}, {format_timestamp(report.generated_at)})"
    )


def report_view(
    report: RunReport,
    *,
    source: str,
    gate: Any | None = None,
    baseline_source: str | None = None,
    worst: int = 10,
    redact: Redact = redact_registered,
) -> ReportView:
    """The HTML report: the summary, and with a gate result its rules and regressed cases.

    ``gate`` is an :class:`evaluator.gate.GateResult` whose candidate is ``report``.
    """

    def href(case_id: str) -> str:
        return f"#{anchors.get(case_id, 'cases')}"

    anchors = {c.id: f"case-{i}" for i, c in enumerate(report.cases)}
    subtitle = [redact(_describe_report("report", report, source))]

    def suspects(shown: list[CaseView]) -> list[CaseView]:
        seen = {c.id for c in shown}
        audit = audit_run(report.cases)
        return [
            case_view(by_id[case_id], k=report.k, redact=redact, anchor=anchors[case_id])
            for case_id, _ in audit.suspect[:SUSPECT_SHOWN]
            if case_id not in seen
        ]

    by_id = {c.id: c for c in report.cases}
    if gate is None:
        bad = worst_cases(report.cases, worst)
        shown = [case_view(c, k=report.k, redact=redact, anchor=anchors[c.id]) for c in bad]
        return ReportView(
            title=f"{report.dataset}: run {report.run_id}",
            subtitle=subtitle,
            metrics=metric_rows(report.summary),
            audit=audit_view(report, href),
            errors_by_kind=sorted(report.summary.errors_by_kind.items()),
            suspects=suspects(shown),
            worst=shown,
        )
    subtitle = [
        redact(_describe_report("baseline", gate.baseline, baseline_source or "baseline")),
        redact(_describe_report("candidate", report, source)),
    ]
    rules = [
        RuleView("FAIL" if not r.passed else ("PASS" if r.applicable else "n/a"), r.message)
        for r in sorted(gate.rules, key=lambda r: (r.passed, not r.applicable))
    ]
    regressed = [
        case_view(
            by_id[change.id],
            k=report.k,
            redact=redact,
            anchor=anchors[change.id],
            changes=change.changes,
        )
        for change in gate.case_diff.regressed[:worst]
        if change.id in by_id
    ]
    state = "passed" if gate.passed else "FAILED"
    return ReportView(
        title=f"gate {state}: {len(gate.failures)} of {len(gate.rules)} rules failed",
        subtitle=subtitle,
        verdict="PASS" if gate.passed else "FAIL",
        metrics=metric_rows(gate.candidate_summary, gate.baseline_summary),
        has_baseline=True,
        rules=rules,
        missing_ids=len(gate.missing_ids),
        diagnosis=[f"{f.signal}: look at {f.look_at}" for f in gate.diagnosis],
        regressed=regressed,
        regressed_total=len(gate.case_diff.regressed),
        improved_total=len(gate.case_diff.improved),
        compared=gate.case_diff.compared,
        audit=audit_view(report, href),
        errors_by_kind=sorted(report.summary.errors_by_kind.items()),
        suspects=suspects(regressed),
    )

"""The status page: one section per job, computed from what the daemon knows of it (a
:class:`JobPage`) as plain dataclasses the template only lays out.

:func:`job_view` reads its steps in order: the health's inputs (:func:`signals_of`), the
lines the trend charts draw (:func:`chart_limits`), where the change began, the report's
digest, then the section's figures. Every string that came from an endpoint passes through
``redact`` here, and every list is bounded (the first :data:`CHANGED_SHOWN` changed cases,
:data:`WORST_ON_STATUS` worst, :data:`TREND_RUNS` runs drawn).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluator.models import CaseError, CaseRecord
from evaluator.pages.audit import AuditView, audit_view
from evaluator.pages.chart import Chart, Limit, hash_changes, trend_chart
from evaluator.pages.formatting import (
    UNIT,
    Redact,
    fmt_age,
    fmt_seconds,
    fmt_value,
    format_timestamp_utc,
)
from evaluator.pages.health import (
    DRIFT_METRIC,
    DRIFT_MIN_SCORED,
    Health,
    JobSignals,
    alert_limits,
    job_health,
)
from evaluator.pages.metric_rows import MetricRow, metric_rows
from evaluator.pages.since import ChangeStart, change_start
from evaluator.pages.slo_view import SloState, SloView, slo_view
from evaluator.pages.trend import TREND_METRICS, TrendRun
from evaluator.pages.worst import worst_cases
from evaluator.redaction import redact_registered
from evaluator.report import RunReport
from evaluator.scoring.labels import AuditTotals, audit_run
from evaluator.summary import Summary

__all__ = [
    "CHANGED_SHOWN",
    "TREND_RUNS",
    "WORST_ON_STATUS",
    "JobPage",
    "JobView",
    "ReportDigest",
    "chart_limits",
    "job_view",
    "report_digest",
    "signals_of",
]

#: worst cases per job on the status page
WORST_ON_STATUS = 5
#: runs drawn in a trend line
TREND_RUNS = 60
#: newly failing, recovered and flaky cases linked per job (all are counted)
CHANGED_SHOWN = 20


@dataclass(frozen=True, slots=True)
class WorstRow:
    id: str
    question: str
    what: str
    href: str


def describe_case(record: CaseRecord, redact: Redact = redact_registered) -> str:
    """Why a worst case is listed, in a few words: its error, or its retrieval and answer."""
    s = record.outcome
    if isinstance(s, CaseError):
        return f"error {s.kind}: {redact(s.message)}"[:300]
    answer = {True: "answer correct", False: "answer incorrect", None: "answer not checked"}
    if s.recall_at_k is None or s.mrr is None:  # the target's ids are not mapped
        return f"retrieval n/a, {answer[s.answer_correct]}"
    return f"recall {s.recall_at_k:.2f}, RR {s.mrr:.2f}, {answer[s.answer_correct]}"


@dataclass(frozen=True, slots=True)
class ReportDigest:
    """What the status page reads from every case of a report, computed once per report: a
    daemon keeps it beside the run (its pages then cost the same for 100 cases or 10,000)."""

    report: RunReport
    audit: AuditTotals
    worst: tuple[CaseRecord, ...]


def report_digest(report: RunReport) -> ReportDigest:
    """The label audit and the worst cases of ``report``."""
    return ReportDigest(
        report, audit_run(report.cases), tuple(worst_cases(report.cases, WORST_ON_STATUS))
    )


@dataclass(frozen=True, slots=True)
class JobPage:
    """What the daemon knows of one job, handed to :func:`job_view`."""

    target: str
    dataset: str
    report: RunReport | None
    outcome: str | None
    finished_at: float | None
    baseline: RunReport | None = None
    gate_passing: bool | None = None
    gate_failing: tuple[str, ...] = ()
    runs: Sequence[TrendRun] = ()
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
    #: the SLOs counting the job
    slos: Sequence[SloState] = ()


@dataclass(frozen=True, slots=True)
class ChangedCases:
    """One class of changed cases: how many, and the first :data:`CHANGED_SHOWN` linked."""

    label: str
    total: int
    cases: list[tuple[str, str]]  # (case id, href)
    #: the job's case table showing this class: where the ones past the shown are ("": none)
    more_href: str = ""


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
class DriftRow:
    check: str
    metric: str
    before: str
    after: str
    shift: str
    significant: bool


@dataclass(frozen=True, slots=True)
class ExportedNote:
    """Where the page's figures (the last run's) differ from what ``/metrics`` exports."""

    age: str
    #: (metric, this run's value, the exported value)
    rows: list[tuple[str, str, str]]


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
    #: each SLO counting the job: its budget left and burn rate
    slos: list[SloView] = field(default_factory=list)


# --- the steps of a job's section --------------------------------------------------------


def signals_of(state: JobPage) -> JobSignals:
    """What the health reads: history's signals when the daemon has them, else the last
    run's outcome, error ratio and gate verdict alone."""
    if state.signals is not None:
        return state.signals
    summary = state.report.summary if state.report is not None else None
    return JobSignals(
        outcome=state.outcome,
        scored_cases=summary.scored_count if summary is not None else 0,
        error_ratio=summary.error_rate if summary is not None else None,
        gate_passing=state.gate_passing,
        gate_failing=state.gate_failing,
        newly_failing=len(state.newly_failing),
        has_baseline=state.baseline is not None,
    )


def chart_limits(state: JobPage) -> list[Limit]:
    """Every line the trend charts draw: the baseline's values, the gate's limits against
    them, and the shipped alerts' thresholds."""
    baseline = state.baseline.summary if state.baseline is not None else None
    return [
        *(
            Limit(metric, value, "baseline", "the baseline")
            for metric in TREND_METRICS
            if baseline is not None and (value := baseline.get(metric)) is not None
        ),
        *state.gate_limits,
        *alert_limits(),
    ]


def _began(
    state: JobPage, ordered: Sequence[TrendRun], limits: Sequence[Limit], signals: JobSignals
) -> ChangeStart | None:
    """Where the change the job shows began, over the drawn runs (oldest first)."""
    return change_start(
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


def _digest_of(state: JobPage) -> ReportDigest | None:
    """The last report's digest: the daemon's when it is of this report, else made here."""
    report = state.report
    if report is None:
        return None
    digest = state.digest
    return digest if digest is not None and digest.report is report else report_digest(report)


@dataclass(frozen=True, slots=True)
class _RunFigures:
    """The last run's figures on the job's section (a job without a run has none)."""

    duration: str = "n/a"
    run_id: str | None = None
    case_count: int = 0
    scored: int = 0
    failed: int = 0
    errors_by_kind: list[tuple[str, int]] = field(default_factory=list)
    metrics: list[MetricRow] = field(default_factory=list)


def _run_figures(report: RunReport | None, baseline: Summary | None) -> _RunFigures:
    """The last run's duration, counts, error kinds and metrics against the baseline."""
    if report is None:
        return _RunFigures()
    summary = report.summary
    return _RunFigures(
        duration=fmt_seconds(report.duration_seconds),
        run_id=report.run_id,
        case_count=summary.case_count,
        scored=summary.scored_count,
        failed=summary.error_count,
        errors_by_kind=sorted(summary.errors_by_kind.items()),
        metrics=metric_rows(summary, baseline),
    )


def _worst_rows(
    digest: ReportDigest | None, redact: Redact, href: Callable[[str], str]
) -> list[WorstRow]:
    """The digest's worst cases, each with why in words."""
    worst = digest.worst if digest is not None else ()
    return [WorstRow(r.id, r.case.question, describe_case(r, redact), href(r.id)) for r in worst]


def _changed_cases(
    state: JobPage, redact: Redact, href: Callable[[str], str], cases_href: str = ""
) -> list[ChangedCases]:
    """The newly failing, recovered and flaky cases (classes with none left out), each class
    linking the job's case table showing it (its ``show`` value) when one is served."""
    return [
        ChangedCases(
            label,
            len(ids),
            [(redact(i), href(i)) for i in ids[:CHANGED_SHOWN]],
            f"{cases_href}&show={show}" if cases_href and len(ids) > CHANGED_SHOWN else "",
        )
        for label, show, ids in (
            ("newly failing", "newly_failing", state.newly_failing),
            ("recovered", "recovered", state.recovered),
            ("flaky", "flaky", state.flaky),
        )
        if ids
    ]


def _config_changes(ordered: Sequence[TrendRun]) -> list[tuple[str, str]]:
    """Configuration and golden-set changes within the drawn runs, in words."""
    return [
        (
            kind,
            f"{label} at run {ordered[i].run_id} ({format_timestamp_utc(ordered[i].finished_at)})",
        )
        for i, kind, label in hash_changes(ordered)
    ]


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


def exported_note(state: JobPage, now: float) -> ExportedNote | None:
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
        if UNIT.get(m) == "ratio" and m != "error_rate" and complete.metrics.get(m) is not None
    ]
    return ExportedNote(fmt_age(now - complete.finished_at), rows)


def trend_views(
    runs: Sequence[TrendRun], limits: Sequence[Limit] = (), began: str | None = None
) -> list[TrendView]:
    """One chart per trend metric with values in the last :data:`TREND_RUNS` runs."""
    ordered = list(runs[:TREND_RUNS])[::-1]  # the source gives newest first
    out = []
    for metric in TREND_METRICS:
        ratio = UNIT.get(metric) == "ratio"
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
    """Where the change began, in words (None: nothing holds)."""
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


def job_view(
    state: JobPage,
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

    def href(case_id: str) -> str:
        return case_href(state.target, state.dataset, case_id)

    baseline = state.baseline.summary if state.baseline is not None else None
    signals = signals_of(state)
    limits = chart_limits(state)
    ordered = list(state.runs[:TREND_RUNS])[::-1]
    start = _began(state, ordered, limits, signals)
    digest = _digest_of(state)
    figures = _run_figures(state.report, baseline)
    drift, drift_window = drift_rows(signals)
    return JobView(
        target=redact(state.target),
        dataset=state.dataset,
        anchor=anchor,
        schedule=state.schedule,
        outcome=state.outcome or "no run yet",
        age=fmt_age(now - state.finished_at) if state.finished_at is not None else "never",
        duration=figures.duration,
        run_id=figures.run_id,
        case_count=figures.case_count,
        scored=figures.scored,
        failed=figures.failed,
        errors_by_kind=figures.errors_by_kind,
        metrics=figures.metrics,
        has_baseline=baseline is not None,
        gate_passing=state.gate_passing,
        gate_failing=state.gate_failing,
        trends=trend_views(state.runs, limits, start.run_id if start is not None else None),
        began=began_view(start, f"#{anchor}-trends"),
        config_changes=_config_changes(ordered),
        worst=_worst_rows(digest, redact, href),
        audit=audit_view(digest.report, href, digest.audit) if digest is not None else None,
        report_href=report_href,
        health=job_health(signals),
        drift=drift,
        drift_window=drift_window,
        exported=exported_note(state, now),
        cases_href=cases_href,
        changed=_changed_cases(state, redact, href, cases_href),
        slos=[slo_view(slo) for slo in state.slos],
    )

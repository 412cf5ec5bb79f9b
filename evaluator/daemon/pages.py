"""The daemon's human pages: the status page at ``/``, each job's case table at
``/case-table`` and a case view at ``/case``.

Both are rendered on the server (no script at all: the Content-Security-Policy forbids it),
from snapshots of each job's last run; rendering runs in a worker thread so the event loop
keeps timing the cases in flight. What they show is bounded whatever the jobs hold (see
:mod:`evaluator.pages.status` and :mod:`evaluator.pages.case`), and every
endpoint-supplied string is redacted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import urlencode

from aiohttp import web

from evaluator.config.jobs import JobConfig
from evaluator.daemon.baseline import BaselineGate, GateVerdict
from evaluator.daemon.job import JobRunner, Rejection
from evaluator.daemon.publish import JobState
from evaluator.daemon.slo import TrackedSlo
from evaluator.errors import GateError, PageQueryError
from evaluator.gate.compare import align, diff_cases, record_moves
from evaluator.history.job import JobHistory
from evaluator.history.stability import Stability
from evaluator.models import CaseRecord
from evaluator.pages.case import CaseOutcomeRow, case_view
from evaluator.pages.cases import (
    STABILITY_BADGE,
    STABILITY_LABELS,
    CaseTable,
    case_table,
    parse_query,
    table_view,
)
from evaluator.pages.chart import Limit
from evaluator.pages.conversation import conversation_view
from evaluator.pages.formatting import Redact, fmt_age
from evaluator.pages.health import DRIFT_METRIC, DriftSignal, JobSignals
from evaluator.pages.judge_panel import KnownLabels, read_known_labels, report_panels
from evaluator.pages.render import PageRenderer
from evaluator.pages.runbook import RUNBOOK_SOURCE, runbook_html
from evaluator.pages.sidebyside import BaselineDiff, baseline_diff
from evaluator.pages.slo_view import SloState
from evaluator.pages.status import JobPage, ReportDigest, job_view, report_digest
from evaluator.pages.trend import TREND_METRICS, TrendRun, TrendSource
from evaluator.report import RunReport

__all__ = ["CaseHistorySource", "StatusPages"]

_T = TypeVar("_T")

#: jobs rendered on one page; the rest are counted (a daemon with thousands stays fast)
JOBS_SHOWN = 200
#: the status page reloads itself this often (a meta refresh, no script)
REFRESH_SECONDS = 30
#: past outcomes of a case in its view
CASE_HISTORY = 20
#: a query parameter longer than this is refused (case ids and labels are far shorter)
MAX_PARAM_CHARS = 1000
#: parameters of one page request (the case table's form sends nine)
MAX_PARAMS = 20

#: no script, no external anything: styles inline, images as data: URIs; forms (the case
#: table's filters, a GET) submit to the daemon only
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class CaseHistorySource(Protocol):
    """A case's past outcomes, newest first (the history store's read API)."""

    def case_history(
        self, target: str, dataset: str, case_id: str, *, limit: int = 20
    ) -> Sequence[CaseOutcomeRow]: ...


def case_href(target: str, dataset: str, case_id: str) -> str:
    return "/case?" + urlencode({"target": target, "dataset": dataset, "id": case_id})


def report_href(target: str, dataset: str) -> str:
    return "/reports/latest?" + urlencode({"target": target, "dataset": dataset})


def cases_href(target: str, dataset: str, params: Mapping[str, str] | None = None) -> str:
    return "/case-table?" + urlencode({"target": target, "dataset": dataset, **(params or {})})


def regressions(
    baseline: RunReport | None, report: RunReport
) -> tuple[dict[str, tuple[str, ...]] | None, str]:
    """Each case of ``report`` that regressed against ``baseline``, with its changes (the
    gate's own case diff), or None and why not."""
    if baseline is None:
        return None, "no baseline configured: regressions are not known"
    try:
        diff = diff_cases(align(baseline, report, allow_dataset_change=True))
    except GateError as exc:
        return None, f"the baseline is not comparable with this run: {exc}"
    return {c.id: c.changes for c in diff.regressed}, ""


def _mean(rows: Sequence[TrendRun], metric: str) -> float | None:
    values = [v for r in rows if (v := r.metrics.get(metric)) is not None]
    return sum(values) / len(values) if values else None


def _drift_signals(history: JobHistory, runs: Sequence[TrendRun]) -> list[DriftSignal]:
    """Each drift check of history's verdict, with its levels: the check's run metric
    averaged over the reference window, and its value in the latest complete run (``runs``
    newest first). Not the current side's average: a change in the latest of its runs would
    be averaged with the runs before it, and "now" would be a level no run had."""
    drift = history.drift
    if drift is None:
        return []
    current, reference = drift.current_runs, drift.reference_runs
    complete = [r for r in runs if r.outcome == "complete"]
    now, before = complete[:current], complete[current : current + reference]
    out = []
    for name, check in drift.checks.items():
        metric = DRIFT_METRIC.get(name, name)
        out.append(
            DriftSignal(
                name,
                check.significant,
                check.shift,
                before=_mean(before, metric) if len(before) == reference else None,
                after=now[0].metrics.get(metric) if len(now) == current else None,
            )
        )
    return out


def rejection_words(what: str, rejection: Rejection, now: float) -> str:
    """A rejected reload in words: ``golden-set reload rejected 3 min ago: <why>; the
    previous golden set runs on``."""
    return (
        f"{what.replace(' ', '-')} reload rejected {fmt_age(now - rejection.at)}: "
        f"{rejection.problem}; the previous {what} runs on"
    )


def job_signals(
    state: JobState,
    runs: Sequence[TrendRun],
    judge_problem: str | None = None,
    reload_rejected: str | None = None,
    has_baseline: bool = False,
) -> JobSignals:
    """What the health reads of a job: its last run, gate verdict and history verdict.

    The drift's levels (``before`` / ``after``) are the check's run metric over the drift
    test's reference window and in the latest complete run, read from ``runs`` (newest
    first).
    """
    summary = state.report.summary if state.report is not None else None
    verdict = state.verdict
    history: JobHistory | None = state.history
    drift = history.drift if history is not None else None
    gate_passing, gate_failing = _gate_signals(verdict)
    return JobSignals(
        outcome=state.outcome,
        scored_cases=summary.scored_count if summary is not None else 0,
        error_ratio=summary.error_rate if summary is not None else None,
        gate_passing=gate_passing,
        gate_failing=gate_failing,
        gate_diagnosis=verdict.diagnosis if verdict is not None else (),
        drift=_drift_signals(history, runs) if history is not None else [],
        drift_current_runs=drift.current_runs if drift is not None else 0,
        drift_reference_runs=drift.reference_runs if drift is not None else 0,
        newly_failing=len(history.listed(Stability.NEWLY_FAILING)) if history is not None else 0,
        judge_problem=judge_problem,
        reload_rejected=reload_rejected,
        has_baseline=has_baseline,
    )


def _gate_signals(verdict: GateVerdict | None) -> tuple[bool | None, tuple[str, ...]]:
    """Whether the gate against the baseline passes (None: no gate), and the names of the
    rules failing, sorted."""
    if verdict is None:
        return None, ()
    failing = sorted(name for name, failing in verdict.rules_failing.items() if failing)
    return verdict.passing, tuple(failing)


def gate_limits(gate: BaselineGate | None) -> list[Limit]:
    """The gate rules on the trend metrics as lines: where each rule's limit lies against
    the baseline's value (a rule the baseline cannot place, none)."""
    if gate is None:
        return []
    summary = gate.baseline.summary
    out = []
    for rule in gate.rules:
        if rule.metric not in TREND_METRICS:
            continue
        bound = rule.bound(summary.get(rule.metric))
        if bound is not None:
            out.append(
                Limit(
                    rule.metric,
                    bound,
                    "gate",
                    f"the gate's limit ({rule.text})",
                    bad_above=rule.bad_above,
                )
            )
    return out


def _same(built_from: tuple[object, ...], sources: tuple[object, ...]) -> bool:
    """Whether a cached build was made from these very objects (identity, not equality:
    the published state is immutable)."""
    return all(a is b for a, b in zip(built_from, sources, strict=True))


def _listed(history: JobHistory | None, stability: Stability) -> Sequence[str]:
    """The case ids of one stability class (none without a history verdict)."""
    return history.listed(stability) if history is not None else ()


def _newly_failing_verdicts(history: JobHistory | None) -> dict[str, Sequence[bool | None]]:
    """Each newly failing case's verdicts over history's window, oldest first."""
    cases = history.cases if history is not None else ()
    return {c.case_id: c.verdicts for c in cases if c.stability is Stability.NEWLY_FAILING}


def _schedule_text(job: JobConfig) -> str:
    """A job's schedule in words: its cron expression or its interval ("" for neither)."""
    if job.cron:
        return f"cron {job.cron}"
    return f"every {job.interval_seconds:g} s" if job.interval_seconds else ""


def _stability_badge(history: JobHistory | None, case_id: str) -> tuple[str, str, str] | None:
    """A case's stability class for its view: (value, words, badge colour); None without a
    history verdict of it."""
    classed = history.cases if history is not None else ()
    found = next((c.stability.value for c in classed if c.case_id == case_id), None)
    if found is None:
        return None
    return found, STABILITY_LABELS.get(found, found), STABILITY_BADGE.get(found, "na")


def _html(body: str, status: int = 200) -> web.Response:
    return web.Response(
        text=body,
        status=status,
        content_type="text/html",
        charset="utf-8",
        headers=SECURITY_HEADERS,
    )


class StatusPages:
    """Request handlers for ``/`` and ``/case``, reading the daemon's jobs as they are."""

    def __init__(
        self,
        jobs: Callable[[], Sequence[JobRunner]],
        *,
        redact: Redact,
        trends: TrendSource | None = None,
        history: CaseHistorySource | None = None,
        trace_url: str | None = None,
        config_rejected: Callable[[], Rejection | None] = lambda: None,
        slos: Callable[[], Mapping[str, TrackedSlo]] = dict,
    ) -> None:
        self._jobs = jobs
        #: every SLO the daemon tracks, by name (read at each request: a reload swaps them)
        self._slos = slos
        #: the daemon's last rejected configuration reload, if the running one is older
        self._config_rejected = config_rejected
        self._redact = redact
        self._trends = trends
        self._history = history
        self._trace_url = trace_url
        self.renderer = PageRenderer(redact)
        #: each job's labels file as last read, by (mtime, size): a case view reads it again
        #: only when it changed (a reviewer appending labels)
        self._labels: dict[Path, tuple[tuple[int, int], KnownLabels]] = {}
        #: per job, what the pages compute from every case of a run (the status page's
        #: digest, the case table), with the objects it was built from: rebuilt only when the
        #: job publishes a new run (the published state is immutable, so identity is enough)
        self._built: dict[tuple[str, str, str], tuple[tuple[object, ...], object]] = {}
        self._built_lock = threading.Lock()
        #: the runbook page, rendered at its first request
        self._runbook: str | None = None

    def _known_labels(self, runner: JobRunner) -> KnownLabels | None:
        """The human labels of ``runner``'s judge (its ``drift_labels``), or None."""
        path = runner.judge.config.drift_labels if runner.judge is not None else None
        if path is None:
            return None
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = (-1, -1)  # missing or unreadable: read_known_labels says which
        cached = self._labels.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        known = read_known_labels(path)
        self._labels[path] = (stamp, known)
        return known

    def _cached(
        self,
        kind: str,
        labels: tuple[str, str],
        sources: tuple[object, ...],
        build: Callable[[], _T],
    ) -> _T:
        """``build()``, or what it returned for the same ``sources`` (by identity)."""
        key = (kind, *labels)
        hit = self._built.get(key)
        if hit is None or not _same(hit[0], sources):
            with self._built_lock:  # two requests after a run build it once
                hit = self._built.get(key)
                if hit is None or not _same(hit[0], sources):
                    hit = (sources, build())
                    self._built[key] = hit
                    self._forget_removed_jobs()
        return hit[1]  # type: ignore[return-value]

    def _forget_removed_jobs(self) -> None:
        """Drop what was built for jobs a reload removed (under the build lock)."""
        live = {r.labels for r in self._jobs()}
        for gone in [k for k in self._built if (k[1], k[2]) not in live]:
            del self._built[gone]

    def _runs(self, state: JobState) -> Sequence[TrendRun]:
        source: TrendSource = self._trends if self._trends is not None else state
        try:
            return source.runs(*state.labels, limit=60)
        except Exception:  # a broken history store must not take the page down
            return state.runs(*state.labels, limit=60)

    def _page(self, runner: JobRunner) -> JobPage:
        """The one seam between the daemon's job and the pages: everything a view reads."""
        published = runner.state  # one snapshot: every field below from the same run
        history = published.history
        runs = self._runs(published)
        rejected = runner.rejected_reload
        signals = job_signals(
            published,
            runs,
            runner.judge.problem if runner.judge is not None else None,
            None if rejected is None else rejection_words("golden set", rejected, time.time()),
            has_baseline=runner.gate is not None,
        )
        return JobPage(
            target=runner.labels[0],
            dataset=runner.labels[1],
            report=published.report,
            outcome=published.outcome,
            finished_at=published.finished_at,
            baseline=runner.gate.baseline if runner.gate is not None else None,
            gate_passing=signals.gate_passing,
            gate_failing=signals.gate_failing,
            runs=runs,
            schedule=_schedule_text(runner.job),
            signals=signals,
            newly_failing=_listed(history, Stability.NEWLY_FAILING),
            recovered=_listed(history, Stability.RECOVERED),
            flaky=_listed(history, Stability.FLAKY),
            digest=self._digest(runner, published.report),
            gate_limits=gate_limits(runner.gate),
            newly_failing_verdicts=_newly_failing_verdicts(history),
            window_runs=history.runs_in_window if history is not None else 0,
            slos=self._slo_states(runner),
        )

    def _slo_states(self, runner: JobRunner) -> tuple[SloState, ...]:
        """Each SLO counting the job, from its ledger, now."""
        tracked = self._slos()
        now = time.time()
        states = []
        for slo in runner.slos:
            one = tracked.get(slo.name)
            if one is None:
                continue
            fast = one.plan.alerts_of("page")[0]
            states.append(
                SloState(
                    name=slo.name,
                    indicator=slo.indicator,
                    objective=slo.objective,
                    window=slo.window,
                    budget=one.ledger.since(now - slo.window_seconds),
                    fast=one.ledger.since(now - fast.long_seconds),
                    fast_window=fast.long,
                    fast_factor=fast.factor,
                )
            )
        return tuple(states)

    def render_status(self) -> str:
        runners = list(self._jobs())
        shown = runners[:JOBS_SHOWN]
        now = time.time()
        views = [
            job_view(
                self._page(r),
                case_href=case_href,
                report_href=report_href(*r.labels),
                cases_href=cases_href(*r.labels),
                anchor=f"job-{i}",
                now=now,
                redact=self._redact,
            )
            for i, r in enumerate(shown)
        ]
        rejected = self._config_rejected()
        notices = [] if rejected is None else [rejection_words("configuration", rejected, now)]
        return self.renderer.status(
            views, jobs_more=len(runners) - len(shown), refresh=REFRESH_SECONDS, notices=notices
        )

    async def runbook(self, _request: web.Request) -> web.Response:
        """The on-call runbook, where the shipped alerts' ``runbook_url`` points; rendered
        once (it ships with the package and does not change while the daemon runs)."""
        if self._runbook is None:
            text = RUNBOOK_SOURCE.read_text(encoding="utf-8")
            self._runbook = await asyncio.to_thread(
                lambda: self.renderer.runbook(runbook_html(text))
            )
        return _html(self._runbook)

    async def status(self, _request: web.Request) -> web.Response:
        return _html(await asyncio.to_thread(self.render_status))

    def render_case(self, runner: JobRunner, case_id: str) -> tuple[int, str]:
        target, dataset = runner.labels
        published = runner.state
        report = published.report
        record = (
            next((c for c in report.cases if c.id == case_id), None) if report is not None else None
        )
        if report is None or record is None:
            return 404, self.renderer.not_found("no such case in the last run")
        history = self._case_history(target, dataset, case_id)
        diff = self._against_baseline(runner, record, report.k)
        panels = report_panels(
            report,
            source=f"{target} / {dataset}",
            labels=self._known_labels(runner),
            redact=self._redact,
        )
        view = case_view(
            record,
            k=report.k,
            redact=self._redact,
            history=history,
            trace_url=self._trace_url,
            changes=diff.changes if diff is not None and diff.regressed else (),
            judge=panels(record),
            conversation=conversation_view(
                record,
                report.cases,
                redact=self._redact,
                # the baseline's turns only for a turn: a question has no conversation
                baseline=(
                    self._baseline_cases(runner, report.k) if record.case.turn is not None else None
                ),
                href=lambda turn_id: case_href(target, dataset, turn_id),
            ),
        )
        age = fmt_age(time.time() - published.finished_at) if published.finished_at else ""
        return 200, self.renderer.case(
            view,
            job=f"{target} / {dataset}",
            run_id=report.run_id,
            run_age=age,
            diff=diff,
            stability=_stability_badge(published.history, case_id),
        )

    @staticmethod
    def _baseline_cases(runner: JobRunner, k: int) -> dict[str, CaseRecord] | None:
        """The job's baseline cases by id (a conversation's turns shown beside their
        baseline runs), None without a comparable baseline."""
        gate = runner.gate
        if gate is None or gate.baseline.k != k:
            return None
        return {c.id: c for c in gate.baseline.cases}

    def _case_history(
        self, target: str, dataset: str, case_id: str
    ) -> Sequence[CaseOutcomeRow] | None:
        """The case's past outcomes, newest first; None without a history store or when it
        cannot be read (the case view stands without its history)."""
        if self._history is None:
            return None
        try:
            return self._history.case_history(target, dataset, case_id, limit=CASE_HISTORY)
        except Exception:  # the case view stands without its history
            return None

    def _against_baseline(
        self, runner: JobRunner, record: CaseRecord, k: int
    ) -> BaselineDiff | None:
        """The job's baseline run of this case beside it, when the case moved against it
        (regressed or improved, in the gate's terms); None without a baseline or a move."""
        gate = runner.gate
        if gate is None or gate.baseline.k != k:
            return None
        before = next((c for c in gate.baseline.cases if c.id == record.id), None)
        if before is None:
            return None
        worse, better = record_moves(before, record)
        if not worse and not better:
            return None
        return baseline_diff(
            before,
            record,
            k=k,
            baseline_run=gate.baseline.run_id,
            worse=worse,
            better=better,
            redact=self._redact,
        )

    def table(self, runner: JobRunner) -> CaseTable | None:
        """The job's case table of its last run (None before one), built once per run."""
        published = runner.state
        report = published.report
        if report is None:
            return None
        baseline = runner.gate.baseline if runner.gate is not None else None
        history = published.history

        def build() -> CaseTable:
            regressed, note = regressions(baseline, report)
            return case_table(
                report,
                regressed=regressed,
                stability=(
                    None
                    if history is None
                    else {c.case_id: c.stability.value for c in history.cases}
                ),
                redact=self._redact,
                baseline_note=note,
            )

        return self._cached("table", runner.labels, (report, baseline, history), build)

    def _digest(self, runner: JobRunner, report: RunReport | None) -> ReportDigest | None:
        if report is None:
            return None
        return self._cached("digest", runner.labels, (report,), lambda: report_digest(report))

    def render_table(self, runner: JobRunner, pairs: list[tuple[str, str]]) -> tuple[int, str]:
        try:
            query = parse_query(pairs)
        except PageQueryError as exc:
            return 400, self.renderer.bad_request(str(exc))
        table = self.table(runner)
        if table is None:
            return 404, self.renderer.not_found("no run of this job has finished yet")
        target, dataset = runner.labels
        try:
            view = table_view(
                table,
                query,
                href=lambda params: cases_href(target, dataset, params),
                case_href=lambda case_id: case_href(target, dataset, case_id),
            )
        except PageQueryError as exc:
            return 400, self.renderer.bad_request(str(exc))
        finished = runner.state.finished_at
        age = fmt_age(time.time() - finished) if finished else ""
        return 200, self.renderer.case_table(view, run_age=age)

    def _job(self, target: str | None, dataset: str | None) -> JobRunner | tuple[int, str]:
        """The job ``?target=..&dataset=..`` names (both may be left out with one job), or
        the error page."""
        runners = list(self._jobs())
        if not (target and dataset):
            if len(runners) != 1 or target or dataset:
                return 400, self.renderer.bad_request(
                    f"pass ?target=..&dataset=.. (the daemon runs {len(runners)} jobs)"
                )
            return runners[0]
        runner = next((r for r in runners if r.labels == (target, dataset)), None)
        if runner is None:
            return 404, self.renderer.not_found("no such job")
        return runner

    async def cases(self, request: web.Request) -> web.Response:
        """``/case-table?target=..&dataset=..[&show=..&tag=..&q=..&sort=..&page=..]``"""
        q = request.query
        too_long = [n for n, v in q.items() if len(n) + len(v) > MAX_PARAM_CHARS]
        if too_long or len(q) > MAX_PARAMS:
            return _html(
                self.renderer.bad_request(
                    f"at most {MAX_PARAMS} parameters of at most {MAX_PARAM_CHARS} characters"
                ),
                400,
            )
        job = self._job(q.get("target"), q.get("dataset"))
        if isinstance(job, tuple):
            return _html(job[1], job[0])
        status, body = await asyncio.to_thread(self.render_table, job, list(q.items()))
        return _html(body, status)

    async def case(self, request: web.Request) -> web.Response:
        q = request.query
        case_id = q.get("id")
        if not case_id:
            return _html(
                self.renderer.bad_request("pass ?id=CASE (and ?target=..&dataset=..)"), 400
            )
        too_long = [n for n in ("target", "dataset", "id") if len(q.get(n, "")) > MAX_PARAM_CHARS]
        if too_long:
            return _html(
                self.renderer.bad_request(
                    f"{', '.join(too_long)}: at most {MAX_PARAM_CHARS} characters"
                ),
                400,
            )
        job = self._job(q.get("target"), q.get("dataset"))
        if isinstance(job, tuple):
            return _html(job[1], job[0])
        status, body = await asyncio.to_thread(self.render_case, job, case_id)
        return _html(body, status)

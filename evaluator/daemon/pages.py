"""The daemon's human pages: the status page at ``/`` and a case view at ``/case``.

Both are rendered on the server (no script at all: the Content-Security-Policy forbids it),
from snapshots of each job's last run; rendering runs in a worker thread so the event loop
keeps timing the cases in flight. What they show is bounded whatever the jobs hold (see
:mod:`evaluator.pages.views`), and every endpoint-supplied string is redacted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Protocol
from urllib.parse import urlencode

from aiohttp import web

from evaluator.daemon.baseline import BaselineGate
from evaluator.daemon.job import JobRunner
from evaluator.daemon.publish import JobState as PublishedState
from evaluator.history.job import JobHistory
from evaluator.history.stability import Stability
from evaluator.pages.chart import Limit
from evaluator.pages.health import DRIFT_METRIC, DriftSignal, JobSignals
from evaluator.pages.render import PageRenderer
from evaluator.pages.trend import TREND_METRICS, RunRow, TrendSource
from evaluator.pages.views import (
    CaseOutcomeRow,
    JobState,
    Redact,
    case_view,
    fmt_age,
    job_view,
)

__all__ = ["CaseHistorySource", "StatusPages"]

#: jobs rendered on one page; the rest are counted (a daemon with thousands stays fast)
JOBS_SHOWN = 200
#: the status page reloads itself this often (a meta refresh, no script)
REFRESH_SECONDS = 30
#: past outcomes of a case in its view
CASE_HISTORY = 20
#: a query parameter longer than this is refused (case ids and labels are far shorter)
MAX_PARAM_CHARS = 1000

#: no script, no external anything: styles inline, images as data: URIs
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
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


def _mean(rows: Sequence[RunRow], metric: str) -> float | None:
    values = [v for r in rows if (v := r.metrics.get(metric)) is not None]
    return sum(values) / len(values) if values else None


def job_signals(
    state: PublishedState, runs: Sequence[RunRow], judge_problem: str | None = None
) -> JobSignals:
    """What the health reads of a job: its last run, gate verdict and history verdict.

    The drift's levels (``before`` / ``after``) are the check's run metric averaged over the
    complete runs on each side of the drift test, read from ``runs`` (newest first).
    """
    report = state.report
    summary = report.summary if report is not None else None
    verdict = state.verdict
    history: JobHistory | None = state.history
    drift: list[DriftSignal] = []
    current = reference = 0
    if history is not None and history.drift is not None:
        current, reference = history.drift.current_runs, history.drift.reference_runs
        complete = [r for r in runs if r.outcome == "complete"]
        now, before = complete[:current], complete[current : current + reference]
        for name, check in history.drift.checks.items():
            metric = DRIFT_METRIC.get(name, name)
            drift.append(
                DriftSignal(
                    name,
                    check.significant,
                    check.shift,
                    before=_mean(before, metric) if len(before) == reference else None,
                    after=_mean(now, metric) if len(now) == current else None,
                )
            )
    return JobSignals(
        outcome=state.outcome,
        scored_cases=summary.scored_count if summary is not None else 0,
        error_ratio=summary.error_rate if summary is not None else None,
        gate_passing=verdict.passing if verdict is not None else None,
        gate_failing=tuple(sorted(n for n, failing in verdict.rules_failing.items() if failing))
        if verdict is not None
        else (),
        drift=drift,
        drift_current_runs=current,
        drift_reference_runs=reference,
        newly_failing=len(history.listed(Stability.NEWLY_FAILING)) if history is not None else 0,
        judge_problem=judge_problem,
    )


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
    ) -> None:
        self._jobs = jobs
        self._redact = redact
        self._trends = trends
        self._history = history
        self._trace_url = trace_url
        self.renderer = PageRenderer(redact)

    def _runs(self, state: PublishedState) -> Sequence[RunRow]:
        source: TrendSource = self._trends if self._trends is not None else state
        try:
            return source.runs(*state.labels, limit=60)
        except Exception:  # a broken history store must not take the page down
            return state.runs(*state.labels, limit=60)

    def _state(self, runner: JobRunner) -> JobState:
        """The one seam between the daemon's job and the pages: everything a view reads."""
        published = runner.state  # one snapshot: every field below from the same run
        verdict = published.verdict
        history = published.history
        runs = self._runs(published)
        job = runner.job
        schedule = (
            f"cron {job.cron}"
            if job.cron
            else (f"every {job.interval_seconds:g} s" if job.interval_seconds else "")
        )
        return JobState(
            target=runner.labels[0],
            dataset=runner.labels[1],
            report=published.report,
            outcome=published.outcome,
            finished_at=published.finished_at,
            baseline=runner.gate.baseline if runner.gate is not None else None,
            gate_passing=verdict.passing if verdict is not None else None,
            gate_failing=tuple(
                sorted(name for name, failing in verdict.rules_failing.items() if failing)
            )
            if verdict is not None
            else (),
            runs=runs,
            schedule=schedule,
            signals=job_signals(
                published, runs, runner.judge.problem if runner.judge is not None else None
            ),
            newly_failing=history.listed(Stability.NEWLY_FAILING) if history is not None else (),
            recovered=history.listed(Stability.RECOVERED) if history is not None else (),
            flaky=history.listed(Stability.FLAKY) if history is not None else (),
            gate_limits=gate_limits(runner.gate),
            newly_failing_verdicts={
                c.case_id: c.verdicts
                for c in (history.cases if history is not None else ())
                if c.stability is Stability.NEWLY_FAILING
            },
            window_runs=history.runs_in_window if history is not None else 0,
        )

    def render_status(self) -> str:
        runners = list(self._jobs())
        shown = runners[:JOBS_SHOWN]
        now = time.time()
        views = [
            job_view(
                self._state(r),
                case_href=case_href,
                report_href=report_href(*r.labels),
                anchor=f"job-{i}",
                now=now,
                redact=self._redact,
            )
            for i, r in enumerate(shown)
        ]
        return self.renderer.status(
            views, jobs_more=len(runners) - len(shown), refresh=REFRESH_SECONDS
        )

    async def status(self, _request: web.Request) -> web.Response:
        return _html(await asyncio.to_thread(self.render_status))

    def render_case(self, target: str, dataset: str, case_id: str) -> tuple[int, str]:
        runner = next((r for r in self._jobs() if r.labels == (target, dataset)), None)
        published = runner.state if runner is not None else None
        report = published.report if published is not None else None
        record = (
            next((c for c in report.cases if c.id == case_id), None) if report is not None else None
        )
        if published is None or report is None or record is None:
            what = "no such job" if runner is None else "no such case in the last run"
            return 404, self.renderer.not_found(what)
        history = None
        if self._history is not None:
            try:
                history = self._history.case_history(target, dataset, case_id, limit=CASE_HISTORY)
            except Exception:  # the case view stands without its history
                history = None
        view = case_view(
            record,
            k=report.k,
            redact=self._redact,
            history=history,
            trace_url=self._trace_url,
        )
        age = fmt_age(time.time() - published.finished_at) if published.finished_at else ""
        return 200, self.renderer.case(
            view, job=f"{target} / {dataset}", run_id=report.run_id, run_age=age
        )

    async def case(self, request: web.Request) -> web.Response:
        q = request.query
        target, dataset, case_id = q.get("target"), q.get("dataset"), q.get("id")
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
        if not (target and dataset):
            labels = [r.labels for r in self._jobs()]
            if len(labels) != 1 or target or dataset:
                return _html(
                    self.renderer.bad_request(
                        f"pass ?target=..&dataset=.. (the daemon runs {len(labels)} jobs)"
                    ),
                    400,
                )
            target, dataset = labels[0]
        status, body = await asyncio.to_thread(self.render_case, target, dataset, case_id)
        return _html(body, status)

"""The daemon's human pages: the status page at ``/`` and a case view at ``/case``.

Both are rendered on the server (no script at all: the Content-Security-Policy forbids it),
from snapshots of each job's last run; rendering runs in a worker thread so the event loop
keeps timing the cases in flight. What they show is bounded whatever the jobs hold (see
:mod:`evaluator.pages.views`), and every endpoint-supplied string is redacted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from aiohttp import web

from evaluator.daemon.job import JobRunner
from evaluator.daemon.publish import JobState as PublishedState
from evaluator.gate.compare import record_moves
from evaluator.history.job import JobHistory
from evaluator.history.stability import Stability
from evaluator.models import CaseRecord
from evaluator.pages.health import DRIFT_METRIC, DriftSignal, JobSignals
from evaluator.pages.judge_panel import KnownLabels, case_panel, read_known_labels
from evaluator.pages.render import PageRenderer
from evaluator.pages.sidebyside import BaselineDiff, baseline_diff
from evaluator.pages.trend import RunRow, TrendSource
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
        #: each job's labels file as last read, by (mtime, size): a case view reads it again
        #: only when it changed (a reviewer appending labels)
        self._labels: dict[Path, tuple[tuple[int, int], KnownLabels]] = {}

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
        diff = self._against_baseline(runner, record, report.k)
        view = case_view(
            record,
            k=report.k,
            redact=self._redact,
            history=history,
            trace_url=self._trace_url,
            changes=diff.changes if diff is not None and diff.regressed else (),
        )
        panel = case_panel(
            report,
            record,
            source=f"{target} / {dataset}",
            labels=self._known_labels(runner) if runner is not None else None,
            redact=self._redact,
        )
        if panel is not None:
            view = dataclasses.replace(view, judge=panel)
        age = fmt_age(time.time() - published.finished_at) if published.finished_at else ""
        return 200, self.renderer.case(
            view, job=f"{target} / {dataset}", run_id=report.run_id, run_age=age, diff=diff
        )

    def _against_baseline(
        self, runner: JobRunner | None, record: CaseRecord, k: int
    ) -> BaselineDiff | None:
        """The job's baseline run of this case beside it, when the case moved against it
        (regressed or improved, in the gate's terms); None without a baseline or a move."""
        gate = runner.gate if runner is not None else None
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

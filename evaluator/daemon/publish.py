"""What a job's finished run becomes: its report on disk, its metrics, its history, its state.

:class:`RunPublisher` takes each run from :class:`~evaluator.daemon.job.JobRunner` and
publishes it in steps (``PUBLISH_STEPS``). A step that fails, for whatever reason, is
logged and counted (``rag_eval_publish_errors_total{step}``) and the later steps still run:
the run is always counted with its outcome, so a job cannot go silent. The freshness
timestamps (``rag_eval_last_run_timestamp_seconds`` and the complete-run one) move only
once the report is written, so the stale alerts fire when reports stop.

What the status page, ``/cases`` and ``/reports/latest`` read is one immutable
:class:`JobState` per job, swapped whole (as ``/metrics`` reads its ``JobSnapshot``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import structlog

from evaluator import process_state
from evaluator.daemon.baseline import BaselineGate, GateVerdict
from evaluator.daemon.exporter import PUBLISH_STEPS, DriftGauge, GateState, Metrics
from evaluator.daemon.report_store import ReportStore
from evaluator.daemon.slo import run_events
from evaluator.history.drift import BINARY_CHECKS
from evaluator.history.job import JobHistory
from evaluator.history.recorder import HistoryRecorder, Outcome
from evaluator.history.stability import Stability
from evaluator.history.store import SloEventsRow
from evaluator.metrics import FLOAT_TOLERANCE
from evaluator.pages.trend import TREND_METRICS, RunPoint
from evaluator.summary import Summary

if TYPE_CHECKING:
    from evaluator.config.slo import SloConfig
    from evaluator.models import Case
    from evaluator.report import RunReport
    from evaluator.slo.ledger import EventLedger

__all__ = ["PUBLISH_STEPS", "RECENT_RUNS", "JobState", "RunPublisher", "run_outcome"]

log = structlog.get_logger("evaluator.daemon")

#: runs of this process kept in :attr:`JobState.recent` (the status page's trend fallback)
RECENT_RUNS = 60

Labels = tuple[str, str]


def run_outcome(summary: Summary, error_ratio_limit: float) -> str:
    """A finished run's outcome: ``complete``, ``incomplete`` or ``failed`` (docs/daemon.md)."""
    if summary.scored_count == 0:
        return "failed"
    if (summary.error_rate or 0.0) > error_ratio_limit + FLOAT_TOLERANCE:
        return "incomplete"
    return "complete"


def _drift_gauges(history: JobHistory) -> dict[str, DriftGauge]:
    """Each drift check's gauges: its shift and verdict, and for a pass/fail check how many
    cases dropped and rose."""
    if history.drift is None:
        return {}
    drift: dict[str, DriftGauge] = {}
    for name, check in history.drift.checks.items():
        binary = name in BINARY_CHECKS
        drift[name] = DriftGauge(
            shift=check.shift,
            significant=check.significant,
            dropped=len(check.dropped) if binary else None,
            rose=len(check.rose) if binary else None,
        )
    return drift


def _timestamp(report: RunReport) -> float:
    return report.generated_at.timestamp()


@dataclass(frozen=True, slots=True)
class JobState:
    """One job's published state: replaced whole after each run, never mutated.

    Readers (the status page, ``/cases``, ``/reports/latest``) take ``runner.state`` once
    and read every field from that one object, so they never see half of a run.

    Attributes:
        target, dataset: the job's labels.
        report: the last finished run's report, as it ended (None before the first, or
            after a run that broke without one).
        outcome: that run's outcome (``complete``, ``incomplete``, ``failed``), or None.
        finished_at: when it ended, Unix time, or None.
        report_written: whether that report reached the disk (False: served from memory).
        verdict: the baseline gate's verdict on the last complete run (None: no gate, or
            not judged yet).
        history: stability and drift after the latest complete run (None: no history yet).
        runs_by_outcome: runs of this process by outcome, skipped ones included.
        recent: this process's last runs, newest first (at most ``RECENT_RUNS``).
    """

    target: str
    dataset: str
    report: RunReport | None = None
    outcome: str | None = None
    finished_at: float | None = None
    report_written: bool = False
    verdict: GateVerdict | None = None
    history: JobHistory | None = None
    runs_by_outcome: Mapping[str, int] = field(default_factory=dict)
    recent: tuple[RunPoint, ...] = ()

    @property
    def labels(self) -> Labels:
        return (self.target, self.dataset)

    def runs(self, target: str, dataset: str, *, limit: int = 200) -> list[RunPoint]:
        """This process's runs, newest first: the :class:`TrendSource` shape, for the pages
        when no history store is configured."""
        if (target, dataset) != self.labels:
            return []
        return list(self.recent[:limit])


class RunPublisher:
    """Publishes one job's runs; owns its report store and its :class:`JobState`.

    Every method is called on the event loop; none raises because a step failed.
    """

    def __init__(
        self,
        *,
        labels: Labels,
        job_key: str,
        store: ReportStore,
        metrics: Metrics,
        error_ratio_limit: float,
        gate: BaselineGate | None = None,
        history: HistoryRecorder | None = None,
        judge_cases: Callable[[], tuple[tuple[Case, ...], bool]] = lambda: ((), False),
        slos: Sequence[SloConfig] = (),
        slo_ledgers: Callable[[], Mapping[str, EventLedger]] = dict,
        clock: Callable[[], float],
    ) -> None:
        self.labels = labels
        self.key = job_key
        self.store = store
        self.metrics = metrics
        self.error_ratio_limit = error_ratio_limit
        self.gate = gate
        self.history = history
        #: the golden cases this replica ran, and whether the set is sharded (for the gate)
        self._judge_cases = judge_cases
        #: the SLOs that count this job's cases, and the daemon's ledgers of every SLO (by
        #: name, read at each run: a reload swaps them)
        self.slos = tuple(slos)
        self._slo_ledgers = slo_ledgers
        self.clock = clock
        self.state = JobState(*labels)
        self._history_pending: set[asyncio.Future[Outcome]] = set()

    def _label_fields(self) -> dict[str, str]:
        return {"target": self.labels[0], "dataset": self.labels[1]}

    def _swap(self, **changes: object) -> None:
        self.state = replace(self.state, **changes)  # type: ignore[arg-type]

    def _failed(self, step: str, exc: BaseException) -> None:
        """A publishing step failed: counted and logged, the run goes on being published."""
        # the counter itself broken: the log line below still says it
        with contextlib.suppress(Exception):
            self.metrics.publish_failed(self.labels, step)
        log.error(
            "publish_failed",
            job=self.key,
            step=step,
            error=f"{type(exc).__name__}: {exc}",
            **self._label_fields(),
        )

    # --- counting -------------------------------------------------------------------------

    def count(self, outcome: str) -> None:
        """Count a run by outcome: in the state and on ``rag_eval_runs_total``."""
        counts = dict(self.state.runs_by_outcome)
        counts[outcome] = counts.get(outcome, 0) + 1
        self._swap(runs_by_outcome=counts)
        try:
            self.metrics.run_counted(self.labels, outcome)
        except Exception as exc:
            self._failed("metrics", exc)

    # --- a run's results ------------------------------------------------------------------

    async def publish(self, report: RunReport, outcome: str) -> None:
        """Publish a finished run: report, gate, gauges, state, history, count. Never raises.

        The gauges move only when the report was written: a run whose report is lost is
        counted, and its failure too, but leaves the freshness timestamps where they were.
        """
        finished_at = self.clock()
        written = await self._save(report)
        complete = outcome == "complete"
        gate: GateState | None = None
        verdict = self.state.verdict
        if complete and self.gate is not None:
            try:
                verdict = self._verdict(report)
                gate = _gate_state(verdict)
            except Exception as exc:
                self._failed("gate", exc)
        if written:
            try:
                self.metrics.run_finished(
                    self.labels,
                    finished_at=finished_at,
                    duration_seconds=report.duration_seconds,
                    error_ratio=report.summary.error_rate,
                    config_hash=report.config_hash,
                    dataset_hash=report.dataset_hash,
                    complete=report.summary if complete else None,
                    gate=gate,
                )
            except Exception as exc:
                self._failed("metrics", exc)
        slo_rows = self._count_slo_events(report, finished_at, judged=False)
        self._swap(
            report=report,
            outcome=outcome,
            finished_at=finished_at,
            report_written=written,
            verdict=verdict,
            recent=self._with_point(report, outcome, finished_at),
        )
        self._record_history(report, outcome, slo_rows)
        self.count(outcome)

    async def publish_judged(self, report: RunReport, finished_at: float) -> None:
        """The judged figures of a run :meth:`publish` published (at ``finished_at``)
        arrived: its report written again with its judge block and the judged SLOs' events
        counted, at the run's time; served when it is still the job's latest run, else
        only its own numbered report is rewritten (``latest.json`` stays the later run's).
        Never raises."""
        latest = self.state.report is not None and self.state.report.run_id == report.run_id
        if latest:
            written = await self._save(report)
            if self.state.report is not None and self.state.report.run_id == report.run_id:
                self._swap(report=report, report_written=written)
        else:
            await self._save_earlier(report)
        slo_rows = self._count_slo_events(report, finished_at, judged=True)
        self._record_slo_events(report, slo_rows)

    async def _save_earlier(self, report: RunReport) -> None:
        """Rewrite an earlier run's numbered report (in the reports' writer thread), logged
        and counted when it cannot be."""
        try:
            loop = asyncio.get_running_loop()
            writer = process_state.worker("reports")
            await loop.run_in_executor(writer, self.store.save_earlier, report)
        except Exception as exc:
            self.metrics.report_write_failed(self.labels)
            self._failed("report", exc)

    def _count_slo_events(
        self, report: RunReport, finished_at: float, *, judged: bool
    ) -> list[SloEventsRow]:
        """Add the run's events to its SLOs' counters and ledgers (whether or not its report
        was written: the cases were scored all the same); the rows history keeps of them.
        ``judged``: the SLOs on a judged check (counted when the run's judge is done), else
        the others (counted when the run is published)."""
        slos = [slo for slo in self.slos if (slo.check is not None) == judged]
        if not slos:
            return []
        try:
            events = run_events(slos, report)
            self.metrics.slo_events_counted(self.labels, events)
            ledgers = self._slo_ledgers()
            for slo in slos:
                ledger = ledgers.get(slo.name)
                if ledger is not None:
                    ledger.add(finished_at, events[slo.name])
        except Exception as exc:
            self._failed("metrics", exc)
            return []
        return [
            SloEventsRow(slo.name, events[slo.name].good, events[slo.name].bad, slo.window_seconds)
            for slo in slos
        ]

    def broken(self, duration_seconds: float) -> None:
        """A run ended without a report (it raised or was cancelled): counted ``failed``."""
        now = self.clock()
        self._swap(outcome="failed", finished_at=now, report=None, report_written=False)
        try:
            self.metrics.run_broke(self.labels, finished_at=now, duration_seconds=duration_seconds)
        except Exception as exc:
            self._failed("metrics", exc)
        self.count("failed")

    def _with_point(self, report: RunReport, outcome: str, at: float) -> tuple[RunPoint, ...]:
        metrics = {name: report.summary.get(name) for name in TREND_METRICS}
        point = RunPoint(
            report.run_id, at, outcome, metrics, report.config_hash, report.dataset_hash
        )
        return (point, *self.state.recent[: RECENT_RUNS - 1])

    def _verdict(self, report: RunReport) -> GateVerdict | None:
        assert self.gate is not None
        history = self.state.history
        flaky = tuple(history.listed(Stability.FLAKY)) if history is not None else ()
        cases, sharded = self._judge_cases()
        return self.gate.judge(report, cases, sharded, classed_flaky=flaky)

    async def _save(self, report: RunReport) -> bool:
        """Write the report; False (logged and counted) when it could not be.

        In a worker thread: the write's fsyncs, temporary file and pruning scan held the
        event loop for tens of milliseconds per run, and runs ending together stalled
        ``/healthz`` past 250 ms. One thread for every job, so a folder has one writer: with
        ``asyncio.to_thread``'s pool, 100 jobs ending together encoded up to six reports at
        once (CPU under the GIL) and a ``/metrics`` scrape then took 1.5 s; now the reports
        queue, and their freshness timestamps move as each is written."""
        pruned = self.store.pruned_for_space
        try:
            loop = asyncio.get_running_loop()
            writer = process_state.worker("reports")
            path = await loop.run_in_executor(writer, self.store.save, report)
        except OSError as exc:
            self.metrics.report_write_failed(self.labels)
            self.metrics.publish_failed(self.labels, "report")
            log.error(
                "report_write_failed",
                job=self.key,
                folder=str(self.store.folder),
                error=exc.strerror or str(exc),
            )
            return False
        except Exception as exc:  # a report that cannot be encoded: a bug, still counted
            self.metrics.report_write_failed(self.labels)
            self._failed("report", exc)
            return False
        if self.store.pruned_for_space > pruned:
            log.warning(
                "reports_pruned_for_space",
                job=self.key,
                folder=str(self.store.folder),
                deleted=self.store.pruned_for_space - pruned,
                keep=self.store.keep,
            )
        log.debug("report_written", job=self.key, path=str(path))
        return True

    # --- a restart ------------------------------------------------------------------------

    def restore(self, dataset_hash: str) -> None:
        """Seed the gauges from the last report on disk, so a restart does not blank them."""
        stale = self.store.remove_stale_temp_files()
        if stale:
            log.info("stale_temp_files_removed", job=self.key, count=stale)
        report = self.store.load_latest()
        if report is None or report.dataset_hash != dataset_hash:
            return
        limit = self.error_ratio_limit
        complete = self._last_complete(report, dataset_hash)
        verdict = None
        if complete is not None and self.gate is not None:
            verdict = self._verdict(complete)
        self._seed_gauges(report, complete, verdict)
        outcome, at = run_outcome(report.summary, limit), _timestamp(report)
        self._swap(
            report=report,
            outcome=outcome,
            finished_at=at,
            report_written=True,
            verdict=verdict,
            recent=self._with_point(report, outcome, at),
        )
        log.info("job_restored", job=self.key, run_id=report.run_id, **self._label_fields())

    def _last_complete(self, report: RunReport, dataset_hash: str) -> RunReport | None:
        """The last complete run of this golden set: ``report`` itself, or after an
        incomplete or failed run one of the kept reports (read lazily, newest first)."""
        limit = self.error_ratio_limit
        return next(
            (
                r
                for r in itertools.chain((report,), self.store.kept())
                if r.dataset_hash == dataset_hash and run_outcome(r.summary, limit) == "complete"
            ),
            None,
        )

    def _seed_gauges(
        self, report: RunReport, complete: RunReport | None, verdict: GateVerdict | None
    ) -> None:
        """The gauges of the last run, with the quality and gate ones of the last complete
        run (as after a live run)."""
        self.metrics.run_finished(
            self.labels,
            finished_at=_timestamp(report),
            duration_seconds=report.duration_seconds,
            error_ratio=report.summary.error_rate,
            complete=None if complete is None else complete.summary,
            complete_at=None if complete is None else _timestamp(complete),
            gate=None if complete is None or self.gate is None else _gate_state(verdict),
        )

    def carry_over(self, previous: RunPublisher) -> None:
        """A reload kept the job: keep the previous publisher's last results and counts."""
        self.store.latest = previous.store.latest
        old = previous.state
        self._swap(runs_by_outcome=old.runs_by_outcome, history=old.history)

    # --- history: written and read in the recorder's thread, applied back on the loop ------

    def _record_history(
        self, report: RunReport, outcome: str, slo_rows: Sequence[SloEventsRow] = ()
    ) -> None:
        """Queue the run (and its SLO events) for the history store; the run does not wait
        for the write."""
        if self.history is not None:
            self._queue_history(self.history.record, report, outcome, slo_rows)

    def _record_slo_events(self, report: RunReport, rows: Sequence[SloEventsRow]) -> None:
        """Queue a published run's judged SLO events for the history store."""
        if self.history is not None and rows:
            self._queue_history(self.history.record_slo_events, report, rows)

    def _queue_history(self, write: Callable[..., Outcome], *args: object) -> None:
        """``write(target, dataset, *args)`` in the history's thread, its outcome applied
        back on the loop when done."""
        assert self.history is not None
        try:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.history.executor, write, *self.labels, *args)
        except Exception as exc:  # the executor shut down under us (a stop in progress)
            self._failed("history", exc)
            return
        self._history_pending.add(future)
        future.add_done_callback(self._history_done)

    def _history_done(self, future: asyncio.Future[Outcome]) -> None:
        self._history_pending.discard(future)
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:  # a bug, not a store problem (those come back as errors)
            self.metrics.history_failed(self.labels, "io")
            self._failed("history", error)
            return
        try:
            self._apply_history(future.result())
        except Exception as exc:
            self._failed("history", exc)

    def _apply_history(self, result: Outcome) -> None:
        for kind in result.errors:
            self.metrics.history_failed(self.labels, kind)
        history = result.history
        if history is None:
            return
        self._swap(history=history)
        if history.drift is not None and history.drift.significant:
            log.warning(
                "drift_significant",
                job=self.key,
                checks={n: c.to_dict() for n, c in history.drift.checks.items() if c.significant},
                **self._label_fields(),
            )
        self.metrics.history_updated(
            self.labels,
            stability_counts={k.value: v for k, v in history.counts.items()},
            window_runs=history.runs_in_window,
            drift=_drift_gauges(history),
        )

    async def restore_history(self) -> None:
        """Seed stability and drift from the store, so a restart keeps them."""
        if self.history is None:
            return
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self.history.executor, self.history.load, *self.labels)
        self._apply_history(result)

    async def drain_history(self, seconds: float) -> None:
        """Wait (bounded) for queued history writes, at shutdown."""
        pending = list(self._history_pending)
        if pending:
            await asyncio.wait(pending, timeout=seconds)


def _gate_state(verdict: GateVerdict | None) -> GateState:
    if verdict is None:
        return GateState(passing=None)
    return GateState(passing=verdict.passing, rules_failing=verdict.rules_failing)

"""One scheduled job: a (target, golden set) pair, its runs, reloads, reports and metrics."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from evaluator import border
from evaluator.bounds import cut
from evaluator.config import JobConfig, Settings
from evaluator.daemon.baseline import BaselineGate, GateVerdict
from evaluator.daemon.exporter import DriftGauge, GateState, Metrics
from evaluator.daemon.report_store import ReportStore
from evaluator.daemon.shard import shard_cases
from evaluator.dataset import parse_dataset
from evaluator.errors import DatasetError
from evaluator.history.drift import BINARY_CHECKS
from evaluator.history.job import JobHistory
from evaluator.history.recorder import HistoryRecorder, Outcome
from evaluator.history.stability import Stability
from evaluator.metrics import FLOAT_TOLERANCE
from evaluator.models import DELIVERY_FIELDS, Case, CaseRecord, Dataset
from evaluator.pages.trend import TREND_METRICS, RecentRuns, RunPoint
from evaluator.report import RunReport, scores_to_dict
from evaluator.runner import RetryEvent, config_hash_for, run_dataset
from evaluator.summary import Summary, id_mismatch_warning
from evaluator.targets.base import Target

__all__ = ["JobRunner", "classify"]

log = structlog.get_logger("evaluator.daemon")


def classify(summary: Summary, error_ratio_limit: float) -> str:
    """A finished run's outcome: ``complete``, ``incomplete`` or ``failed`` (docs/daemon.md)."""
    if summary.scored_count == 0:
        return "failed"
    if (summary.error_rate or 0.0) > error_ratio_limit + FLOAT_TOLERANCE:
        return "incomplete"
    return "complete"


def _timestamp(report: RunReport) -> float:
    return report.generated_at.timestamp()


class JobRunner:
    """Runs one job when the scheduler says so; never two runs at once (the scheduler's job)."""

    def __init__(
        self,
        *,
        job: JobConfig,
        settings: Settings,
        target: Target,
        dataset: Dataset,
        metrics: Metrics,
        gate: BaselineGate | None = None,
        history: HistoryRecorder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.job = job
        self.settings = settings
        self.target = target
        self.dataset = dataset
        self.metrics = metrics
        self.gate = gate
        self.clock = clock
        self.labels = (target.name, dataset.name)
        self.options = settings.run_options(job)
        self.options.stages.on_fold = self._on_stage_folded
        self.store = ReportStore(settings.reports_dir, job.key, settings.reports_keep)
        self._signature = self._stat_signature()
        self.runs_by_outcome: dict[str, int] = {}
        # for the status page: the last finished run, as it ended
        self.last_report: RunReport | None = None
        self.last_outcome: str | None = None
        self.last_finished_at: float | None = None
        self.last_verdict: GateVerdict | None = None
        self.recent = RecentRuns()
        self.history = history
        #: stability and drift after the latest complete run (None: no history yet)
        self.latest_history: JobHistory | None = None
        self._history_pending: set[asyncio.Future[Outcome]] = set()

    @property
    def key(self) -> str:
        return self.job.key

    @property
    def config_hash(self) -> str:
        return config_hash_for(self.dataset, self.target, self.options)

    def _stat_signature(self) -> tuple[int, int] | None:
        try:
            st = Path(self.job.dataset).stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def restore(self) -> None:
        """Seed the gauges from the last report on disk, so a restart does not blank them."""
        stale = self.store.remove_stale_temp_files()
        if stale:
            log.info("stale_temp_files_removed", job=self.key, count=stale)
        report = self.store.load_latest()
        if report is None or report.dataset_hash != self.dataset.content_hash:
            return
        limit = self.settings.error_ratio_limit
        # after an incomplete or failed run, the last complete one is among the kept reports
        complete = next(
            (
                r
                for r in itertools.chain((report,), self.store.kept())  # lazily, newest first
                if r.dataset_hash == self.dataset.content_hash
                and classify(r.summary, limit) == "complete"
            ),
            None,
        )
        self.metrics.run_finished(
            self.labels,
            finished_at=_timestamp(report),
            duration_seconds=report.duration_seconds,
            error_ratio=report.summary.error_rate,
            complete=None if complete is None else complete.summary,
            complete_at=None if complete is None else _timestamp(complete),
            gate=None if complete is None else self._judge(complete),
        )
        self._remember(report, classify(report.summary, limit), _timestamp(report))
        log.info("job_restored", job=self.key, run_id=report.run_id, **self._label_fields())

    def _label_fields(self) -> dict[str, str]:
        return {"target": self.labels[0], "dataset": self.labels[1]}

    def reload_dataset(self) -> None:
        """Pick up a changed golden set; an invalid one is rejected and the old one kept."""
        signature = self._stat_signature()
        if signature == self._signature:
            return
        self._signature = signature
        path = self.job.dataset
        try:
            # a regular file within its cap only: a FIFO in its place froze the daemon
            data = border.read_file(path)
            fresh = parse_dataset(data, str(path))
        except (OSError, DatasetError) as exc:
            problems = (
                [str(p) for p in exc.problems[:5]]
                if isinstance(exc, DatasetError)
                else [f"{path}: {exc}"]
            )
            self.metrics.dataset_reload_failed(self.labels)
            log.error(
                "dataset_reload_failed",
                job=self.key,
                path=str(path),
                problems=problems,
                problem_count=len(exc.problems) if isinstance(exc, DatasetError) else 1,
                kept_dataset_hash=self.dataset.content_hash,
                **self._label_fields(),
            )
            return
        if fresh.content_hash == self.dataset.content_hash:
            return
        old = self.dataset
        # the dataset label stays what the job configured, whatever the file is called
        self.dataset = replace(fresh, name=old.name)
        self.metrics.dataset_changed(
            self.labels, dataset_hash=self.dataset.content_hash, config_hash=self.config_hash
        )
        log.info(
            "dataset_reloaded",
            job=self.key,
            path=str(path),
            old_dataset_hash=old.content_hash,
            dataset_hash=self.dataset.content_hash,
            case_count=len(self.dataset.cases),
            **self._label_fields(),
        )

    def _log_case(self, record: CaseRecord) -> None:
        if not self.settings.log_cases:
            return
        fields: dict[str, Any] = {
            "case_id": record.id,
            "latency_seconds": round(record.latency_seconds, 6),
            "stage_seconds": dict(record.stage_seconds),
            "attempts": record.attempts,
            **scores_to_dict(record.scores),
            "error_kind": record.error.kind if record.error else None,
            "error_message": record.error.message if record.error else None,
        }
        # measured only for some targets (streamed, usage, traced): absent otherwise
        for name in DELIVERY_FIELDS:
            value = getattr(record, name)
            if value is not None:
                fields[name] = round(value, 6) if isinstance(value, float) else value
        if self.settings.log_answers and record.answer is not None:
            # cut() redacts first: a plain slice could halve a secret beyond recognition
            fields["answer"] = cut(record.answer, self.settings.log_answer_max_chars)
        log.info("case", **fields)

    def _on_stage_folded(self, name: str, first: bool) -> None:
        self.metrics.stage_folded(self.labels)
        if first:
            log.warning(
                "stage_folded",
                job=self.key,
                stage=name,
                into="other",
                kept=sorted(self.options.stages.kept),
                reason="not in the target's stages allow-list"
                if self.options.stages.allowed is not None
                else f"beyond max_stages ({self.options.stages.cap})",
                **self._label_fields(),
            )

    def _on_retry(self, event: RetryEvent) -> None:
        self.metrics.retried(self.labels)
        log.warning(
            "retry",
            case_id=event.case_id,
            attempt=event.attempt,
            error_kind=event.kind,
            error_message=event.message,
            sleep_seconds=round(event.sleep_seconds, 3),
        )

    def _count(self, outcome: str) -> None:
        self.metrics.run_counted(self.labels, outcome)
        self.runs_by_outcome[outcome] = self.runs_by_outcome.get(outcome, 0) + 1

    def skipped(self) -> None:
        """The scheduler found the previous run still going: count and log the skip."""
        self._count("skipped")
        log.warning(
            "run_skipped", job=self.key, reason="previous run still going", **self._label_fields()
        )

    async def run(self) -> str:
        """One run: reload the golden set if changed, run, score, export, write the report.

        Returns:
            The outcome. Errors of the target never escape; a run that breaks is ``failed``.
        """
        run_id = uuid.uuid4().hex[:12]
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(run_id=run_id, **self._label_fields())
        self.reload_dataset()
        cases = self._shard()
        labels = self.labels

        def on_case(record: CaseRecord) -> None:
            self.metrics.case_finished(labels, record, run_id)
            self._log_case(record)

        started = time.perf_counter()
        try:
            report = await run_dataset(
                self.dataset,
                self.target,
                self.options,
                on_case=on_case,
                on_retry=self._on_retry,
                run_id=run_id,
                cases=cases,
            )
        except asyncio.CancelledError:
            self._finish_broken(started, "cancelled by shutdown")
            raise
        except Exception as exc:  # the scheduler loop is the one place that catches broadly
            log.exception("run_failed", job=self.key)
            self._finish_broken(started, f"{type(exc).__name__}: {exc}")
            return "failed"
        outcome = classify(report.summary, self.settings.error_ratio_limit)
        self._publish(report, outcome)
        self._remember(report, outcome, self.clock())
        self._save(report)
        self._record_history(report, outcome)
        self._count(outcome)
        log.info(
            "run",
            job=self.key,
            outcome=outcome,
            duration_seconds=round(report.duration_seconds, 3),
            config_hash=report.config_hash,
            dataset_hash=report.dataset_hash,
            case_count=report.case_count,
            error_count=report.error_count,
            summary=_flat_summary(report.summary),
        )
        warning = id_mismatch_warning(report.cases)
        if warning is not None:
            log.warning("no_relevant_id_retrieved", job=self.key, message=warning)
        return outcome

    def _remember(self, report: RunReport, outcome: str, finished_at: float) -> None:
        self.last_report, self.last_outcome, self.last_finished_at = report, outcome, finished_at
        metrics = {name: report.summary.get(name) for name in TREND_METRICS}
        self.recent.add(*self.labels, RunPoint(report.run_id, finished_at, outcome, metrics))

    def _finish_broken(self, started: float, reason: str) -> None:
        self._count("failed")
        self.last_outcome, self.last_finished_at = "failed", self.clock()
        self.metrics.run_broke(
            self.labels, finished_at=self.clock(), duration_seconds=time.perf_counter() - started
        )
        log.error("run", job=self.key, outcome="failed", reason=reason)

    def _publish(self, report: RunReport, outcome: str) -> None:
        complete = outcome == "complete"
        self.metrics.run_finished(
            self.labels,
            finished_at=self.clock(),
            duration_seconds=report.duration_seconds,
            error_ratio=report.summary.error_rate,
            config_hash=report.config_hash,
            dataset_hash=report.dataset_hash,
            complete=report.summary if complete else None,
            gate=self._judge(report) if complete else None,
        )

    def _shard(self) -> tuple[Case, ...]:
        return shard_cases(self.dataset.cases, self.settings.shard_index, self.settings.shard_count)

    def _judge(self, report: RunReport) -> GateState | None:
        """The gate's verdict on a complete run; None (nothing to export) without a gate."""
        if self.gate is None:
            return None
        history = self.latest_history
        flaky = tuple(history.listed(Stability.FLAKY)) if history is not None else ()
        verdict = self.gate.judge(
            report, self._shard(), self.settings.shard_count > 1, classed_flaky=flaky
        )
        self.last_verdict = verdict
        if verdict is None:
            return GateState(passing=None)
        return GateState(passing=verdict.passing, rules_failing=verdict.rules_failing)

    def _save(self, report: RunReport) -> None:
        pruned = self.store.pruned_for_space
        try:
            path = self.store.save(report)
        except OSError as exc:
            self.metrics.report_write_failed(self.labels)
            log.error(
                "report_write_failed",
                job=self.key,
                folder=str(self.store.folder),
                error=exc.strerror or str(exc),
            )
            return
        if self.store.pruned_for_space > pruned:
            log.warning(
                "reports_pruned_for_space",
                job=self.key,
                folder=str(self.store.folder),
                deleted=self.store.pruned_for_space - pruned,
                keep=self.store.keep,
            )
        log.debug("report_written", job=self.key, path=str(path))

    # --- history: written and read in the recorder's thread, applied back on the loop ------

    def _record_history(self, report: RunReport, outcome: str) -> None:
        """Queue the run for the history store; the run does not wait for the write."""
        if self.history is None:
            return
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(
            self.history.executor, self.history.record, *self.labels, report, outcome
        )
        self._history_pending.add(future)
        future.add_done_callback(self._history_done)

    def _history_done(self, future: asyncio.Future[Outcome]) -> None:
        self._history_pending.discard(future)
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:  # a bug, not a store problem (those come back as errors)
            self.metrics.history_failed(self.labels, "io")
            log.error("history_failed", job=self.key, error=f"{type(exc).__name__}: {exc}")
            return
        self._apply_history(future.result())

    def _apply_history(self, result: Outcome) -> None:
        for kind in result.errors:
            self.metrics.history_failed(self.labels, kind)
        history = result.history
        if history is None:
            return
        self.latest_history = history
        drift: dict[str, DriftGauge] = {}
        if history.drift is not None:
            for name, check in history.drift.checks.items():
                binary = name in BINARY_CHECKS
                drift[name] = DriftGauge(
                    shift=check.shift,
                    significant=check.significant,
                    dropped=len(check.dropped) if binary else None,
                    rose=len(check.rose) if binary else None,
                )
            if history.drift.significant:
                log.warning(
                    "drift_significant",
                    job=self.key,
                    checks={
                        n: c.to_dict() for n, c in history.drift.checks.items() if c.significant
                    },
                    **self._label_fields(),
                )
        self.metrics.history_updated(
            self.labels,
            stability_counts={k.value: v for k, v in history.counts.items()},
            window_runs=history.runs_in_window,
            drift=drift,
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


def _flat_summary(summary: Summary) -> dict[str, Any]:
    data = summary.to_dict()
    data.pop("by_tag", None)
    data.pop("totals", None)
    return data

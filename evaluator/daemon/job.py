"""One scheduled job: a (target, golden set) pair and its runs; what a run becomes (report,
metrics, history, the state the pages read) is :mod:`evaluator.daemon.publish`'s."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import structlog

from evaluator import border
from evaluator.bounds import cut
from evaluator.config import JobConfig, Settings
from evaluator.daemon.baseline import BaselineGate
from evaluator.daemon.exporter import Metrics
from evaluator.daemon.judging import DaemonJudge
from evaluator.daemon.publish import JobState, RunPublisher, run_outcome
from evaluator.daemon.report_store import ReportStore
from evaluator.daemon.shard import shard_cases
from evaluator.dataset import parse_dataset
from evaluator.errors import DatasetError
from evaluator.history.recorder import HistoryRecorder
from evaluator.models import DELIVERY_FIELDS, CaseRecord, Dataset, GoldenCase, questions_of
from evaluator.report import RunReport, scores_to_dict
from evaluator.run.runner import RetryEvent, config_hash_for, run_dataset
from evaluator.slo.ledger import EventLedger
from evaluator.summary import Summary, id_mismatch_warning, out_of_range_warning
from evaluator.targets.base import Target

__all__ = ["JobRunner"]

log = structlog.get_logger("evaluator.daemon")


@dataclass(frozen=True, slots=True)
class Rejection:
    """A reload that was rejected (the previous golden set or configuration runs on): when,
    and why, in one line."""

    at: float
    problem: str


class JobRunner:
    """Runs one job when the scheduler says so; never two runs at once (the scheduler's job).

    The run is this class's; each finished run goes to :attr:`publisher`, whose
    :attr:`state` (a :class:`~evaluator.daemon.publish.JobState`) is what the pages read.
    """

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
        judge: DaemonJudge | None = None,
        slo_ledgers: Callable[[], Mapping[str, EventLedger]] = dict,
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
        #: the SLOs that count this job's cases
        self.slos = tuple(s for s in settings.slos if job in settings.slo_jobs(s))
        self.options.stages.on_fold = self._on_stage_folded
        self._signature = self._stat_signature()
        self.publisher = RunPublisher(
            labels=self.labels,
            job_key=job.key,
            store=ReportStore(settings.reports_dir, job.key, settings.reports_keep),
            metrics=metrics,
            error_ratio_limit=settings.error_ratio_limit,
            gate=gate,
            history=history,
            judge_cases=lambda: (tuple(questions_of(self._shard())), self.settings.shard_count > 1),
            slos=self.slos,
            slo_ledgers=slo_ledgers,
            clock=clock,
        )
        #: the job's LLM judge (None: not judged)
        self.judge = judge
        #: the judge's pass over the last published run it took (None: none yet)
        self.judging: asyncio.Task[None] | None = None
        #: the last changed golden set, rejected (None: the file in use is the file on disk)
        self.rejected_reload: Rejection | None = None

    @property
    def state(self) -> JobState:
        """The job's published state, one immutable snapshot (read it once per request)."""
        return self.publisher.state

    @property
    def store(self) -> ReportStore:
        return self.publisher.store

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
        self.publisher.restore(self.dataset.content_hash)

    def _label_fields(self) -> dict[str, str]:
        return {"target": self.labels[0], "dataset": self.labels[1]}

    async def reload_dataset(self) -> None:
        """Pick up a changed golden set; an invalid one is rejected and the old one kept.

        Read and parsed in a worker thread (a golden set may be up to
        :data:`~evaluator.border.MAX_INPUT_BYTES`: never on the event loop), and only from a
        regular file within that cap (a FIFO in its place froze the daemon and SIGTERM).
        """
        signature = self._stat_signature()
        if signature == self._signature:
            return
        self._signature = signature
        path = self.job.dataset
        try:
            # OSError: not a regular file, too large, or unreadable; DatasetError: invalid
            fresh = await asyncio.to_thread(
                lambda: parse_dataset(border.read_file(path), str(path))
            )
        except (OSError, DatasetError) as exc:
            problems = (
                [str(p) for p in exc.problems[:5]]
                if isinstance(exc, DatasetError)
                else [f"{path}: {exc}"]
            )
            self.metrics.dataset_reload_failed(self.labels)
            self.rejected_reload = Rejection(self.clock(), problems[0])
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
        if self.rejected_reload is not None:
            self.rejected_reload = None
            self.metrics.dataset_reload_accepted(self.labels)
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
        # measured only for some targets (streamed, usage, traced) and not for a failed case:
        # null then, so every case line has the same keys
        for name in DELIVERY_FIELDS:
            value = getattr(record, name)
            fields[name] = round(value, 6) if isinstance(value, float) else value
        fields["out_of_range"] = list(record.out_of_range)
        if self.settings.log_answers and record.answer is not None:
            # cut() redacts first: a plain slice could halve a secret beyond recognition
            fields["answer"] = cut(record.answer, self.settings.log_answer_max_chars)
        # a failed case is worth a look: warning, as a scored one is info
        (log.warning if record.error else log.info)("case", **fields)

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

    def skipped(self) -> None:
        """The scheduler found the previous run still going: count and log the skip."""
        self.publisher.count("skipped")
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
        await self.reload_dataset()
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
        outcome = run_outcome(report.summary, self.settings.error_ratio_limit)
        # shielded: a shutdown arriving while the report is written still lets the run be
        # published whole (state, gauges, history, count) rather than half
        await asyncio.shield(self.publisher.publish(report, outcome))
        self._log_run(report, outcome)
        if self.judge is not None and outcome == "complete":
            self._judge_later(report, self.judge, self.publisher.state.finished_at)
        return outcome

    def _judge_later(
        self, report: RunReport, judge: DaemonJudge, finished_at: float | None
    ) -> None:
        """Judge the published run in a task of its own (:attr:`judging`), so the job's next
        run never waits for the judge; a run that ends while the judge is still on an
        earlier one is not judged (logged): a judge slower than the job's interval judges
        every other run rather than falling ever further behind."""
        busy = self.judging
        if busy is not None and not busy.done():
            log.warning(
                "judge_busy",
                job=self.key,
                message="the judge is still judging an earlier run: this run is not judged",
            )
            return
        at = self.clock() if finished_at is None else finished_at
        self.judging = asyncio.create_task(
            self._judged(report, judge, at), name=f"judge {self.key}"
        )

    async def _judged(self, report: RunReport, judge: DaemonJudge, finished_at: float) -> None:
        """The published run judged, its judged figures published when the judge is done.

        After the run is published, never before: the target's figures are final and
        served whatever the judge does (judge traffic never counts in them), a hanging,
        dripping or rate-limited judge delays only the judged figures, and a shutdown
        during judging cancels the judge, never the run."""
        judged = await judge.judge(report)
        if judged is not report:
            await asyncio.shield(self.publisher.publish_judged(judged, finished_at))

    def _log_run(self, report: RunReport, outcome: str) -> None:
        """The run's log line, and its warnings (ids that match nothing, figures out of
        range)."""
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
        warning = out_of_range_warning(report.cases)
        if warning is not None:
            log.warning(
                "figures_out_of_range",
                job=self.key,
                message=warning,
                out_of_range=dict(report.summary.out_of_range),
            )

    def _finish_broken(self, started: float, reason: str) -> None:
        self.publisher.broken(time.perf_counter() - started)
        log.error("run", job=self.key, outcome="failed", reason=reason)

    def _shard(self) -> tuple[GoldenCase, ...]:
        return shard_cases(self.dataset.cases, self.settings.shard_index, self.settings.shard_count)


def _flat_summary(summary: Summary) -> dict[str, Any]:
    data = summary.to_dict()
    data.pop("by_tag", None)
    data.pop("totals", None)
    return data

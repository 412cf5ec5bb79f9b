"""The daemon: builds every job from the settings, schedules runs, serves, shuts down cleanly."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import structlog
from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobSubmissionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from evaluator._version import __version__
from evaluator.config import Settings
from evaluator.daemon.access import Access, resolve_token
from evaluator.daemon.baseline import BaselineGate
from evaluator.daemon.exporter import JobSnapshot, Metrics
from evaluator.daemon.job import JobRunner, Rejection
from evaluator.daemon.judging import DaemonJudge
from evaluator.daemon.otlp_metrics import OtlpCollector
from evaluator.daemon.pages import StatusPages
from evaluator.daemon.schedule import build_trigger, first_run, interval_of, staggered_starts
from evaluator.daemon.server import HttpEndpoints, parse_listen
from evaluator.daemon.slo import TrackedSlo, track_slos
from evaluator.dataset import load_dataset
from evaluator.errors import ConfigError, EvaluatorError, ExitCode
from evaluator.factory import build_target
from evaluator.history.recorder import HistoryRecorder, HistorySettings
from evaluator.models import Dataset
from evaluator.redaction import redact_registered
from evaluator.run import otlp
from evaluator.slo.ledger import EventLedger
from evaluator.targets import offload
from evaluator.targets.base import Target

__all__ = ["Daemon", "serve", "without_created_series"]

log = structlog.get_logger("evaluator.daemon")

#: settings a reload cannot change in a running process (logged: they need a restart)
_RESTART_ONLY = ("listen", "histogram_buckets", "log_format", "log_level", "otlp", "server")


def _runtime_registry() -> CollectorRegistry:
    """Process, platform and GC metrics: few series, changing all the time, never cached."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(OtlpCollector())
    return registry


class Daemon:
    """Everything ``evaluator serve`` runs, in one object that tests can start and stop.

    Example::

        daemon = Daemon(settings)
        await daemon.start()      # loads golden sets, binds the port, starts the scheduler
        await daemon.stop()       # finishes running runs within the grace period
    """

    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry | None = None,
        reload: Callable[[], Settings] | None = None,
    ) -> None:
        self.settings = settings
        #: reads the configuration again (SIGHUP); None: reloading is not possible
        self._load_settings = reload
        self._reload_lock = asyncio.Lock()
        self._retiring: set[asyncio.Task[None]] = set()
        self.registry = registry or CollectorRegistry()
        self.metrics = Metrics(self.registry, settings.histogram_buckets)
        self.runtime_registry = _runtime_registry()
        self.jobs: list[JobRunner] = []
        #: the last SIGHUP's configuration, rejected (None: the one running is the last read)
        self.config_rejected: Rejection | None = None
        #: every SLO with its plan and ledger, by name (swapped whole by a reload)
        self.slos: dict[str, TrackedSlo] = {}
        self.history: HistoryRecorder | None = None
        h = settings.history
        if h.enabled:
            self.history = HistoryRecorder(
                settings.reports_dir,
                HistorySettings(h.window, h.recent, h.alpha, h.keep_runs, h.max_age_days),
            )
        self._targets: list[Target] = []
        self._scheduler: AsyncIOScheduler | None = None
        self._running: set[asyncio.Task[str]] = set()
        self._ready = False
        self._stopping = False
        self.http = HttpEndpoints(
            self.metrics,
            runtime=self.runtime_registry,
            healthy=self._healthy,
            ready=lambda: self._ready,
            latest_reports=lambda: {j.labels: j.store.latest for j in self.jobs},
            pages=StatusPages(
                lambda: self.jobs,
                redact=redact_registered,
                trends=self.history.store if self.history is not None else None,
                history=self.history.store if self.history is not None else None,
                config_rejected=lambda: self.config_rejected,
                slos=lambda: self.slos,
            ),
            histories=lambda: {j.labels: j.state.history for j in self.jobs},
        )

    def _healthy(self) -> bool:
        return self._scheduler is not None and self._scheduler.running

    async def _build_jobs(self) -> None:
        """Targets and golden sets; raises ConfigError or DatasetError before anything starts."""
        datasets = await _load_datasets(self.settings)
        self.jobs = self._build_runners(self.settings, self._targets, datasets)

    def _build_runners(
        self, settings: Settings, targets_out: list[Target], datasets: dict[str, Dataset]
    ) -> list[JobRunner]:
        """A runner per job of ``settings``, its golden set from ``datasets`` (by path, see
        :func:`_load_datasets`); every target built goes to ``targets_out`` (to be closed
        even when a later job fails). Raises ConfigError."""
        targets: dict[str, Target] = {}
        runners: list[JobRunner] = []
        for job in settings.jobs:
            if job.target not in targets:
                targets[job.target] = build_target(settings.target(job.target))
                targets_out.append(targets[job.target])
            loaded = datasets[str(job.dataset)]
            dataset = replace(loaded, name=job.dataset_name)
            gate = None
            if job.baseline is not None:
                gate = BaselineGate.load(job.baseline, settings.gates_file)
            judge = None
            if settings.judge_for(job) is not None:
                labels = (targets[job.target].name, dataset.name)
                judge = DaemonJudge.for_job(settings, job, self.metrics, labels)
            runners.append(
                JobRunner(
                    job=job,
                    settings=settings,
                    target=targets[job.target],
                    dataset=dataset,
                    metrics=self.metrics,
                    gate=gate,
                    history=self.history,
                    judge=judge,
                    slo_ledgers=self._slo_ledgers,
                )
            )
        return runners

    def _add_job(self, runner: JobRunner, interval: float | None) -> None:
        """Publish a job's series (its judge's too, when it has one), at zero."""
        self.metrics.add_job(self._snapshot(runner, interval))
        if runner.judge is not None:
            self.metrics.judge_added(runner.labels)

    def _snapshot(self, runner: JobRunner, interval: float | None) -> JobSnapshot:
        return JobSnapshot(
            target=runner.labels[0],
            dataset=runner.labels[1],
            k=runner.options.k,
            config_hash=runner.config_hash,
            dataset_hash=runner.dataset.content_hash,
            interval_seconds=interval,
            shard_count=self.settings.shard_count,
            baseline=runner.gate.ratios() if runner.gate is not None else {},
            slos=tuple(s.name for s in runner.slos),
        )

    async def start(self) -> None:
        """Load, bind, schedule. Raises ConfigError/DatasetError on a bad start (exit 1)."""
        if not self.settings.jobs:
            raise ConfigError(
                "no job configured: pass --dataset and --target-url, or [[jobs]] in the config"
            )
        # what the HTTP surface allows is settled first: a token that cannot be read stops here
        host, port = parse_listen(self.settings.listen)
        server = self.settings.server
        self.http.access = Access(server.allowed_hosts, resolve_token(server.token), host)
        await self._build_jobs()
        await self._track_slos(self.settings)
        otlp.install(**self.settings.otlp.model_dump())
        now = datetime.now(UTC)
        scheduler = AsyncIOScheduler(
            timezone=UTC,
            job_defaults={
                "coalesce": True,  # after a pause, one catch-up run, not a burst
                "max_instances": 1,  # a run still going makes the next one a skip
                "misfire_grace_time": None,  # late is better than silently missed
            },
        )
        starts = staggered_starts([r.job for r in self.jobs], now)
        for runner, start in zip(self.jobs, starts, strict=True):
            trigger = build_trigger(runner.job, start)
            interval = interval_of(trigger, now)
            self._add_job(runner, interval)
            runner.restore()
            await runner.publisher.restore_history()
            self._schedule(scheduler, runner, trigger, first_run(runner.job, trigger, start))
        scheduler.add_listener(self._on_max_instances, EVENT_JOB_MAX_INSTANCES)
        await self.http.start(host, port)
        scheduler.start()
        self._scheduler = scheduler
        self._ready = True
        log.info(
            "daemon_started",
            version=__version__,
            listen=f"{host}:{self.http.port}",
            jobs=[
                {
                    "job": j.key,
                    "target": j.labels[0],
                    "dataset": j.labels[1],
                    "cases": len(j.dataset.cases),
                    "config_hash": j.config_hash,
                }
                for j in self.jobs
            ],
        )

    def _slo_ledgers(self) -> dict[str, EventLedger]:
        return {name: tracked.ledger for name, tracked in self.slos.items()}

    async def _track_slos(self, settings: Settings) -> None:
        """Each SLO's objective and window on /metrics (the series of exactly these), and
        its ledger: kept across a reload, else restored from the history store."""
        self.metrics.slos_configured(
            {slo.name: (slo.objective, slo.window_seconds) for slo in settings.slos}
        )
        self.slos, fresh = track_slos(settings, self.slos)
        if not fresh or self.history is None:
            return
        windows = {name: self.slos[name].config.window_seconds for name in fresh}
        loop = asyncio.get_running_loop()
        kept, errors = await loop.run_in_executor(
            self.history.executor, self.history.load_slo_events, windows
        )
        for name, entries in kept.items():
            self.slos[name].ledger.restore(entries)
        if errors:
            log.error("slo_events_not_restored", slos=sorted(fresh), errors=list(errors))

    def _schedule(
        self, scheduler: AsyncIOScheduler, runner: JobRunner, trigger: Any, first: datetime | None
    ) -> None:
        """The job's runs on ``trigger``, the first at ``first``; and its judge's drift
        checks, when its judge has drift labels, on a schedule of their own (never inside a
        run), re-judging with this runner's judge: the one the last reload configured."""
        scheduler.add_job(
            self._fire, trigger, args=[runner], id=runner.key, name=runner.key, next_run_time=first
        )
        judge = runner.judge
        drift = judge.config.drift_interval_seconds if judge is not None else None
        if judge is not None and judge.config.drift_labels is not None and drift is not None:
            scheduler.add_job(judge.check_drift, "interval", seconds=drift, id=_drift_id(runner))

    def _on_max_instances(self, event: JobSubmissionEvent) -> None:
        for runner in self.jobs:
            if runner.key == event.job_id:
                runner.skipped()

    async def reload(self) -> bool:
        """Read the configuration and golden sets again (SIGHUP) and swap the jobs.

        Everything is built before anything is swapped: on any error the old jobs keep
        running, the failure is logged and counted, and False is returned. A run going on
        finishes with the old target, which is closed after it.
        """
        async with self._reload_lock:
            if self._load_settings is None or self._scheduler is None or self._stopping:
                log.warning("config_reload_skipped", reason="the daemon is not running")
                return False
            built: list[Target] = []
            try:
                settings = self._load_settings()
                datasets = await _load_datasets(settings)
                runners = self._build_runners(settings, built, datasets)
                if not settings.jobs:
                    raise ConfigError("no job configured")
                now = datetime.now(UTC)
                for runner in runners:  # a schedule that cannot be built fails the reload
                    build_trigger(runner.job, now)
            except Exception as exc:  # a reload never takes the daemon down, whatever failed
                for target in built:
                    await target.aclose()
                self.metrics.config_reloaded(False)
                error = (
                    str(exc) if isinstance(exc, EvaluatorError) else f"{type(exc).__name__}: {exc}"
                )
                log.error("config_reload_failed", error=error, kept_jobs=len(self.jobs))
                self.config_rejected = Rejection(time.time(), error)
                return False
            for runner in self._swap(settings, runners, built, now):
                await runner.publisher.restore_history()
            await self._track_slos(settings)
            self.metrics.config_reloaded(True)
            self.config_rejected = None
            return True

    def _swap(
        self,
        settings: Settings,
        runners: list[JobRunner],
        targets: list[Target],
        now: datetime,
    ) -> list[JobRunner]:
        """Swap the jobs; returns the new ones (not there before), whose history to restore."""
        scheduler = self._scheduler
        assert scheduler is not None
        old = {r.key: r for r in self.jobs}
        next_runs = self._unschedule(scheduler, old.values(), {r.labels for r in runners})
        starts = self._newcomer_starts(runners, now)
        for runner in runners:
            # a job kept across the reload keeps its rhythm: no extra run because of it
            start = starts.get(runner) or next_runs.get(runner.key, now)
            trigger = build_trigger(runner.job, start)
            interval = interval_of(trigger, now)
            if runner not in starts:
                self._keep_job(runner, old.get(runner.key), interval)
                first = trigger.get_next_fire_time(None, now)
            else:  # a new job starts as at start-up
                self._add_job(runner, interval)
                runner.restore()
                first = first_run(runner.job, trigger, start)
            self._schedule(scheduler, runner, trigger, first)
        before = self.settings
        self._retire_later(list(old.values()), targets)
        self.settings, self.jobs = settings, runners
        _log_reload(before, settings, runners, removed=sorted(set(old) - {r.key for r in runners}))
        return list(starts)

    def _newcomer_starts(
        self, runners: list[JobRunner], now: datetime
    ) -> dict[JobRunner, datetime]:
        """The jobs new to the daemon (no series yet), in order, each with its first start:
        as at start-up, staggered among themselves."""
        newcomers = [r for r in runners if self.metrics.snapshot(r.labels) is None]
        return dict(zip(newcomers, staggered_starts([r.job for r in newcomers], now), strict=True))

    def _unschedule(
        self,
        scheduler: AsyncIOScheduler,
        old: Iterable[JobRunner],
        kept_labels: set[tuple[str, str]],
    ) -> dict[str, datetime]:
        """Remove the old jobs from the scheduler (and the series of the jobs the reload
        dropped); returns each one's next run time, for the kept jobs to keep their rhythm."""
        next_runs: dict[str, datetime] = {}
        for runner in old:
            scheduled = scheduler.get_job(runner.key)
            if scheduled is not None:
                if scheduled.next_run_time is not None:
                    next_runs[runner.key] = scheduled.next_run_time
                scheduled.remove()
            # the old judge's drift checks go with it (the new runner schedules its own)
            if scheduler.get_job(_drift_id(runner)) is not None:
                scheduler.remove_job(_drift_id(runner))
            if runner.labels not in kept_labels:
                self.metrics.remove_job(runner.labels)
        return next_runs

    def _keep_job(
        self, runner: JobRunner, previous: JobRunner | None, interval: float | None
    ) -> None:
        """A job kept across the reload: the same series, the last results kept, the new
        identity (K, hashes, interval, baseline, SLOs) taken."""
        fresh = self._snapshot(runner, interval)
        self.metrics.job_reconfigured(
            runner.labels,
            k=fresh.k,
            config_hash=fresh.config_hash,
            dataset_hash=fresh.dataset_hash,
            interval_seconds=interval,
            baseline=fresh.baseline,
            slos=fresh.slos,
        )
        if runner.judge is not None:  # a judge the reload gave the job
            self.metrics.judge_added(runner.labels)
        if previous is not None:
            runner.publisher.carry_over(previous.publisher)
            if runner.judge is not None and previous.judge is not None:
                # the latest judged answers: the new judge's drift re-judges them at once
                runner.judge.latest = previous.judge.latest

    def _retire_later(self, old: list[JobRunner], targets: list[Target]) -> None:
        """Take the new targets; the old ones close once the runs using them are over."""
        retired, self._targets = self._targets, targets
        task = asyncio.create_task(self._retire(old, retired, list(self._running)))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def _retire(
        self, runners: list[JobRunner], targets: list[Target], running: list[asyncio.Task[str]]
    ) -> None:
        """Close the targets of the old configuration once the runs using them are over
        (and the old judges once their passes are)."""
        waiting: list[asyncio.Task[Any]] = [*running, *self._judging(runners)]
        if waiting:
            await asyncio.wait(waiting)
        for runner in runners:
            await runner.publisher.drain_history(10.0)
            if runner.judge is not None:
                await runner.judge.aclose()
        for target in targets:
            await target.aclose()

    async def _fire(self, runner: JobRunner) -> None:
        if self._stopping:
            return
        if any(t.get_name() == f"run {runner.key}" for t in self._running):
            runner.skipped()  # the same job's run from before a reload is still going
            return
        task = asyncio.create_task(runner.run(), name=f"run {runner.key}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        # shielded: the scheduler's shutdown cancels its job coroutines; our stop() decides
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            # cancelled by stop(), which logs it: not a job error for the scheduler to report

    async def stop(self) -> None:
        """Stop scheduling, let running runs finish within the grace period, then cancel them."""
        self._stopping = True
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.pause()
        cancelled = await self._finish_runs(self.settings.shutdown_grace_seconds)
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.shutdown(wait=False)
            await asyncio.sleep(0)
        if self._retiring:
            await asyncio.wait(list(self._retiring), timeout=5)
        await self._close()
        totals: dict[str, int] = {}
        for runner in self.jobs:
            for outcome, n in runner.state.runs_by_outcome.items():
                totals[outcome] = totals.get(outcome, 0) + n
        log.info("daemon_stopped", runs=totals, cancelled_runs=cancelled)

    async def _finish_runs(self, grace: float) -> int:
        """Let the running runs finish within ``grace`` seconds, then cancel the rest (and
        give them 5 s to unwind); returns how many were cancelled."""
        running: list[asyncio.Task[Any]] = [*self._running, *self._judging()]
        if not running:
            return 0
        log.info("shutdown_waiting", runs=len(running), grace_seconds=grace)
        _, pending = await asyncio.wait(running, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
        return len(pending)

    def _judging(self, runners: Iterable[JobRunner] | None = None) -> list[asyncio.Task[None]]:
        """The judges' passes still going (over published runs), of ``runners`` (default:
        the jobs')."""
        tasks = (r.judging for r in (self.jobs if runners is None else runners))
        return [t for t in tasks if t is not None and not t.done()]

    async def _close(self) -> None:
        """Write the last history, then close the store, the targets, the decoding child,
        the judges, the span exporter and the HTTP server, in that order."""
        for runner in self.jobs:
            await runner.publisher.drain_history(10.0)
        if self.history is not None:
            await asyncio.to_thread(self.history.close)
        for target in self._targets:
            await target.aclose()
        offload.shutdown()  # the child process that decodes large bodies
        for runner in self.jobs:
            if runner.judge is not None:
                await runner.judge.aclose()
        # the spans of the last runs are sent before exit (bounded by the export timeout)
        await asyncio.to_thread(otlp.shutdown)
        await self.http.stop()

    async def run_until_signal(self) -> None:
        """Start, wait for SIGTERM or SIGINT, stop; SIGHUP reloads the configuration."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        reloads: set[asyncio.Task[bool]] = set()

        def on_hup() -> None:
            log.info("config_reload_requested", signal="SIGHUP")
            task = loop.create_task(self.reload())
            reloads.add(task)
            task.add_done_callback(reloads.discard)

        # Prometheus's convention: SIGHUP reloads, it does not kill (the default: exit 129)
        loop.add_signal_handler(signal.SIGHUP, on_hup)
        try:
            await self.start()
            await stop.wait()
            log.info("shutdown_requested")
        finally:
            await self.stop()


def _drift_id(runner: JobRunner) -> str:
    """The scheduler's id of a job's judge drift checks."""
    return f"{runner.key} drift"


def _log_reload(
    before: Settings, settings: Settings, runners: list[JobRunner], *, removed: list[str]
) -> None:
    """Log the reloaded jobs, the removed ones, and the settings only a restart applies."""
    needs_restart = [n for n in _RESTART_ONLY if getattr(settings, n) != getattr(before, n)]
    log.info(
        "config_reloaded",
        jobs=[
            {"job": j.key, "cases": len(j.dataset.cases), "config_hash": j.config_hash}
            for j in runners
        ],
        removed=removed,
        needs_restart=needs_restart,
    )
    if needs_restart:
        log.warning("config_reload_needs_restart", fields=needs_restart)


async def _load_datasets(settings: Settings) -> dict[str, Dataset]:
    """Every golden set of ``settings`` by path, each read once, in a worker thread: on
    start and SIGHUP the event loop (``/healthz``, the running jobs, SIGTERM) never waits
    for a golden set, and :func:`~evaluator.dataset.load_dataset` reads only a regular file
    within its cap (a FIFO in its place froze the daemon, ``/dev/zero`` read 3 GB).

    Raises:
        DatasetError: a golden set cannot be read or is invalid.
    """
    datasets: dict[str, Dataset] = {}
    for job in settings.jobs:
        key = str(job.dataset)
        if key not in datasets:
            datasets[key] = await asyncio.to_thread(load_dataset, job.dataset)
    return datasets


def without_created_series() -> None:
    """Turn off prometheus_client's ``_created`` series, process-wide, before any daemon.

    They double the series count and no dashboard or alert uses them. The one call site
    for the switch (untyped in prometheus_client): ``evaluator serve`` and the demo.
    """
    disable_created_metrics()  # type: ignore[no-untyped-call]


def serve(settings: Settings, reload: Callable[[], Settings] | None = None) -> int:
    """Run the daemon until a signal; exit code 0 after a clean shutdown.

    ``reload`` reads the configuration again when SIGHUP arrives.
    """
    started = time.perf_counter()
    without_created_series()
    # the event loop's thread takes the GIL back from a busy worker (a large body parsed, a
    # long answer normalised) within 1 ms rather than CPython's default 5 ms: each of the
    # loop's syscalls releases it, and at 5 ms a callback with a few of them waited long
    # enough to stall /healthz past 250 ms
    sys.setswitchinterval(0.001)
    asyncio.run(Daemon(settings, reload=reload).run_until_signal())
    log.info("daemon_exit", uptime_seconds=round(time.perf_counter() - started, 3))
    return ExitCode.OK

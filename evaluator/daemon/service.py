"""The daemon: builds every job from the settings, schedules runs, serves, shuts down cleanly."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
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
from evaluator.daemon.baseline import BaselineGate
from evaluator.daemon.exporter import JobSnapshot, Metrics
from evaluator.daemon.job import JobRunner
from evaluator.daemon.pages import StatusPages
from evaluator.daemon.schedule import build_trigger, interval_of, stagger_offsets
from evaluator.daemon.server import HttpEndpoints, parse_listen
from evaluator.dataset import load_dataset
from evaluator.errors import ConfigError, ExitCode
from evaluator.factory import build_target
from evaluator.models import Dataset
from evaluator.targets.base import Target

__all__ = ["Daemon", "serve"]

log = structlog.get_logger("evaluator.daemon")

#: first runs of several jobs are spread over at most this many seconds
_STAGGER_SPREAD_SECONDS = 10.0


def _runtime_registry() -> CollectorRegistry:
    """Process, platform and GC metrics: few series, changing all the time, never cached."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


class Daemon:
    """Everything ``evaluator serve`` runs, in one object that tests can start and stop.

    Example::

        daemon = Daemon(settings)
        await daemon.start()      # loads golden sets, binds the port, starts the scheduler
        await daemon.stop()       # finishes running runs within the grace period
    """

    def __init__(self, settings: Settings, registry: CollectorRegistry | None = None) -> None:
        self.settings = settings
        self.registry = registry or CollectorRegistry()
        self.metrics = Metrics(self.registry, settings.histogram_buckets)
        self.runtime_registry = _runtime_registry()
        self.jobs: list[JobRunner] = []
        self._targets: list[Target] = []
        self._scheduler: AsyncIOScheduler | None = None
        self._running: set[asyncio.Task[str]] = set()
        self._ready = False
        self._stopping = False
        self.http = HttpEndpoints(
            self.registry,
            runtime=self.runtime_registry,
            generation=lambda: self.metrics.generation,
            healthy=self._healthy,
            ready=lambda: self._ready,
            latest_reports=lambda: {j.labels: j.store.latest for j in self.jobs},
            pages=StatusPages(lambda: self.jobs, redact=self._redact),
        )

    def _redact(self, text: str) -> str:
        """Every target's secrets masked: the pages show what endpoints sent back."""
        for target in self._targets:
            redact = getattr(target, "redact", None) or getattr(target, "_redact", None)
            if callable(redact):
                text = redact(text)
        return text

    def _healthy(self) -> bool:
        return self._scheduler is not None and self._scheduler.running

    def _build_jobs(self) -> None:
        """Targets and golden sets; raises ConfigError or DatasetError before anything starts."""
        targets: dict[str, Target] = {}
        datasets: dict[str, Dataset] = {}
        for job in self.settings.jobs:
            if job.target not in targets:
                targets[job.target] = build_target(self.settings.target(job.target))
                self._targets.append(targets[job.target])  # closed by stop() even if start fails
            key = str(job.dataset)
            if key not in datasets:
                datasets[key] = load_dataset(job.dataset)
            loaded = datasets[key]
            dataset = replace(loaded, name=job.dataset_name)
            gate = None
            if job.baseline is not None:
                gate = BaselineGate.load(job.baseline, self.settings.gates_file)
            self.jobs.append(
                JobRunner(
                    job=job,
                    settings=self.settings,
                    target=targets[job.target],
                    dataset=dataset,
                    metrics=self.metrics,
                    gate=gate,
                )
            )

    async def start(self) -> None:
        """Load, bind, schedule. Raises ConfigError/DatasetError on a bad start (exit 1)."""
        if not self.settings.jobs:
            raise ConfigError(
                "no job configured: pass --dataset and --target-url, or [[jobs]] in the config"
            )
        self._build_jobs()
        now = datetime.now(UTC)
        scheduler = AsyncIOScheduler(
            timezone=UTC,
            job_defaults={
                "coalesce": True,  # after a pause, one catch-up run, not a burst
                "max_instances": 1,  # a run still going makes the next one a skip
                "misfire_grace_time": None,  # late is better than silently missed
            },
        )
        offsets = stagger_offsets(len(self.jobs), _STAGGER_SPREAD_SECONDS)
        for runner, offset in zip(self.jobs, offsets, strict=True):
            start = now + timedelta(seconds=offset)
            trigger = build_trigger(runner.job, start)
            interval = interval_of(trigger, now)
            self.metrics.add_job(
                JobSnapshot(
                    target=runner.labels[0],
                    dataset=runner.labels[1],
                    k=runner.options.k,
                    config_hash=runner.config_hash,
                    dataset_hash=runner.dataset.content_hash,
                    interval_seconds=interval,
                    baseline=runner.gate.ratios() if runner.gate is not None else {},
                )
            )
            runner.restore()
            extra: dict[str, Any] = {}
            if runner.job.run_at_start:
                extra["next_run_time"] = start
            else:
                # one period after the staggered start (the trigger alone would fire at it)
                extra["next_run_time"] = trigger.get_next_fire_time(start, start)
            scheduler.add_job(
                self._fire, trigger, args=[runner], id=runner.key, name=runner.key, **extra
            )
        scheduler.add_listener(self._on_max_instances, EVENT_JOB_MAX_INSTANCES)
        host, port = parse_listen(self.settings.listen)
        await self.http.start(host, port)
        scheduler.start()
        self._scheduler = scheduler
        self._ready = True
        log.info(
            "daemon_started",
            version=__version__,
            listen=f"{host}:{self.http.port}",
            jobs=[
                {"job": j.key, "target": j.labels[0], "dataset": j.labels[1],
                 "cases": len(j.dataset.cases), "config_hash": j.config_hash}
                for j in self.jobs
            ],
        )  # fmt: skip

    def _on_max_instances(self, event: JobSubmissionEvent) -> None:
        for runner in self.jobs:
            if runner.key == event.job_id:
                runner.skipped()

    async def _fire(self, runner: JobRunner) -> None:
        if self._stopping:
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
        running = list(self._running)
        grace = self.settings.shutdown_grace_seconds
        cancelled = 0
        if running:
            log.info("shutdown_waiting", runs=len(running), grace_seconds=grace)
            _, pending = await asyncio.wait(running, timeout=grace)
            for task in pending:
                task.cancel()
                cancelled += 1
            if pending:
                await asyncio.wait(pending, timeout=5)
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.shutdown(wait=False)
            await asyncio.sleep(0)
        for target in self._targets:
            await target.aclose()
        await self.http.stop()
        totals: dict[str, int] = {}
        for runner in self.jobs:
            for outcome, n in runner.runs_by_outcome.items():
                totals[outcome] = totals.get(outcome, 0) + n
        log.info("daemon_stopped", runs=totals, cancelled_runs=cancelled)

    async def run_until_signal(self) -> None:
        """Start, wait for SIGTERM or SIGINT, stop."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await self.start()
            await stop.wait()
            log.info("shutdown_requested")
        finally:
            await self.stop()


def serve(settings: Settings) -> int:
    """Run the daemon until a signal; exit code 0 after a clean shutdown."""
    started = time.perf_counter()
    # `_created` series double the series count and no dashboard or alert uses them
    disable_created_metrics()  # type: ignore[no-untyped-call]
    asyncio.run(Daemon(settings).run_until_signal())
    log.info("daemon_exit", uptime_seconds=round(time.perf_counter() - started, 3))
    return ExitCode.OK

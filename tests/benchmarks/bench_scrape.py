"""``/metrics`` scrape time with 5 targets x 3 golden sets x 6 stages (15 jobs).

1. In process: a :class:`evaluator.daemon.exporter.Metrics` registry with the daemon's collectors
   (process, platform, GC), populated as after real runs: a real 200-case ``run_dataset``
   per job (a callable target reporting 6 stage timings) observed case by case into the
   histograms (with exemplars), runs counted, snapshots holding the summary, gate rules and
   baseline ratios. Timed, median of ``SCRAPES``: what the daemon encodes for a scrape after
   one more case of every job (every job's histograms changed: runs overlapping), Prometheus
   text and OpenMetrics (with exemplars). For comparison (details): everything re-encoded
   (the first scrape), and prometheus_client's ``generate_latest`` of the whole registry
   from scratch (what every scrape cost before the exposition was kept encoded).
2. Over HTTP: ``evaluator serve`` as a subprocess with the same 15 jobs (callable targets,
   200 cases each), after every job's first run: ``GET /metrics`` from this process on a
   kept-alive connection, text and OpenMetrics, median of ``SCRAPES`` each. Between runs
   nothing changes, so the daemon serves its cached encoding (plus fresh process metrics).

3. In process, the two ways side by side (issue 25 item 6: prometheus_client plainly, unless
   measurement shows it cannot keep the 5 ms rule): 51 jobs (17 targets x 3 golden sets,
   ~10,000 series) populated as in 1., one event loop with 25 cases in flight against the
   50 ms endpoint (a subprocess), each finished case observed into a job's series, and a
   scrape every 0.25 s, for ``LOOP_SECONDS`` per way: the daemon's own /metrics handler
   (the kept encoding, in slices on the loop) and prometheus_client's instruments encoded
   by ``generate_latest`` in a worker thread (``asyncio.to_thread``; also with the GIL
   switch interval lowered to 1 ms while it runs) and on the loop. For each way, the
   latency a scrape adds to the cases it overlaps (P50, P95, max of their added latency
   minus that of the cases clear of every scrape) and the scrape's own time.

Goal (issue 25, relaxed from issue 15's 10 ms): the scrape of 50 overlapping jobs, median
under 250 ms. The 15-job figures keep no goal of their own (issue 15's 5 ms encoding goal
gave way to issue 25's rule on the latency a scrape adds to a case being measured, which
``bench_platform`` measures).

``python -m tests.benchmarks.run --only scrape``
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from unittest import mock

import aiohttp
from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from evaluator.config import DEFAULT_BUCKETS
from evaluator.daemon.exporter import GateState, JobSnapshot, Metrics
from evaluator.models import CaseRecord
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.callable import CallableTarget
from tests.benchmarks.support import (
    REPO,
    figure,
    golden_set,
    golden_set_bytes,
    median,
    nearest_rank,
    profile,
    quick,
)

TARGETS = 5
DATASETS = 3
CASES = 200
SCRAPES = 200
HTTP_SCRAPES = 50
GOAL_MS = 5.0
#: issue 25 (relaxed from issue 15's 10 ms): 50 jobs, runs overlapping, median under 250 ms
OVERLAP_JOBS = 50
OVERLAP_CASES = 100
OVERLAP_SECONDS = 20.0
OVERLAP_GOAL_MS = 250.0
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def _registry() -> tuple[CollectorRegistry, Metrics]:
    """As ``evaluator serve`` builds it (``Daemon._registry``; ``_created`` series off)."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry, Metrics(registry, DEFAULT_BUCKETS)


async def _populate(
    metrics: Metrics,
    targets: int = TARGETS,
    also: Callable[[tuple[str, str], CaseRecord, str], object] = lambda *_: None,
) -> tuple[int, CaseRecord]:
    """Every job (``targets`` x ``DATASETS``) after two real runs, each case also handed to
    ``also``; returns the number of stages seen and a case."""
    target = CallableTarget("tests.benchmarks.support:answer", name="bench")
    stages: set[str] = set()
    for d in range(DATASETS):
        dataset = golden_set(CASES, seed=d, name=f"golden-{d}")
        report = await run_dataset(dataset, target, RunOptions(k=5, concurrency=4))
        for t in range(targets):
            labels = (f"target-{t}", dataset.name)
            metrics.add_job(
                JobSnapshot(
                    target=labels[0],
                    dataset=labels[1],
                    k=5,
                    config_hash=f"{t}{d}" * 8,
                    dataset_hash=dataset.content_hash,
                    interval_seconds=300.0,
                    baseline={"recall_at_k": 0.9, "mrr": 0.8, "citation_precision": 0.97},
                )
            )
            for run_no in range(2):
                run_id = f"run-{t}-{d}-{run_no}"
                for record in report.cases:
                    metrics.case_finished(labels, record, run_id)
                    also(labels, record, run_id)
                    stages.update(record.stage_seconds)
                metrics.run_counted(labels, "complete")
            metrics.run_finished(
                labels,
                finished_at=time.time(),
                duration_seconds=report.duration_seconds,
                error_ratio=report.summary.error_rate,
                complete=report.summary,
                gate=GateState(
                    passing=True,
                    rules_failing={"recall_at_k": False, "mrr": False, "p95_seconds": False},
                ),
            )
    return len(stages), report.cases[-1]


def _time(
    encode: Callable[[], bytes], change: Callable[[], object] = lambda: None, n: int = SCRAPES
) -> tuple[list[float], int]:
    """ms per ``encode()``, each after an untimed ``change()``; and the body's size."""
    encode()  # warm-up
    timings = []
    for _ in range(n):
        change()
        started = time.perf_counter()
        body = encode()
        timings.append((time.perf_counter() - started) * 1000)
    return timings, len(body)


def _daemon_scrape(metrics: Metrics, openmetrics: bool) -> Callable[[], bytes]:
    """What the daemon's /metrics handler encodes (its slices run back to back here)."""

    def encode() -> bytes:
        while not metrics.refresh(openmetrics=openmetrics, budget_seconds=0.005):
            pass
        return metrics.exposition_body(openmetrics=openmetrics)

    return encode


def _one_case_per_job(metrics: Metrics, record: CaseRecord) -> Callable[[], None]:
    """Every job finishes one more case: every job's histograms must be encoded again."""
    jobs = [(f"target-{t}", f"golden-{d}") for d in range(DATASETS) for t in range(TARGETS)]

    def change() -> None:
        for labels in jobs:
            metrics.case_finished(labels, record, "run-next")

    return change


def _scrapes(change: Callable[[], object], encode: Callable[[], bytes]) -> Callable[[], object]:
    return lambda: [(change(), encode()) for _ in range(20)]


def _everything_changed(metrics: Metrics) -> None:
    for family in metrics.exposition.families:
        for cell in family.cells.values():
            cell.changed()


def _series(text: str) -> int:
    return sum(len(family.samples) for family in text_string_to_metric_families(text))


def _series_by_family(registry: CollectorRegistry) -> dict[str, int]:
    text = generate_latest(registry).decode()
    counts = {f.name: len(f.samples) for f in text_string_to_metric_families(text)}
    return dict(sorted(counts.items(), key=lambda kv: kv[1], reverse=True))


def _collect_ms(registry: CollectorRegistry) -> float:
    """Collecting alone (every collector's samples, no formatting), median ms."""
    timings = []
    for _ in range(SCRAPES // 4):
        started = time.perf_counter()
        list(registry.collect())
        timings.append((time.perf_counter() - started) * 1000)
    return median(timings)


def _http_scrapes() -> dict[str, Any]:
    """The real thing: ``evaluator serve`` with 15 jobs, scraped over loopback."""
    from tests.support.prometheus import DaemonProcess

    with tempfile.TemporaryDirectory() as tmp:
        lines = [f'reports_dir = "{Path(tmp, "reports")}"', 'log_format = "json"', ""]
        for t in range(TARGETS):
            lines += [
                "[[targets]]",
                f'name = "target-{t}"',
                'callable = "tests.benchmarks.support:answer"',
                "",
            ]
        for d in range(DATASETS):
            path = Path(tmp, f"golden-{d}.jsonl")
            path.write_bytes(golden_set_bytes(CASES, seed=d))
            for t in range(TARGETS):
                lines += [
                    "[[jobs]]",
                    f'target = "target-{t}"',
                    f'dataset = "{path}"',
                    "interval_seconds = 3600",
                    "",
                ]
        config = Path(tmp, "evaluator.toml")
        config.write_text("\n".join(lines), "utf-8")
        env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        }
        with DaemonProcess(["--config", str(config)], workdir=Path(tmp), env=env) as daemon:
            daemon.wait_ready(timeout=60)
            # first runs are staggered (0.5 s a job): wait for all 15 (bounded)
            jobs = TARGETS * DATASETS
            deadline = time.monotonic() + 60
            done = 0
            while time.monotonic() < deadline:
                done = sum(1 for e in daemon.logs() if e.get("event") == "run")
                if done >= jobs:
                    break
                time.sleep(0.2)
            if done < jobs:
                raise RuntimeError(f"only {done} of {jobs} first runs finished within 60 s")
            out: dict[str, Any] = {}
            for name, accept in (("text", "text/plain"), ("openmetrics", OPENMETRICS)):
                daemon.get("/metrics", headers={"Accept": accept})  # warm-up
                timings, size, status = [], 0, 0
                for _ in range(HTTP_SCRAPES):
                    started = time.perf_counter()
                    response = daemon.get("/metrics", headers={"Accept": accept})
                    timings.append((time.perf_counter() - started) * 1000)
                    size, status = len(response.content), response.status_code
                    if status != 200:
                        raise RuntimeError(f"/metrics answered {status}")
                out[name] = {"ms": timings, "bytes": size}
            text = daemon.get("/metrics").text
            out["series"] = _series(text)
            daemon.stop()
    return out


def _overlapping_config(tmp: Path, jobs: int, cases: int) -> Path:
    """``jobs`` jobs of ``cases`` cases each, 50 ms per case at concurrency 2, every 2 s:
    each run lasts longer than its interval, so every job is always mid-run."""
    path = Path(tmp, "golden.jsonl")
    path.write_bytes(golden_set_bytes(cases))
    lines = [f'reports_dir = "{Path(tmp, "reports")}"', 'log_format = "json"', "log_cases = false"]
    lines += ["", "[history]", "enabled = false", ""]
    for t in range(jobs):
        lines += [
            "[[targets]]",
            f'name = "target-{t}"',
            'callable = "tests.benchmarks.support:answer_slowly"',
            "",
            "[[jobs]]",
            f'target = "target-{t}"',
            f'dataset = "{path}"',
            "interval_seconds = 2",
            "concurrency = 2",
            "",
        ]
    config = Path(tmp, "evaluator.toml")
    config.write_text("\n".join(lines), "utf-8")
    return config


def _overlapping_scrapes(jobs: int, cases: int, seconds: float) -> dict[str, Any]:
    """``evaluator serve`` with ``jobs`` jobs whose runs never stop, scraped every 100 ms."""
    from tests.support.prometheus import DaemonProcess

    with tempfile.TemporaryDirectory() as tmp:
        config = _overlapping_config(Path(tmp), jobs, cases)
        env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        }
        with DaemonProcess(["--config", str(config)], workdir=Path(tmp), env=env) as daemon:
            daemon.wait_ready(timeout=60)
            time.sleep(12)  # every job's first run has started (staggered over its 2 s interval)
            timings: list[float] = []
            healthz: list[float] = []
            size = 0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                started = time.perf_counter()
                response = daemon.get("/metrics")
                timings.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"/metrics answered {response.status_code}")
                size = len(response.content)
                time.sleep(0.05)
                # the event loop's own delay, for reading the scrape figure on a busy machine
                started = time.perf_counter()
                daemon.get("/healthz")
                healthz.append((time.perf_counter() - started) * 1000)
                time.sleep(0.05)
            text = daemon.get("/metrics").text
            runs = sum(1 for e in daemon.logs() if e.get("event") == "run")
            daemon.stop()
    return {
        "ms": timings,
        "healthz_ms": healthz,
        "bytes": size,
        "series": _series(text),
        "runs": runs,
    }


#: the in-process comparison: jobs, cases in flight against the 50 ms endpoint, how often
#: /metrics is scraped, and for how long each way is measured
LOOP_TARGETS = 17  # x 3 golden sets: 51 jobs
LOOP_CONCURRENCY = 25
LOOP_SCRAPE_EVERY = 0.25
LOOP_SECONDS = 20.0
LOOP_GOAL_MS = 5.0


def _handler_scrape(metrics: Metrics) -> Callable[[], Awaitable[bytes]]:
    """The daemon's own /metrics handler (``HttpEndpoints.metrics``), as Prometheus calls it
    (text format), on a mocked request: whatever the daemon does on and off its loop."""
    from aiohttp.test_utils import make_mocked_coro, make_mocked_request

    from evaluator.daemon.server import HttpEndpoints

    runtime = CollectorRegistry()
    ProcessCollector(registry=runtime)
    PlatformCollector(registry=runtime)
    GCCollector(registry=runtime)
    http = HttpEndpoints(
        metrics, runtime=runtime, healthy=lambda: True, ready=lambda: True, latest_reports=dict
    )

    async def scrape() -> bytes:
        # a writer that keeps what the handler sends (its pieces), as a socket would take it
        writer = mock.Mock()
        writer.write_headers = make_mocked_coro(None)
        writer.write = make_mocked_coro(None)
        writer.write_eof = make_mocked_coro(None)
        writer.drain = make_mocked_coro(None)
        await http.metrics(make_mocked_request("GET", "/metrics", writer=writer))
        return b"".join(bytes(call.args[0]) for call in writer.write.call_args_list)

    return scrape


class _Instruments:
    """The plain way, for comparison: the daemon's per-case series (the three histograms,
    with exemplars, and the error counter: most of the series) held by prometheus_client's
    own instruments, every other family of the daemon's registry collected once and served
    as is (so this way's cost is, if anything, under-estimated), encoded by
    ``generate_latest``."""

    def __init__(self, daemon: CollectorRegistry) -> None:
        self.registry, _ = _registry()
        job = ["target", "dataset"]
        buckets = list(DEFAULT_BUCKETS)
        self._latency = Histogram(
            "rag_eval_case_latency_seconds", "latency", job, buckets=buckets, registry=self.registry
        )
        self._ttft = Histogram(
            "rag_eval_ttft_seconds", "ttft", job, buckets=buckets, registry=self.registry
        )
        self._stages = Histogram(
            "rag_eval_stage_latency_seconds",
            "stages",
            [*job, "stage"],
            buckets=buckets,
            registry=self.registry,
        )
        self._errors = Counter(
            "rag_eval_case_errors", "errors", [*job, "kind"], registry=self.registry
        )
        self._daemon = daemon

    def freeze_the_rest(self) -> None:
        mine = {"rag_eval_case_latency_seconds", "rag_eval_ttft_seconds"}
        mine |= {"rag_eval_stage_latency_seconds", "rag_eval_case_errors"}
        rest = [
            f
            for f in self._daemon.collect()
            if f.name.startswith("rag_eval_") and f.name not in mine
        ]
        self.registry.register(_Frozen(rest))

    def case_finished(self, labels: tuple[str, str], record: CaseRecord, run_id: str) -> None:
        exemplar = {"run_id": run_id, "case_id": record.case.id[:80]}
        self._latency.labels(*labels).observe(record.latency_seconds, exemplar)
        if record.ttft_seconds is not None:
            self._ttft.labels(*labels).observe(record.ttft_seconds, exemplar)
        for stage, seconds in record.stage_seconds.items():
            self._stages.labels(*labels, stage).observe(seconds, exemplar)
        if record.error is not None:
            self._errors.labels(*labels, record.error.kind).inc()


class _Frozen(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> list[Metric]:
        return self._families


def _plain_scrape(
    registry: CollectorRegistry, *, thread: bool, switch_interval: float | None = None
) -> Callable[[], Awaitable[bytes]]:
    """prometheus_client's ``generate_latest`` of the whole registry, in a worker thread
    (``asyncio.to_thread``; with ``switch_interval``, the interpreter's GIL switch interval
    lowered while it runs) or on the event loop."""

    async def scrape() -> bytes:
        if not thread:
            return generate_latest(registry)
        before = sys.getswitchinterval()
        if switch_interval is not None:
            sys.setswitchinterval(switch_interval)
        try:
            return await asyncio.to_thread(generate_latest, registry)
        finally:
            sys.setswitchinterval(before)

    return scrape


async def _loop_latency(
    url: str,
    finish: Callable[[tuple[str, str], CaseRecord, str], object],
    record: CaseRecord,
    scrape: Callable[[], Awaitable[bytes]] | None,
    seconds: float,
) -> dict[str, Any]:
    """One event loop, as the daemon's: ``LOOP_CONCURRENCY`` cases in flight against the
    endpoint, each finished into a job's histograms (every job mid-run), and, unless
    ``scrape`` is None, a scrape every ``LOOP_SCRAPE_EVERY`` s. Every case's added latency
    (latency minus the endpoint's sleep) and whether it overlapped a scrape."""
    jobs = [(f"target-{t}", f"golden-{d}") for d in range(DATASETS) for t in range(LOOP_TARGETS)]
    cases: list[tuple[float, float, float]] = []
    windows: list[tuple[float, float]] = []
    size = 0
    stop = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=LOOP_CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker(offset: int) -> None:
            n = offset
            while time.perf_counter() < stop:
                started = time.perf_counter()
                async with session.post(url, json={"question": "q", "top_k": 5}) as response:
                    body = await response.read()
                ended = time.perf_counter()
                slept = json.loads(body)["timings"]["sleep"]
                cases.append((started, ended, ended - started - slept))
                finish(jobs[n % len(jobs)], record, "run-next")
                n += LOOP_CONCURRENCY

        async def scraper() -> None:
            nonlocal size
            assert scrape is not None
            while time.perf_counter() < stop:
                await asyncio.sleep(LOOP_SCRAPE_EVERY)
                started = time.perf_counter()
                size = len(await scrape())
                windows.append((started, time.perf_counter()))

        async with asyncio.TaskGroup() as group:
            for i in range(LOOP_CONCURRENCY):
                group.create_task(worker(i))
            if scrape is not None:
                group.create_task(scraper())
    during = [a for s, e, a in cases if any(ws <= e and we >= s for ws, we in windows)]
    clear = [a for s, e, a in cases if not any(ws <= e and we >= s for ws, we in windows)]
    return {
        "scrape_ms": [(e - s) * 1000 for s, e in windows],
        "bytes": size,
        "during_ms": [a * 1000 for a in during],
        "clear_ms": [a * 1000 for a in clear],
    }


def _added(got: dict[str, Any]) -> dict[str, float]:
    """What a scrape adds to the cases it overlaps: P50 and P95, during minus clear; and the
    slowest case during a scrape and clear of them (as bench_platform reports them)."""
    during, clear = got["during_ms"], got["clear_ms"]
    return {
        "p50": nearest_rank(during, 50) - nearest_rank(clear, 50),
        "p95": nearest_rank(during, 95) - nearest_rank(clear, 95),
        "slowest_during": max(during),
        "slowest_clear": max(clear),
    }


#: the ways compared: the daemon's, then prometheus_client's instruments encoded plainly
LOOP_WAYS = (
    "daemon handler",
    "instruments, generate_latest in a thread",
    "instruments, generate_latest in a thread, GIL switch 1 ms",
    "instruments, generate_latest on the loop",
)


def _loop_comparison(seconds: float) -> dict[str, Any]:
    """The daemon's /metrics handler beside prometheus_client's plain encoding (in a worker
    thread and on the loop), 51 jobs mid-run, each way measured in turn in one process."""
    from tests.benchmarks.support import endpoint

    registry, metrics = _registry()
    plain = _Instruments(registry)
    _, record = asyncio.run(_populate(metrics, LOOP_TARGETS, plain.case_finished))
    plain.freeze_the_rest()
    daemon = metrics.case_finished
    ways: dict[str, tuple[Callable[..., object], Callable[[], Awaitable[bytes]] | None]] = {
        "no scrape": (daemon, None),
        LOOP_WAYS[0]: (daemon, _handler_scrape(metrics)),
        LOOP_WAYS[1]: (plain.case_finished, _plain_scrape(plain.registry, thread=True)),
        LOOP_WAYS[2]: (
            plain.case_finished,
            _plain_scrape(plain.registry, thread=True, switch_interval=0.001),
        ),
        LOOP_WAYS[3]: (plain.case_finished, _plain_scrape(plain.registry, thread=False)),
    }
    out: dict[str, Any] = {
        "series": _series(generate_latest(registry).decode()),
        "plain_series": _series(generate_latest(plain.registry).decode()),
    }
    with endpoint(0.05) as url:
        for name, (finish, scrape) in ways.items():
            out[name] = asyncio.run(_loop_latency(url, finish, record, scrape, seconds))
    return out


def run() -> dict[str, Any]:
    """The ``/metrics`` scrape time of 15 jobs, text and OpenMetrics, warm and cold, its figures
    by name."""
    disable_created_metrics()
    registry, metrics = _registry()
    stages, record = asyncio.run(_populate(metrics))
    change = _one_case_per_job(metrics, record)
    text_ms, text_bytes = _time(_daemon_scrape(metrics, False), change)
    om_ms, om_bytes = _time(_daemon_scrape(metrics, True), change)
    cold = {
        name: _time(_daemon_scrape(metrics, om), lambda: _everything_changed(metrics), 40)[0]
        for name, om in (("text", False), ("openmetrics", True))
    }
    from_scratch = {
        "text": _time(lambda: generate_latest(registry), n=40)[0],
        "openmetrics": _time(lambda: generate_openmetrics(registry), n=40)[0],
    }
    series = _series(generate_latest(registry).decode())
    http = _http_scrapes()
    jobs, per_job = OVERLAP_JOBS, OVERLAP_CASES
    overlap = _overlapping_scrapes(jobs, per_job, 10.0 if quick() else OVERLAP_SECONDS)
    details: dict[str, Any] = {
        "series": series,
        "series_by_family": _series_by_family(registry),
        "stages": stages,
        "collect_only_ms": round(_collect_ms(registry), 3),
        "encode_ms": {"text": text_ms[:20], "openmetrics": om_ms[:20]},
        "everything_reencoded_median_ms": {k: round(median(v), 3) for k, v in cold.items()},
        "prometheus_client_from_scratch_median_ms": {
            k: round(median(v), 3) for k, v in from_scratch.items()
        },
        "http_ms": {k: http[k]["ms"] for k in ("text", "openmetrics")},
    }
    if median(text_ms) >= GOAL_MS or median(om_ms) >= GOAL_MS:
        for name, om in (("text", False), ("openmetrics", True)):
            details[f"profile_{name}"] = profile(_scrapes(change, _daemon_scrape(metrics, om)))
    shape = f"{TARGETS} targets x {DATASETS} golden sets x {stages} stages"
    out: dict[str, Any] = {}
    for name, timings, size in (
        ("Prometheus text", text_ms, text_bytes),
        ("OpenMetrics", om_ms, om_bytes),
    ):
        value = median(timings)
        key = "text" if name == "Prometheus text" else "openmetrics"
        out[f"/metrics encoding in process, {name}"] = figure(
            value,
            "ms",
            meaning=(
                f"{shape} (with gate and baseline series): {series:,} series, "
                f"{size / 1024:,.0f} KiB, encoded {SCRAPES} times, each after one more case "
                "of every job (the cost of a scrape while runs change every job's "
                f"histograms); P95 {statistics.quantiles(timings, n=20)[-1]:.2f} ms; "
                f"everything re-encoded (first scrape) {median(cold[key]):.2f} ms; "
                f"prometheus_client's encoding from scratch {median(from_scratch[key]):.2f} ms"
            ),
        )
    for name, key in (("Prometheus text", "text"), ("OpenMetrics", "openmetrics")):
        timings = http[key]["ms"]
        value = median(timings)
        out[f"/metrics scrape over HTTP, evaluator serve, {name}"] = figure(
            value,
            "ms",
            meaning=(
                f"GET /metrics of a running daemon with 15 jobs ({http['series']:,} series, "
                f"{http[key]['bytes'] / 1024:,.0f} KiB), {HTTP_SCRAPES} scrapes on a kept-alive "
                "connection between runs: the evaluation metrics' encoding is reused until a "
                "case or run changes them, process metrics are encoded fresh every time"
            ),
        )
    value = median(overlap["ms"])
    out[f"/metrics scrape over HTTP, {jobs} jobs, runs overlapping"] = figure(
        value,
        "ms",
        goal=f"median < {OVERLAP_GOAL_MS:g}",
        met=value < OVERLAP_GOAL_MS,
        meaning=(
            f"GET /metrics every 100 ms of evaluator serve with {jobs} jobs ({per_job} cases, "
            "50 ms each, concurrency 2, every 2 s: every job always mid-run, so every scrape "
            f"follows changes); {overlap['series']:,} series, {overlap['bytes'] / 1024:,.0f} KiB; "
            f"P95 {nearest_rank(overlap['ms'], 95):.2f} ms over {len(overlap['ms'])} scrapes; "
            f"{overlap['runs']} runs finished meanwhile; /healthz between scrapes (the event "
            f"loop's own delay) median {median(overlap['healthz_ms']):.2f} ms, "
            f"P95 {nearest_rank(overlap['healthz_ms'], 95):.2f} ms"
        ),
        runs=overlap["ms"][:20],
    )
    loop = _loop_comparison(10.0 if quick() else LOOP_SECONDS)
    for name in LOOP_WAYS:
        got = loop[name]
        added = _added(got)
        out[f"scrape beside cases in flight, {name}: latency added, P95"] = figure(
            added["p95"],
            "ms",
            goal=f"<= {LOOP_GOAL_MS:g} ms" if name == "daemon handler" else None,
            met=added["p95"] <= LOOP_GOAL_MS if name == "daemon handler" else None,
            meaning=(
                f"one process, one event loop: {LOOP_CONCURRENCY} cases in flight against the "
                f"50 ms endpoint, each finished into one of {LOOP_TARGETS * DATASETS} jobs' "
                f"histograms ({loop['series']:,} series, {got['bytes'] / 1024:,.0f} KiB), a "
                f"scrape every {LOOP_SCRAPE_EVERY:g} s: added latency of the "
                f"{len(got['during_ms']):,} cases overlapping a scrape minus that of the "
                f"{len(got['clear_ms']):,} clear of them: P50 {added['p50']:+.2f} ms, P95 "
                f"{added['p95']:+.2f} ms; slowest case during a scrape "
                f"{added['slowest_during']:.1f} ms, clear of them {added['slowest_clear']:.1f} "
                "ms; scrape median "
                f"{median(got['scrape_ms']):.1f} ms, P95 {nearest_rank(got['scrape_ms'], 95):.1f} "
                f"ms over {len(got['scrape_ms'])}"
            ),
        )
    base = loop["no scrape"]["clear_ms"]
    details["loop_no_scrape_added_p50_p95_max_ms"] = [
        nearest_rank(base, 50),
        nearest_rank(base, 95),
        max(base),
    ]
    details["loop_comparison"] = {
        name: {
            "added_ms": _added(loop[name]),
            "scrape_median_ms": median(loop[name]["scrape_ms"]),
            "scrape_ms": loop[name]["scrape_ms"][:40],
            "cases_during": len(loop[name]["during_ms"]),
            "cases_clear": len(loop[name]["clear_ms"]),
        }
        for name in LOOP_WAYS
    }
    details["overlap_ms"] = overlap["ms"]
    details["overlap_healthz_ms"] = overlap["healthz_ms"]
    out["_details"] = details
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

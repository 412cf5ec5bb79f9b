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
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.parser import text_string_to_metric_families

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


async def _populate(metrics: Metrics) -> tuple[int, CaseRecord]:
    """Every job after two real runs; returns the number of stages seen and a case."""
    target = CallableTarget("tests.benchmarks.support:answer", name="bench")
    stages: set[str] = set()
    for d in range(DATASETS):
        dataset = golden_set(CASES, seed=d, name=f"golden-{d}")
        report = await run_dataset(dataset, target, RunOptions(k=5, concurrency=4))
        for t in range(TARGETS):
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
            # first runs are staggered over 10 s: wait for all 15 (bounded)
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
            time.sleep(12)  # every job's first run has started (staggered over 10 s)
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


def run() -> dict[str, Any]:
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
    details["overlap_ms"] = overlap["ms"]
    details["overlap_healthz_ms"] = overlap["healthz_ms"]
    out["_details"] = details
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

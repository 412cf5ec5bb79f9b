"""Soak: the daemon running ``RUNS`` scheduled runs of ``CASES`` cases at a short interval.

An in-process :class:`evaluator.daemon.Daemon` (so its asyncio tasks can be counted) runs
one job every ``INTERVAL`` seconds against the benchmark endpoint, a separate process on
loopback (zero latency): real HTTP, real reports written (and pruned) on disk, per-case
logs rendered as JSON (to ``/dev/null``), a ``/metrics`` and ``/healthz`` scrape every
second over a kept-alive connection. A run still going when the next is due is skipped by
the scheduler, as in production; skips are counted, not hidden.

Sampled when no run is in flight, after a full garbage collection: resident memory (RSS),
open file descriptors, inet sockets (psutil), asyncio tasks, threads and live objects.
Start = after run ``WARMUP`` (pools, caches and histograms are full by then), end = after
run ``RUNS``. Goals: RSS growth under 5 MiB; descriptors, sockets and tasks no higher at
the end than at the start. Runs by outcome are read from the Prometheus registry.

``python -m tests.benchmarks.run --only soak`` (``SOAK_RUNS=60`` for a quick look).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.daemon import Daemon
from evaluator.daemon.exporter import OUTCOMES
from evaluator.logs import configure_logging
from tests.benchmarks.support import endpoint, figure, golden_set_bytes

RUNS = int(os.environ.get("SOAK_RUNS", "500"))
WARMUP = 20
CASES = 200
INTERVAL = 0.1
CONCURRENCY = 10
SAMPLE_EVERY = 50
TIME_LIMIT = 360.0  # seconds for the whole soak; fewer runs are reported as such
RSS_GOAL_MIB = 5.0
MIB = 1024 * 1024


def _sample() -> dict[str, int]:
    gc.collect()
    proc = psutil.Process()
    return {
        "rss": proc.memory_info().rss,
        "fds": proc.num_fds(),
        "sockets": len(proc.net_connections(kind="inet")),
        "tasks": len(asyncio.all_tasks()),
        "threads": proc.num_threads(),
        "objects": len(gc.get_objects()),
    }


def _runs(daemon: Daemon) -> dict[str, int]:
    labels = daemon.jobs[0].labels
    out = {}
    for outcome in OUTCOMES:
        value = daemon.registry.get_sample_value(
            "rag_eval_runs_total",
            {"target": labels[0], "dataset": labels[1], "outcome": outcome},
        )
        out[outcome] = int(value or 0)
    return out


def _executed(runs: dict[str, int]) -> int:
    return runs["complete"] + runs["incomplete"] + runs["failed"]


async def _idle(daemon: Daemon, deadline: float) -> None:
    """Until no run is in flight (the daemon's set of running runs is empty)."""
    while daemon._running and time.monotonic() < deadline:
        await asyncio.wait(set(daemon._running), timeout=max(deadline - time.monotonic(), 0))


async def _scraper(port: int, stats: dict[str, int]) -> None:
    """Prometheus and a liveness probe: /metrics and /healthz every second."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while True:
            for path in ("/metrics", "/healthz"):
                try:
                    async with session.get(f"http://127.0.0.1:{port}{path}") as response:
                        await response.read()
                        ok = response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    ok = False
                stats["ok" if ok else "failed"] += 1
            await asyncio.sleep(1.0)


async def _soak(url: str, dataset: Path, reports: Path) -> dict[str, Any]:
    settings = Settings(
        concurrency=CONCURRENCY,
        listen="127.0.0.1:0",
        reports_dir=reports,
        shutdown_grace_seconds=10.0,
        targets=(HttpTargetConfig(name="soak", url=url, max_connections=4 * CONCURRENCY),),
        jobs=(JobConfig(target="soak", dataset=dataset, interval_seconds=INTERVAL),),
    )
    daemon = Daemon(settings)
    started = time.monotonic()
    deadline = started + TIME_LIMIT
    samples: list[dict[str, Any]] = []
    scrapes = {"ok": 0, "failed": 0}
    await daemon.start()
    scraper = asyncio.create_task(_scraper(daemon.http.port, scrapes), name="bench scraper")
    try:
        next_sample = WARMUP
        while time.monotonic() < deadline:
            executed = _executed(_runs(daemon))
            if executed >= next_sample:
                await _idle(daemon, deadline)
                runs = _runs(daemon)
                samples.append(
                    {"run": _executed(runs), "seconds": round(time.monotonic() - started, 1)}
                    | _sample()
                )
                if next_sample >= RUNS:
                    break
                next_sample = min(RUNS, (executed // SAMPLE_EVERY + 1) * SAMPLE_EVERY)
            await asyncio.sleep(0.02)
    finally:
        scraper.cancel()
        await asyncio.gather(scraper, return_exceptions=True)
        runs = _runs(daemon)
        elapsed = time.monotonic() - started
        await daemon.stop()
    return {"runs": runs, "elapsed_seconds": elapsed, "samples": samples, "scrapes": scrapes}


def run() -> dict[str, Any]:
    """The daemon's memory, files and timing over a soak of scheduled runs, its figures by
    name."""
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as null:  # noqa: PTH123
        configure_logging("json", "info", stream=null)
        dataset = Path(tmp, "soak.jsonl")
        dataset.write_bytes(golden_set_bytes(CASES))
        with endpoint(0.0) as url:
            result = asyncio.run(_soak(url, dataset, Path(tmp, "reports")))
        # retention: reports_keep (50) reports plus latest.json, however many runs
        result["report_files"] = len(list(Path(tmp, "reports").rglob("*.json")))
    samples = result["samples"]
    start, end = samples[0], samples[-1]
    runs = result["runs"]
    executed = _executed(runs)
    span = f"run {start['run']} -> run {end['run']}"
    growth = (end["rss"] - start["rss"]) / MIB
    out: dict[str, Any] = {
        "soak: runs executed": figure(
            executed,
            "runs",
            goal=f">= {RUNS}",
            met=executed >= RUNS,
            meaning=(
                f"{CASES} cases each every {INTERVAL:g} s at concurrency {CONCURRENCY}, loopback "
                f"HTTP; {executed * CASES:,} cases in {result['elapsed_seconds']:.0f} s; by "
                "outcome: " + ", ".join(f"{k} {v}" for k, v in runs.items())
            ),
            digits=0,
        ),
        "soak: runs not complete (incomplete or failed)": figure(
            runs["incomplete"] + runs["failed"],
            "runs",
            goal="0",
            met=runs["incomplete"] + runs["failed"] == 0,
            meaning="from rag_eval_runs_total; a loopback endpoint that never fails",
            digits=0,
        ),
        "soak: runs skipped (previous run still going)": figure(
            runs["skipped"],
            "runs",
            meaning=f"the scheduler's skips at a {INTERVAL:g} s interval; expected, not an error",
            digits=0,
        ),
        "soak: resident memory growth": figure(
            growth,
            "MiB",
            goal=f"< {RSS_GOAL_MIB:g}",
            met=growth < RSS_GOAL_MIB,
            meaning=(
                f"RSS {start['rss'] / MIB:.1f} -> {end['rss'] / MIB:.1f} MiB, {span}; live "
                f"objects {start['objects']:,} -> {end['objects']:,}"
            ),
            digits=2,
        ),
    }
    for key, label, unit in (("fds", "open file descriptors", "descriptors"),
                             ("sockets", "inet sockets", "sockets"),
                             ("tasks", "asyncio tasks", "tasks")):  # fmt: skip
        change = end[key] - start[key]
        out[f"soak: {label}, change"] = figure(
            change,
            unit,
            goal="flat (<= 0)",
            met=change <= 0,
            meaning=f"{start[key]} -> {end[key]}, {span}, sampled between runs",
            digits=0,
        )
    failed = result["scrapes"]["failed"]
    out["soak: /metrics and /healthz requests failed"] = figure(
        failed,
        "requests",
        goal="0",
        met=failed == 0,
        meaning=f"one of each per second during the soak; {result['scrapes']['ok']} answered 200",
        digits=0,
    )
    out["_details"] = result | {"python": sys.version.split()[0]}
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

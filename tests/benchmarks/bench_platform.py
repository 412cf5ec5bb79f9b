"""Platform scale: one daemon, 100 jobs x 1,000 cases every 5 minutes, 50 ms endpoint.

Goals (issue 25, new): the daemon uses at most 10% of one core on average and at most
400 MiB resident, and the latency rules hold (added latency P50 and P95 within 1.3x the
bare loop's); and, for the scrape while runs are in flight, the latency a scrape adds to
any case being measured is at most 5 ms.

How time is scaled. The daemon starts its jobs' first runs within 50 s of each other (its
stagger spread: 0.5 s a job) and every job fires every 300 s after its first run, so each
5-minute cycle is a busy part, when the 100 runs go, and an idle part. The benchmark runs
ONE full cycle of the real configuration: ``evaluator serve`` with 100 jobs (one target
each, all on ``tests.benchmarks.endpoint`` in its own process, 50 ms per answer), 1,000
cases per job, ``interval_seconds = 300``, concurrency 2. Each target is paced by
``requests_per_second`` (5, quick mode too) so that each run lasts about 200 s and all
100 go at once for about 150 s at about 500 cases/s, 1.5 times the cycle's average rate
(100,000 cases / 300 s = 333 cases/s): the latency rules are judged under that load, not
an easier one. After the
busy part the daemon's CPU is read in 5 s windows until one uses under 2% of a core (its
last reports and history rows are written in that tail: an earlier version extrapolated
one 15 s window of it, 16% of a core, to the whole rest of the cycle, where the daemon
idles near 0%); the cycle's average is (busy CPU + tail CPU + the settled window's rate x
the rest of the 300 s) / 300 s. CPU is the daemon process's own (psutil ``cpu_times``,
user + system, children excluded: the endpoint is another process); resident memory is
sampled every 0.25 s through the whole cycle (psutil ``memory_info().rss``), its peak reported.

Latency: each case's added latency is the report's ``latency_seconds`` minus the sleep the
endpoint reports (``stage_seconds.sleep``), as bench_goals computes it. The reference, for
latency and CPU alike, is the bare aiohttp loop making the same requests the same way before
the daemon starts and again after its cycle, the two pooled: 100 sessions, 2 in flight each,
paced at 5 requests/s, each starting at the phase the daemon's stagger gives its job, against
the same endpoint.

Scrapes: ``GET /metrics`` every 15 s (the shipped Prometheus configuration's interval, so
the CPU average includes what its scrapes cost) through the busy part, each one's wall-clock window
recorded. The endpoint logs each request's arrival; a case is "measured during a scrape"
when [arrival, arrival + its latency] overlaps a scrape's window. The latency a scrape
adds is the P95 of those cases' added latency minus the P95 of their neighbours: the cases
clear of every scrape that arrived within ``NEAR`` seconds before or after one. Neighbours,
not every other case, because what else the daemon does varies over the cycle (100 runs
ending together write their reports at once): a scrape that falls in such a moment must not
be charged with it, nor one in a quiet moment credited with the quiet. The comparison with
every case clear of the scrapes is in the figure's meaning too.

``python -m tests.benchmarks.run --only platform``
"""

from __future__ import annotations

import asyncio
import bisect
import gc
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import psutil

from evaluator.config import JobConfig
from evaluator.daemon.schedule import stagger_offsets, stagger_spread
from evaluator.report import read_report
from tests.benchmarks.bare_loop import added_latency
from tests.benchmarks.support import (
    REPO,
    endpoint,
    figure,
    golden_set,
    golden_set_bytes,
    median,
    nearest_rank,
    quick,
)

JOBS = 100
CASES = 1_000
LATENCY = 0.05
INTERVAL = 300.0
CONCURRENCY = 2
CPU_GOAL = 0.10
RSS_GOAL_MIB = 400.0
ADDED_GOAL = 1.3
SCRAPE_ADDED_GOAL_MS = 5.0
#: as deploy/prometheus/prometheus.yml scrapes: the CPU average includes its scrapes
SCRAPE_EVERY = 15.0
#: after the busy part, the daemon's CPU is read in windows of this length until one uses
#: less than SETTLED of a core (or TAIL_LIMIT passed): the runs' last reports and history
#: rows are written then, and that tail is counted as measured, not extrapolated
WINDOW_SECONDS = 5.0
SETTLED = 0.02
TAIL_LIMIT = 90.0
BUSY_LIMIT = 300.0
#: seconds around a scrape whose cases, clear of it, are its control
NEAR = 1.0
#: requests per session of the paced bare loop (100 sessions: 20 s at 5 requests/s)
BARE_PACED_REQUESTS = 100
#: each target's pace: 100 x 5 = 500 cases/s, 1.5x the cycle's average of 333
RATE = 5.0
SHAPE = "100 jobs x 1,000 cases every 5 min, 50 ms endpoint"
CPU_KEY = f"platform, {SHAPE}: daemon CPU, average over the cycle"
RSS_KEY = f"platform, {SHAPE}: daemon peak RSS"
SCRAPE_KEY = "a scrape while runs are in flight: latency it adds to a case being measured"


def _config(tmp: Path, url: str, rps: float) -> Path:
    golden = tmp / "golden.jsonl"
    golden.write_bytes(golden_set_bytes(CASES))
    lines = [f'reports_dir = "{tmp / "reports"}"', 'log_format = "json"', "log_cases = false", ""]
    for j in range(JOBS):
        lines += [
            "[[targets]]",
            f'name = "job-{j}"',
            f'url = "{url}"',
            f"requests_per_second = {rps:g}",
            f'request = {{ headers = {{ "X-Bench-Job" = "job-{j}" }} }}',
            "",
            "[[jobs]]",
            f'target = "job-{j}"',
            f'dataset = "{golden}"',
            f"interval_seconds = {INTERVAL:g}",
            f"concurrency = {CONCURRENCY}",
            "",
        ]
    path = tmp / "evaluator.toml"
    path.write_text("\n".join(lines), "utf-8")
    return path


async def _bare_paced(url: str, per_session: int) -> tuple[float, list[float]]:
    """(CPU seconds per request, added latency per request) of the bare aiohttp loop making
    the daemon's requests the daemon's way: ``JOBS`` sessions (one per target),
    ``CONCURRENCY`` in flight each, each paced at ``RATE`` requests/s, every answer decoded,
    each session's pace starting at the phase the daemon's staggered first runs give its job.
    The reference for both goals: what the HTTP client and the event loop alone cost, and add
    to a latency, at this load on this machine.

    The phases matter as much as the pace: 100 sessions started together send 100 requests
    at once every 0.2 s, and that burst queues (about 5 ms added at P50) while each wake-up
    serves many requests (half the CPU per request of spread ones, on this machine).

    No warm-up: the daemon is measured from its first case too."""
    questions = [c.question for c in golden_set(per_session).questions]
    period = 1 / RATE
    jobs = [
        JobConfig(target=f"job-{j}", dataset=Path("golden.jsonl"), interval_seconds=INTERVAL)
        for j in range(JOBS)
    ]
    phases = [offset % period for offset in stagger_offsets(JOBS, stagger_spread(jobs))]
    added: list[float] = []

    async def target(session: aiohttp.ClientSession, phase: float) -> None:
        await asyncio.sleep(phase)
        due = time.monotonic()
        pending = iter(questions)

        async def worker() -> None:
            nonlocal due
            for question in pending:
                now = time.monotonic()
                wait, due = due - now, max(due, now) + period
                if wait > 0:
                    await asyncio.sleep(wait)
                added.append(await added_latency(session, url, question))

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    sessions = [
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY))
        for _ in range(JOBS)
    ]
    try:
        started = time.process_time()
        await asyncio.gather(*(target(s, p) for s, p in zip(sessions, phases, strict=True)))
        return (time.process_time() - started) / (JOBS * per_session), added
    finally:
        for session in sessions:
            await session.close()


class _Sampler(threading.Thread):
    """Peak resident memory of one process, sampled every 0.25 s until stopped."""

    def __init__(self, process: psutil.Process) -> None:
        super().__init__(daemon=True)
        self.process = process
        self.peak = 0
        self.samples = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(0.25):
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
                self.samples += 1
            except psutil.Error:
                return

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _cycle(url: str, rps: float) -> dict[str, Any]:
    """One cycle of the 100-job daemon: CPU, memory, scrapes, every case's latency."""
    from tests.support.prometheus import DaemonProcess

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        config = _config(tmp, url, rps)
        env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        }
        with DaemonProcess(["--config", str(config)], workdir=tmp, env=env) as daemon:
            daemon.wait_ready(timeout=90)
            assert daemon.proc is not None
            process = psutil.Process(daemon.proc.pid)
            sampler = _Sampler(process)
            sampler.start()
            cpu0, t0 = _cpu(process), time.monotonic()
            scrapes: list[tuple[float, float]] = []
            scrape_ms: list[float] = []
            runs = 0
            due = t0
            while time.monotonic() - t0 < BUSY_LIMIT:
                if time.monotonic() >= due:
                    due += SCRAPE_EVERY
                    started_wall, started = time.time(), time.perf_counter()
                    response = daemon.get("/metrics")
                    scrape_ms.append((time.perf_counter() - started) * 1000)
                    scrapes.append((started_wall, time.time()))
                    if response.status_code != 200:
                        raise RuntimeError(f"/metrics answered {response.status_code}")
                runs = sum(1 for e in daemon.logs() if e.get("event") == "run")
                if runs >= JOBS:
                    break
                time.sleep(0.5)
            cpu1, t1 = _cpu(process), time.monotonic()
            windows: list[tuple[float, float]] = []  # (CPU seconds, wall seconds) each
            while not windows or (
                windows[-1][0] / windows[-1][1] >= SETTLED and time.monotonic() - t1 < TAIL_LIMIT
            ):
                before, began = _cpu(process), time.monotonic()
                time.sleep(WINDOW_SECONDS)
                windows.append((_cpu(process) - before, time.monotonic() - began))
            cpu2, t2 = _cpu(process), time.monotonic()
            sampler.stop()
            outcomes = [e.get("outcome") for e in daemon.logs() if e.get("event") == "run"]
            daemon.stop()
        reports = [
            read_report(p)
            for p in sorted((tmp / "reports").rglob("*.json"))
            if p.name != "latest.json"
        ]
    requests = httpx.get(url.removesuffix("/rag") + "/requests", timeout=30).json()
    return {
        "busy_cpu": cpu1 - cpu0,
        "busy_wall": t1 - t0,
        "tail_cpu": cpu2 - cpu1,
        "tail_wall": t2 - t1,
        "idle_rate": windows[-1][0] / windows[-1][1],
        "peak_rss": sampler.peak,
        "rss_samples": sampler.samples,
        "runs": runs,
        "outcomes": outcomes,
        "scrapes": scrapes,
        "scrape_ms": scrape_ms,
        "reports": reports,
        "requests": requests,
    }


def _overlaps(windows: list[tuple[float, float]], start: float, end: float) -> bool:
    """Whether [start, end] meets any of ``windows`` (sorted by start, disjoint)."""
    i = bisect.bisect_right(windows, (end, float("inf")))
    return i > 0 and windows[i - 1][1] >= start


def _cases(
    got: dict[str, Any],
) -> tuple[list[float], list[float], list[float], list[float], int]:
    """(added latency of every case, of those measured during a scrape, of the others, of
    the others near a scrape, failed cases)."""
    arrivals = {(job, q): arrived for job, q, arrived, _ in got["requests"]}
    windows = sorted(got["scrapes"])
    every: list[float] = []
    during: list[float] = []
    clear: list[float] = []
    near: list[float] = []
    widened = [(start - NEAR, end + NEAR) for start, end in windows]
    failed = 0
    for report in got["reports"]:
        for record in report.cases:
            if record.scores is None:
                failed += 1
                continue
            added = record.latency_seconds - record.stage_seconds.get("sleep", 0.0)
            every.append(added)
            arrived = arrivals.get((report.target, record.case.question))
            if arrived is None:
                continue
            in_scrape = _overlaps(windows, arrived, arrived + record.latency_seconds)
            (during if in_scrape else clear).append(added)
            if not in_scrape and _overlaps(widened, arrived, arrived):
                near.append(added)
    return every, during, clear, near, failed


def run() -> dict[str, Any]:
    """One daemon's cycle of 100 jobs against the paced bare reference, its figures by name."""
    rps = RATE
    with endpoint(LATENCY, log_requests=True) as url:
        # the reference is measured before the daemon's cycle and again after it, and the
        # two pooled: one 20 s sample of this shared machine put the bare loop's P95 at
        # 1.0-1.1 ms from one run to the next, as much as the goal's margin
        cpu_before, before = asyncio.run(_bare_paced(url, BARE_PACED_REQUESTS))
        got = _cycle(url, rps)  # reads the endpoint's log of the daemon's requests itself
        # by now this process holds the cycle's 100,000 request rows and 100 reports: out of
        # the collector's sight, or its passes over them land in the reference's latencies
        # (a first try without this put the second half's P95 at 4.5 ms against 1.1 ms)
        gc.collect()
        gc.freeze()
        try:
            cpu_after, after = asyncio.run(_bare_paced(url, BARE_PACED_REQUESTS))
        finally:
            gc.unfreeze()
    bare_cpu, bare = (cpu_before + cpu_after) / 2, before + after
    every, during, clear, near, failed = _cases(got)
    out: dict[str, Any] = {}
    idle_rate = got["idle_rate"]
    measured = got["busy_wall"] + got["tail_wall"]
    rest = max(INTERVAL - measured, 0.0)
    average = (got["busy_cpu"] + got["tail_cpu"] + idle_rate * rest) / max(INTERVAL, measured)
    cases = len(every) + failed
    per_case = got["busy_cpu"] / max(cases, 1)
    floor = bare_cpu * JOBS * CASES / INTERVAL
    out[CPU_KEY] = figure(
        average * 100,
        "% of a core",
        goal=f"<= {CPU_GOAL * 100:g}%",
        met=average <= CPU_GOAL and got["runs"] >= JOBS,
        meaning=(
            f"one cycle measured: busy part {got['busy_wall']:.0f} s ({got['runs']} of {JOBS} "
            f"runs, {cases:,} cases, targets paced at {rps:g} requests/s each) took "
            f"{got['busy_cpu']:.1f} CPU s ({got['busy_cpu'] / got['busy_wall']:.0%} of a core "
            f"while busy, {got['busy_cpu'] / max(cases, 1) * 1e6:.0f} µs per case); the tail "
            f"after the last run's line (reports and history still being written) "
            f"{got['tail_cpu']:.1f} CPU s over {got['tail_wall']:.0f} s, measured until a "
            f"{WINDOW_SECONDS:g} s window used under {SETTLED:.0%} of a core; that window's "
            f"rate ({idle_rate:.2%} of a core) extrapolated to the rest of the {INTERVAL:g} s. "
            f"The bare aiohttp loop making the same requests "
            f"the same way ({JOBS} sessions, {CONCURRENCY} in flight each, paced) costs "
            f"{bare_cpu * 1e6:.0f} µs per request: {floor:.1%} of a core for a cycle's "
            f"{JOBS * CASES:,} requests, the floor under this goal on this machine"
        ),
        digits=2,
    )
    out["platform: daemon CPU per case / the paced bare loop's"] = figure(
        per_case / bare_cpu if bare_cpu > 0 else None,
        "ratio",
        meaning=(
            f"the daemon's CPU per case while busy ({per_case * 1e6:.0f} µs: HTTP, scoring, "
            f"metrics, report, history) / the bare loop's per request at the same pacing "
            f"({bare_cpu * 1e6:.0f} µs)"
        ),
    )
    peak = got["peak_rss"] / 2**20
    out[RSS_KEY] = figure(
        peak,
        "MiB",
        goal=f"<= {RSS_GOAL_MIB:g} MiB",
        met=peak <= RSS_GOAL_MIB and got["runs"] >= JOBS,
        meaning=(
            f"resident memory of the daemon process, peak of {got['rss_samples']} samples "
            "(every 0.25 s) through the busy part and 15 s after it"
        ),
    )
    for stat, pct in (("P50", 50), ("P95", 95)):
        d_ms, b_ms = nearest_rank(every, pct) * 1000, nearest_rank(bare, pct) * 1000
        ratio = d_ms / b_ms if b_ms > 0 else None
        out[f"platform: latency added, {stat}, / bare loop's"] = figure(
            ratio,
            "ratio",
            goal=f"<= {ADDED_GOAL:g}",
            met=None if ratio is None else ratio <= ADDED_GOAL,
            meaning=(
                f"latency measured minus the endpoint's sleep, {stat} over the daemon's "
                f"{len(every):,} cases: {d_ms:.2f} ms; the paced bare aiohttp loop ({JOBS} "
                f"sessions at the daemon's phases, {CONCURRENCY} in flight each), same "
                f"endpoint, {len(bare):,} requests, half before the daemon's cycle and half "
                f"after: {b_ms:.2f} ms ({nearest_rank(before, pct) * 1000:.2f} and "
                f"{nearest_rank(after, pct) * 1000:.2f} ms)"
            ),
        )
    if during and near and clear:
        added_ms = (nearest_rank(during, 95) - nearest_rank(near, 95)) * 1000
        p50_ms = (nearest_rank(during, 50) - nearest_rank(near, 50)) * 1000
        global_ms = (nearest_rank(during, 95) - nearest_rank(clear, 95)) * 1000
        out[SCRAPE_KEY] = figure(
            added_ms,
            "ms",
            goal=f"<= {SCRAPE_ADDED_GOAL_MS:g} ms",
            met=added_ms <= SCRAPE_ADDED_GOAL_MS,
            meaning=(
                f"P95 added latency of the {len(during):,} cases measured while one of "
                f"{len(got['scrapes'])} scrapes of /metrics ({JOBS} jobs mid-run) was "
                f"being served, minus that of their {len(near):,} neighbours (clear of every "
                f"scrape, arrived within {NEAR:g} s of one): "
                f"{nearest_rank(during, 95) * 1000:.2f} - {nearest_rank(near, 95) * 1000:.2f} "
                f"ms; at P50 {p50_ms:+.2f} ms. Against all {len(clear):,} cases clear of the "
                f"scrapes (P95 {nearest_rank(clear, 95) * 1000:.2f} ms): {global_ms:+.2f} ms. "
                f"Slowest case during a scrape {max(during) * 1000:.1f} ms, clear of them "
                f"{max(clear) * 1000:.1f} ms"
            ),
        )
    out[f"platform: /metrics scrape with {JOBS} jobs mid-run"] = figure(
        median(got["scrape_ms"]),
        "ms",
        goal="< 250 ms",
        met=median(got["scrape_ms"]) < 250,
        meaning=(
            f"GET /metrics every {SCRAPE_EVERY:g} s through the busy part, median of "
            f"{len(got['scrape_ms'])}; P95 {nearest_rank(got['scrape_ms'], 95):.1f} ms, "
            f"max {max(got['scrape_ms']):.1f} ms"
        ),
    )
    bad = [o for o in got["outcomes"] if o != "complete"]
    out["platform: failed cases and incomplete runs"] = figure(
        failed + len(bad) + (JOBS - got["runs"]),
        "cases",
        goal="0",
        met=failed == 0 and not bad and got["runs"] >= JOBS,
        digits=0,
        meaning=(
            f"{failed} failed cases, {len(bad)} runs not complete ({sorted(set(bad))}), "
            f"{max(JOBS - got['runs'], 0)} jobs without a finished run"
        ),
    )
    out["_details"] = {
        "quick": quick(),
        "requests_per_second_per_target": rps,
        **{k: got[k] for k in ("busy_cpu", "busy_wall", "tail_cpu", "tail_wall", "runs")},
        "idle_rate": got["idle_rate"],
        "peak_rss_mib": peak,
        "bare_paced_cpu_per_request_us": bare_cpu * 1e6,
        "bare_paced_cpu_per_request_us_before_after": [cpu_before * 1e6, cpu_after * 1e6],
        "scrape_ms": got["scrape_ms"],
        "bare_added_p50_p95_ms": [nearest_rank(bare, 50) * 1000, nearest_rank(bare, 95) * 1000],
        "daemon_added_p50_p95_ms": [nearest_rank(every, 50) * 1000, nearest_rank(every, 95) * 1000],
    }
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))

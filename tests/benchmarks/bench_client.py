"""The HTTP client's cost per case: evaluator's ``HttpTarget.query`` against a bare aiohttp
loop, CPU seconds of this process per request, zero-latency loopback endpoint.

The endpoint runs in its own process (``tests.benchmarks.endpoint``), so this process's CPU
time (``time.process_time``) is the client's alone: building the request, the connection
pool, reading, decoding and mapping the body. Both clients make ``CALLS`` requests with
``CONCURRENCY`` in flight, alternating ``REPEATS`` times; the figure is the median of the
pair ratios. Scoring and reports are left out on purpose (``bench_runner`` has the whole run):
this isolates what the client adds (the issue's goal: within 1.5x of the bare loop).

``python -m tests.benchmarks.run --only client``
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from evaluator.config import HttpTargetConfig
from evaluator.factory import build_target
from evaluator.models import Case
from evaluator.targets.base import Target
from tests.benchmarks.support import endpoint, figure, median

CALLS = 2_000
CONCURRENCY = 50
REPEATS = 5
CPU_GOAL = 1.5


async def _cpu_per_call(calls: int, call: Any) -> tuple[float, float]:
    """CPU and wall seconds per call of ``call()``, ``CONCURRENCY`` workers."""
    todo = iter(range(calls))

    async def worker() -> None:
        for _ in todo:
            await call()

    cpu, wall = time.process_time(), time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(CONCURRENCY):
            group.create_task(worker())
    return (time.process_time() - cpu) / calls, (time.perf_counter() - wall) / calls


async def _measure(url: str) -> dict[str, list[float]]:
    target: Target = build_target(HttpTargetConfig(url=url, max_connections=CONCURRENCY * 2))
    case = Case(id="c", question="How long do refunds take?", relevance={"doc-0": 1})
    connector = aiohttp.TCPConnector(limit=CONCURRENCY * 2)
    out: dict[str, list[float]] = {
        "evaluator": [],
        "bare": [],
        "evaluator_wall": [],
        "bare_wall": [],
    }
    async with aiohttp.ClientSession(connector=connector) as session:

        async def bare() -> None:
            payload = {"question": case.question, "top_k": 5}
            async with session.post(url, json=payload) as response:
                json.loads(await response.read())

        async def ours() -> None:
            await target.query(case, 5)

        try:
            await _cpu_per_call(200, ours)  # warm both pools
            await _cpu_per_call(200, bare)
            for _ in range(REPEATS):
                cpu, wall = await _cpu_per_call(CALLS, ours)
                out["evaluator"].append(cpu)
                out["evaluator_wall"].append(wall)
                cpu, wall = await _cpu_per_call(CALLS, bare)
                out["bare"].append(cpu)
                out["bare_wall"].append(wall)
        finally:
            await target.aclose()
    return out


def run() -> dict[str, Any]:
    """The HTTP client's CPU per call against a bare aiohttp loop, its figures by name."""
    with endpoint(0.0) as url:
        runs = asyncio.run(_measure(url))
    ratios = [e / b for e, b in zip(runs["evaluator"], runs["bare"], strict=True)]
    ratio = median(ratios)
    return {
        "client CPU per call, evaluator / bare aiohttp": figure(
            ratio,
            "ratio",
            goal=f"<= {CPU_GOAL}",
            met=ratio <= CPU_GOAL,
            meaning=(
                f"process CPU per call of HttpTarget.query (request, pool, read, decode, JSON, "
                f"mapping) over a bare aiohttp POST + json.loads; {CALLS:,} calls, "
                f"{CONCURRENCY} in flight, zero-latency endpoint in its own process; median "
                f"of {REPEATS} back-to-back pairs"
            ),
            runs=ratios,
        ),
        "client CPU per call, evaluator": figure(
            median(runs["evaluator"]) * 1e6,
            "µs",
            meaning="HttpTarget.query: CPU of this process per call",
            runs=[v * 1e6 for v in runs["evaluator"]],
            digits=0,
        ),
        "client CPU per call, bare aiohttp": figure(
            median(runs["bare"]) * 1e6,
            "µs",
            meaning="aiohttp ClientSession.post + read + json.loads: CPU per call",
            runs=[v * 1e6 for v in runs["bare"]],
            digits=0,
        ),
        "_details": runs,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

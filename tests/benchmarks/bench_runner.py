"""The runner against a loopback endpoint in its own process (``tests.benchmarks.endpoint``).

1. Fixed 50 ms latency, at concurrency 1, 10 and 50: wall time of ``run_dataset`` divided
   by the ideal ``cases x latency / concurrency``, and evaluator's own latency overhead per
   case: the latency it measured minus the sleep the endpoint reports it actually had
   (``timings.sleep``). 1,000 cases at concurrency 10 and 50; at concurrency 1 only 100
   cases (1,000 would take 50 s per repeat). Median of ``REPEATS`` per level.
2. Zero latency, concurrency 50, 1,000 cases: ``run_dataset`` cases/s divided by what a bare
   aiohttp client loop (same payload, same endpoint, JSON decoded) achieves, in pairs run
   back to back; the median of the pair ratios.

Each level reuses one warm target (a daemon keeps its target between runs) with
``max_connections`` 200, above every concurrency here. When a goal is missed, one run is
profiled with pyinstrument and the hotspots kept.

For reference, in the same runs: a bare aiohttp loop at concurrency 50 against the 50 ms
endpoint (the floor this machine and endpoint allow), and ``run_dataset`` over
:class:`WhatIfAiohttpTarget`, a minimal aiohttp target (test code) standing in for
``HttpTarget``: the floor for evaluator's client (HttpTarget now calls aiohttp directly).

``python -m tests.benchmarks.run --only runner``
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from evaluator.config import HttpTargetConfig
from evaluator.errors import TargetConnectError, TargetHTTPStatusError
from evaluator.factory import build_target
from evaluator.models import Case, Dataset, Dialogue, TargetResponse
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.base import Target, parse_default_response
from tests.benchmarks.support import (
    Profile,
    endpoint,
    figure,
    golden_set,
    median,
    nearest_rank,
)

LATENCY = 0.05
#: (concurrency, cases)
LEVELS = ((1, 100), (10, 1_000), (50, 1_000))
REPEATS = 3
ZERO_CASES = 1_000
ZERO_CONCURRENCY = 50
ZERO_REPEATS = 5
MAX_CONNECTIONS = 200
RATIO_GOAL = 1.15
SPEED_GOAL = 0.5


def _target(url: str) -> Target:
    return build_target(HttpTargetConfig(url=url, max_connections=MAX_CONNECTIONS))


class WhatIfAiohttpTarget:
    """Not evaluator code: the default contract over a bare aiohttp session, with a
    whole-call deadline and the same response parser: the floor for
    :class:`~evaluator.targets.http.HttpTarget` (no size cap, decoding or error taxonomy)."""

    name = "what-if"

    def __init__(self, url: str, limit: int = MAX_CONNECTIONS) -> None:
        self.url = url
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def identity(self) -> dict[str, Any]:
        """The what-if target's identity."""
        return {"kind": "what-if", "url": self.url}

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        """Ask the question over a bare aiohttp session and read the default contract's
        answer."""
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self._limit))
        payload = {"question": case.question, "top_k": k}
        try:
            async with asyncio.timeout(30.0), self._session.post(self.url, json=payload) as r:
                content = await r.read()
                status = r.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TargetConnectError(f"what-if: {exc!r}") from None
        if status != 200:
            raise TargetHTTPStatusError(f"HTTP {status}", status=status)
        return parse_default_response(json.loads(content))

    async def aclose(self) -> None:
        """Close the session, when one was opened."""
        if self._session is not None:
            await self._session.close()


async def _timed(
    dataset: Dataset,
    target: Target | WhatIfAiohttpTarget,
    cases: tuple[Case, ...],
    concurrency: int,
) -> tuple[float, list[float], int]:
    """Wall seconds, per-case overhead (latency minus the endpoint's sleep), failures."""
    options = RunOptions(k=5, concurrency=concurrency)
    started = time.perf_counter()
    report = await run_dataset(dataset, target, options, cases=cases)
    wall = time.perf_counter() - started
    overhead = [
        r.latency_seconds - r.stage_seconds.get("sleep", 0.0)
        for r in report.cases
        if r.scores is not None
    ]
    return wall, overhead, report.summary.error_count


async def _latency_levels(url: str, dataset: Dataset) -> dict[str, Any]:
    target = _target(url)
    out: dict[str, Any] = {}
    try:
        await _timed(dataset, target, dataset.questions[:100], 50)  # warm-up: connections
        for concurrency, count in LEVELS:
            cases = dataset.questions[:count]
            walls, overhead, errors = [], [], 0
            for _ in range(REPEATS):
                wall, extra, failed = await _timed(dataset, target, cases, concurrency)
                walls.append(wall)
                overhead += extra
                errors += failed
            ideal = count * LATENCY / concurrency
            out[str(concurrency)] = {
                "cases": count,
                "ideal_seconds": ideal,
                "wall_seconds": walls,
                "ratios": [w / ideal for w in walls],
                "overhead_median": median(overhead),
                "overhead_p95": nearest_rank(overhead, 95),
                "errors": errors,
            }
    finally:
        await target.aclose()
    # the same 1,000 cases at concurrency 50 through the what-if target
    # the what-if target at concurrency 1 (one repeat: what the machine adds per call when
    # nothing else runs) and at 50 (as many repeats as evaluator's own target)
    what_if = WhatIfAiohttpTarget(url)
    try:
        await _timed(dataset, what_if, dataset.questions[:100], 50)
        for concurrency, count, repeats in ((1, 100, 1), (50, 1_000, REPEATS)):
            cases = dataset.questions[:count]
            ideal = count * LATENCY / concurrency
            walls, overhead, errors = [], [], 0
            for _ in range(repeats):
                wall, extra, failed = await _timed(dataset, what_if, cases, concurrency)
                walls.append(wall)
                overhead += extra
                errors += failed
            out[f"what_if_{concurrency}"] = {
                "cases": count,
                "errors": errors,
                "ratios": [w / ideal for w in walls],
                "overhead_median": median(overhead),
                "overhead_p95": nearest_rank(overhead, 95),
            }
    finally:
        await what_if.aclose()
    # the floor of this machine: a bare aiohttp loop, 1,000 requests at concurrency 50
    connector = aiohttp.TCPConnector(limit=50)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _bare_aiohttp(session, url, dataset.questions[:100], 50)
        ideal = 1_000 * LATENCY / 50
        rates = [await _bare_aiohttp(session, url, dataset.questions[:1_000], 50) for _ in range(3)]
    out["bare_50"] = {"ratios": [1_000 / rate / ideal for rate in rates]}
    return out


async def _bare_aiohttp(
    session: aiohttp.ClientSession, url: str, cases: tuple[Case, ...], concurrency: int
) -> float:
    """A bare client loop: the same requests, ``concurrency`` workers; cases/s."""
    queue = iter(cases)

    async def worker() -> None:
        for case in queue:
            payload = {"question": case.question, "top_k": 5}
            async with session.post(url, json=payload) as response:
                json.loads(await response.read())

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    return len(cases) / (time.perf_counter() - started)


async def _zero_latency(url: str, dataset: Dataset) -> dict[str, Any]:
    cases = dataset.questions[:ZERO_CASES]
    target = _target(url)
    connector = aiohttp.TCPConnector(limit=ZERO_CONCURRENCY)
    what_if = WhatIfAiohttpTarget(url)
    evaluator_cps: list[float] = []
    what_if_cps: list[float] = []
    bare_cps: list[float] = []
    errors = 0
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            await _timed(dataset, target, cases[:200], ZERO_CONCURRENCY)  # warm-up all three
            await _timed(dataset, what_if, cases[:200], ZERO_CONCURRENCY)
            await _bare_aiohttp(session, url, cases[:200], ZERO_CONCURRENCY)
            for _ in range(ZERO_REPEATS):
                wall, _, failed = await _timed(dataset, target, cases, ZERO_CONCURRENCY)
                evaluator_cps.append(len(cases) / wall)
                errors += failed
                bare_cps.append(await _bare_aiohttp(session, url, cases, ZERO_CONCURRENCY))
                wall, _, failed = await _timed(dataset, what_if, cases, ZERO_CONCURRENCY)
                what_if_cps.append(len(cases) / wall)
                errors += failed
    finally:
        await target.aclose()
        await what_if.aclose()
    return {
        "evaluator_cps": evaluator_cps,
        "aiohttp_cps": bare_cps,
        "what_if_cps": what_if_cps,
        "ratios": [e / b for e, b in zip(evaluator_cps, bare_cps, strict=True)],
        "what_if_ratios": [w / b for w, b in zip(what_if_cps, bare_cps, strict=True)],
        "errors": errors,
    }


def _profile_run(url: str, dataset: Dataset, concurrency: int) -> dict[str, Any]:
    """One 1,000-case run under pyinstrument, on a target already built and warm."""

    async def once() -> dict[str, Any]:
        target = _target(url)
        try:
            await _timed(dataset, target, dataset.questions[:200], concurrency)  # warm
            with Profile() as p:
                await _timed(dataset, target, dataset.questions[:ZERO_CASES], concurrency)
        finally:
            await target.aclose()
        return p.result

    return asyncio.run(once())


def run() -> dict[str, Any]:
    """The runner's overhead against a bare loop at each latency and concurrency level, its
    figures by name."""
    dataset = golden_set(max(c for _, c in LEVELS))
    details: dict[str, Any] = {"latency_seconds": LATENCY, "repeats": REPEATS}
    with endpoint(LATENCY) as url:
        levels = asyncio.run(_latency_levels(url, dataset))
        at_50 = median(levels["50"]["ratios"])
        if at_50 > RATIO_GOAL:
            details["profile_latency_c50"] = _profile_run(url, dataset, 50)
    with endpoint(0.0) as url:
        zero = asyncio.run(_zero_latency(url, dataset))
        speed = median(zero["ratios"])
        if speed < SPEED_GOAL:
            details["profile_zero_latency_c50"] = _profile_run(url, dataset, ZERO_CONCURRENCY)
    details["levels"] = levels
    details["zero_latency"] = zero
    out: dict[str, Any] = {}
    for concurrency, count in LEVELS:
        level = levels[str(concurrency)]
        goal = f"<= {RATIO_GOAL}" if concurrency == 50 else None
        value = median(level["ratios"])
        only = "; only 100 cases at concurrency 1 (1,000 would take 50 s)" if count < 1000 else ""
        out[f"wall / ideal, 50 ms endpoint, concurrency {concurrency}"] = figure(
            value,
            "ratio",
            goal=goal,
            met=value <= RATIO_GOAL if goal else None,
            meaning=(
                f"run_dataset over HttpTarget, {count:,} cases; ideal = cases x 50 ms / "
                f"concurrency = {level['ideal_seconds']:g} s{only}"
            ),
            runs=level["ratios"],
        )
    what_if, alone, bare = levels["what_if_50"], levels["what_if_1"], levels["bare_50"]
    out["what-if: wall / ideal, 50 ms endpoint, concurrency 50, bare-aiohttp target"] = figure(
        median(what_if["ratios"]),
        "ratio",
        meaning=(
            "the same 1,000 cases through run_dataset with a minimal aiohttp target in place "
            "of HttpTarget (test code, not evaluator's); its overhead per case: median "
            f"{what_if['overhead_median'] * 1000:.2f} ms, P95 {what_if['overhead_p95'] * 1000:.2f}"
            f" ms (at concurrency 1: median {alone['overhead_median'] * 1000:.2f} ms, P95 "
            f"{alone['overhead_p95'] * 1000:.2f} ms, the floor of loopback, the endpoint's "
            "framework and this machine's wake-ups)"
        ),
        runs=what_if["ratios"],
    )
    out["floor: wall / ideal, 50 ms endpoint, concurrency 50, bare aiohttp loop"] = figure(
        median(bare["ratios"]),
        "ratio",
        meaning=(
            "1,000 POSTs by a bare aiohttp loop, 50 in flight, no scoring: what this machine "
            "and endpoint allow, the reference for the goal of 1.15"
        ),
        runs=bare["ratios"],
    )
    for concurrency, _ in LEVELS:
        level = levels[str(concurrency)]
        for stat in ("median", "p95"):
            out[f"latency overhead per case, {stat}, concurrency {concurrency}"] = figure(
                level[f"overhead_{stat}"] * 1000,
                "ms",
                meaning=(
                    "latency evaluator measured minus the sleep the endpoint reported: client, "
                    "loopback and endpoint framework time added to the latency it reports"
                ),
            )
    out["zero-latency endpoint, concurrency 50: evaluator / bare aiohttp"] = figure(
        speed,
        "ratio",
        goal=f">= {SPEED_GOAL}",
        met=speed >= SPEED_GOAL,
        meaning=(
            f"run_dataset (HttpTarget, retries, scoring, summary) cases/s over a bare aiohttp "
            f"loop's requests/s, {ZERO_CASES:,} cases, same endpoint, back to back; median of "
            "the pair ratios"
        ),
        runs=zero["ratios"],
    )
    out["what-if: zero-latency endpoint, concurrency 50, bare-aiohttp target / bare aiohttp"] = (
        figure(
            median(zero["what_if_ratios"]),
            "ratio",
            meaning=(
                "run_dataset with the minimal aiohttp target instead of HttpTarget: the "
                "floor for evaluator's own client"
            ),
            runs=zero["what_if_ratios"],
        )
    )
    out["zero-latency endpoint, concurrency 50: evaluator run_dataset"] = figure(
        median(zero["evaluator_cps"]),
        "cases/s",
        meaning="HttpTarget (aiohttp directly) + retries, scoring, summary",
        runs=zero["evaluator_cps"],
        digits=0,
    )
    out["zero-latency endpoint, concurrency 50: bare aiohttp loop"] = figure(
        median(zero["aiohttp_cps"]),
        "requests/s",
        meaning="the client-side limit of this machine: aiohttp POST + json.loads",
        runs=zero["aiohttp_cps"],
        digits=0,
    )
    failures = sum(level.get("errors", 0) for level in levels.values()) + zero["errors"]
    out["failed cases in the runner benchmarks"] = figure(
        failures,
        "cases",
        goal="0",
        met=failures == 0,
        meaning="a failed case would make every figure above meaningless",
        digits=0,
    )
    out["_details"] = details
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

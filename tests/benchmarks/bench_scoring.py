"""Scoring throughput: a generated 5,000-case golden set through ``run_dataset`` against an
in-process callable target that answers at once, on one core (one thread, one event loop).

What is timed is everything evaluator does per case except waiting for the target:
retries wrapper, deadline, queue-wait meter, scoring, the per-case record and the summary.
``score_case`` alone is timed too. Median of ``REPEATS`` after one warm-up run.
When the goal is missed, one run is profiled with pyinstrument and the hotspots kept.

``python -m tests.benchmarks.run --only scoring``
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from evaluator.run.runner import RunOptions, run_dataset
from evaluator.scoring import ScoringSettings, score_case
from evaluator.targets.callable import CallableTarget
from tests.benchmarks.support import RESPONSE, figure, golden_set, median, profile

CASES = 5_000
REPEATS = 5
CONCURRENCY = 4  # the default; with a target that never waits it makes no difference
GOAL = 20_000.0


async def _timed(dataset: Any, target: CallableTarget, options: RunOptions) -> float:
    started = time.perf_counter()
    report = await run_dataset(dataset, target, options)
    seconds = time.perf_counter() - started
    if report.summary.scored_count != CASES:
        raise RuntimeError(f"only {report.summary.scored_count} of {CASES} cases were scored")
    return CASES / seconds


def _run_once(dataset: Any, target: CallableTarget, options: RunOptions) -> float:
    # timed inside the loop, and the task returns a float: asyncio.run's signal handling
    # formats the main task's repr, and with it the repr of a returned 5,000-case report
    # (0.1 s; Python 3.11), which is not evaluator's cost
    return asyncio.run(_timed(dataset, target, options))


def _score_all(dataset: Any, settings: ScoringSettings) -> float:
    started = time.perf_counter()
    for case in dataset.cases:
        score_case(case, RESPONSE, 5, settings)
    return CASES / (time.perf_counter() - started)


def run() -> dict[str, Any]:
    """Scoring throughput of a callable target on one core, its figures by name."""
    dataset = golden_set(CASES)
    target = CallableTarget("tests.benchmarks.support:answer", name="bench")
    options = RunOptions(k=5, concurrency=CONCURRENCY)
    _run_once(dataset, target, options)  # warm-up: imports, caches
    runs = [_run_once(dataset, target, options) for _ in range(REPEATS)]
    scores = [_score_all(dataset, options.scoring) for _ in range(REPEATS)]
    throughput = median(runs)
    met = throughput >= GOAL
    out: dict[str, Any] = {
        "run_dataset throughput, callable target, 1 core": figure(
            throughput,
            "cases/s",
            goal=f">= {GOAL:,.0f}",
            met=met,
            meaning=(
                f"{CASES:,} generated cases through run_dataset (retry wrapper, deadline, "
                "scoring, record, summary) with a target that answers at once; evaluator's "
                "own cost per case is 1/value"
            ),
            runs=runs,
            digits=0,
        ),
        "score_case throughput, 1 core": figure(
            median(scores),
            "cases/s",
            meaning="score_case alone (retrieval, citation and answer metrics) per case",
            runs=scores,
            digits=0,
        ),
    }
    details: dict[str, Any] = {"cases": CASES, "repeats": REPEATS, "concurrency": CONCURRENCY}
    if not met:
        details["profile_run_dataset"] = profile(lambda: _run_once(dataset, target, options))
    out["_details"] = details
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, ensure_ascii=False))

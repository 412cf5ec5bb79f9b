"""Conversations through the runner against a loopback endpoint with a fixed 50 ms latency.

250 scripted conversations of 4 turns (1,000 turns), 50 conversations in flight: each
conversation's turns go one after the other, each sent the earlier ones as its history (the
default contract's ``history``), as ``run_dataset`` does. The ideal is 250 x 4 x 50 ms / 50
= 1 s. The reference is a bare aiohttp loop sending the same sequential turns with the same
growing history (no scoring, no report): the ratio of the two walls is the run loop's cost
over the floor, held to the single-turn goal of ``bench_runner`` (wall / ideal <= 1.15 at
concurrency 50). Median of ``REPEATS``, the two run back to back.

``python -m tests.benchmarks.run --only conversations``
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from evaluator.config import HttpTargetConfig
from evaluator.dataset import parse_dataset
from evaluator.factory import build_target
from evaluator.models import Conversation, Dataset
from evaluator.run.runner import RunOptions, run_dataset
from tests.benchmarks.bench_goals import WALL_GOAL
from tests.benchmarks.support import endpoint, figure, median

LATENCY = 0.05
CONVERSATIONS = 250
TURNS = 4
CONCURRENCY = 50
REPEATS = 5


def conversations(count: int = CONVERSATIONS, turns: int = TURNS) -> Dataset:
    """``count`` conversations of ``turns`` turns, parsed by evaluator's own reader."""
    lines = [
        json.dumps(
            {
                "id": f"conv-{i:04d}",
                "tags": ["refund"],
                "turns": [
                    {
                        "question": f"conversation {i}, turn {n}: 退款多久到账？",
                        "relevant_ids": ["doc-0"],
                        "expected_facts": [["七天", "7 days"]],
                    }
                    for n in range(1, turns + 1)
                ],
            },
            ensure_ascii=False,
        )
        for i in range(count)
    ]
    return parse_dataset("\n".join(lines).encode(), "conversations.jsonl")


async def _evaluator(url: str, dataset: Dataset) -> tuple[float, int]:
    """Wall seconds of one ``run_dataset`` and its failed turns (a warm target)."""
    target = build_target(HttpTargetConfig(url=url, max_connections=200))
    options = RunOptions(k=5, concurrency=CONCURRENCY)
    try:
        await run_dataset(dataset, target, options)  # warm-up: connections
        started = time.perf_counter()
        report = await run_dataset(dataset, target, options)
        return time.perf_counter() - started, report.summary.error_count
    finally:
        await target.aclose()


async def _bare(url: str, dataset: Dataset) -> float:
    """Wall seconds of a bare aiohttp loop sending the same turns, each with its history."""
    pending = iter([c for c in dataset.cases if isinstance(c, Conversation)])
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)

    async def worker(session: aiohttp.ClientSession) -> None:
        for conversation in pending:
            history: list[dict[str, str]] = []
            for turn in conversation.turns:
                payload = {"question": turn.question, "top_k": 5, "history": history}
                async with session.post(url, json=payload) as response:
                    answer = json.loads(await response.read())["answer"]
                history = [
                    *history,
                    {"role": "user", "content": turn.question},
                    {"role": "assistant", "content": answer},
                ]

    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for _ in range(CONCURRENCY):
                group.create_task(worker(session))
        return time.perf_counter() - started


def run() -> dict[str, Any]:
    """The runner's wall over conversations against the ideal and against a bare loop."""
    dataset = conversations()
    ideal = CONVERSATIONS * TURNS * LATENCY / CONCURRENCY
    evaluator_walls: list[float] = []
    bare_walls: list[float] = []
    errors = 0
    with endpoint(LATENCY) as url:
        asyncio.run(_bare(url, dataset))  # warm-up of the endpoint
        for _ in range(REPEATS):
            wall, failed = asyncio.run(_evaluator(url, dataset))
            evaluator_walls.append(wall)
            errors += failed
            bare_walls.append(asyncio.run(_bare(url, dataset)))
    ratios = [w / ideal for w in evaluator_walls]
    over_bare = [e / b for e, b in zip(evaluator_walls, bare_walls, strict=True)]
    value = median(over_bare)
    shape = f"{CONVERSATIONS} conversations x {TURNS} turns, {CONCURRENCY} in flight"
    return {
        "_details": {
            "ideal_seconds": ideal,
            "evaluator_walls": evaluator_walls,
            "bare_walls": bare_walls,
            "errors": errors,
        },
        "conversations, 50 ms endpoint, concurrency 50: run loop wall / bare loop's": figure(
            value,
            "ratio",
            goal=f"<= {WALL_GOAL:g}",
            met=value <= WALL_GOAL and errors == 0,
            meaning=(
                f"run_dataset over HttpTarget, {shape}, turns in order with their history, "
                f"median {median(evaluator_walls):.3f} s; a bare aiohttp loop sending the same "
                f"sequential turns and history {median(bare_walls):.3f} s; {REPEATS} pairs"
            ),
            runs=over_bare,
        ),
        "conversations: wall / ideal, 50 ms endpoint, concurrency 50": figure(
            median(ratios),
            "ratio",
            meaning=f"ideal = turns x 50 ms / concurrency = {ideal:g} s",
            runs=ratios,
        ),
        "conversations: floor, bare aiohttp loop, wall / ideal": figure(
            median([b / ideal for b in bare_walls]),
            "ratio",
            meaning="what this machine and endpoint allow for the same sequential turns",
            runs=[b / ideal for b in bare_walls],
        ),
    }

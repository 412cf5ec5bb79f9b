"""The reference client: a bare aiohttp loop, no scoring, no report (not evaluator code).

``python -m tests.benchmarks.bare_loop GOLDEN.jsonl URL CONCURRENCY`` POSTs every question
of the golden set to URL with CONCURRENCY in flight, decodes each JSON answer, and prints
one JSON line: wall seconds and, per request, the latency the client saw (request sent to
last byte read) minus the endpoint's own sleep (``timings.sleep``), i.e. the client,
loopback and framework time a latency figure carries. It is what the issue calls "a
30-line aiohttp script": the floor a Python client on this machine can reach.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp


async def added_latency(session: aiohttp.ClientSession, url: str, question: str) -> float:
    """One request's latency minus the sleep the endpoint reports: what the client added."""
    started = time.perf_counter()
    async with session.post(url, json={"question": question, "top_k": 5}) as response:
        body = await response.read()
    latency = time.perf_counter() - started
    slept: float = json.loads(body).get("timings", {}).get("sleep", 0.0)
    return latency - slept


async def bare_loop(
    session: aiohttp.ClientSession, url: str, questions: list[str], concurrency: int
) -> tuple[float, list[float]]:
    """(wall seconds, added latency per request) for ``questions`` at ``concurrency``."""
    pending = iter(questions)
    added: list[float] = []

    async def worker() -> None:
        for question in pending:
            added.append(await added_latency(session, url, question))

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    return time.perf_counter() - started, added


async def main(questions: list[str], url: str, concurrency: int) -> None:
    """Ask every question with the bare loop and print its wall time and request count as
    JSON."""
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        wall, added = await bare_loop(session, url, questions, concurrency)
    print(json.dumps({"wall_seconds": wall, "requests": len(added)}))


if __name__ == "__main__":
    lines = Path(sys.argv[1]).read_text("utf-8").splitlines()
    asked = [json.loads(line)["question"] for line in lines if line.strip()]
    asyncio.run(main(asked, sys.argv[2], int(sys.argv[3])))

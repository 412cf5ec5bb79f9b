"""Client overhead of the HTTP transports HttpTarget could use, on a zero-latency endpoint.

The endpoint is an aiohttp server in its own process answering every POST at once with
a small default-contract body, so the numbers measure the client, not the server's work.
Each client sends ``COUNT`` requests with ``CONCURRENCY`` in flight; the figure kept is
the median requests/second of ``REPEATS`` runs. Clients: httpx with its default pool
limits (100 connections, 20 kept alive), httpx with its pool sized to the concurrency,
bare aiohttp, and evaluator's own ``HttpTarget.query`` (aiohttp used directly, plus
admission, deadline, size cap, bounded decoding, parsing). httpx over
``httpx_aiohttp.AiohttpTransport``, evaluator's transport until aiohttp was used directly, is
no longer installed.

Run with ``.venv/bin/python tests/benchmarks/bench_transport.py [--count N]`` (prints the
raw numbers of :func:`measure`); ``make bench`` calls :func:`run` for its figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import httpx

CONCURRENCY = 50
COUNT = 2000
REPEATS = 3
WARMUP = 100

_SERVER = r"""
import json, sys
from aiohttp import web

BODY = json.dumps({
    "answer": "Refunds are accepted within 7 days.",
    "retrieved": [{"id": f"doc-{i}", "score": 1.0 / (i + 1), "text": "x" * 200} for i in range(5)],
    "citations": [1],
    "timings": {"embedding": 0.001, "model": 0.002},
}).encode()

async def handle(request):
    await request.read()
    return web.Response(body=BODY, content_type="application/json")

async def main():
    app = web.Application()
    app.router.add_post("/rag", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

import asyncio
asyncio.run(main())
"""

Send = Callable[[], Awaitable[None]]


@contextmanager
def endpoint() -> Iterator[str]:
    """A zero-latency endpoint in a subprocess; yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/rag"
    finally:
        proc.terminate()
        proc.wait(10)


async def _drive(send: Send, count: int, concurrency: int) -> float:
    """Send ``count`` requests with ``concurrency`` workers; return requests/second."""
    for _ in range(WARMUP):
        await send()
    remaining = count

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await send()

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    return count / (time.perf_counter() - started)


PAYLOAD = {"question": "How many days do I have to ask for a refund?", "top_k": 5}


async def _httpx(url: str, count: int, concurrency: int, transport: str) -> float:
    """httpx with its own pool, default or sized to the concurrency."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    if transport == "default-limits":
        client = httpx.AsyncClient()
    else:
        client = httpx.AsyncClient(limits=limits)
    async with client:

        async def send() -> None:
            response = await client.post(url, json=PAYLOAD)
            json.loads(response.content)

        return await _drive(send, count, concurrency)


async def _aiohttp(url: str, count: int, concurrency: int) -> float:
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def send() -> None:
            async with session.post(url, json=PAYLOAD) as response:
                json.loads(await response.read())

        return await _drive(send, count, concurrency)


async def _evaluator(url: str, count: int, concurrency: int) -> float:
    from evaluator.config import HttpTargetConfig
    from evaluator.factory import build_target
    from evaluator.models import Case

    target = build_target(HttpTargetConfig(url=url, max_connections=concurrency))
    case = Case(id="bench", question=str(PAYLOAD["question"]), relevance={"doc-1": 1})
    try:

        async def send() -> None:
            await target.query(case, 5)

        return await _drive(send, count, concurrency)
    finally:
        await target.aclose()


CLIENTS: dict[str, Callable[[str, int, int], Coroutine[Any, Any, float]]] = {
    "httpx_default_limits": lambda url, n, c: _httpx(url, n, c, "default-limits"),
    "httpx": lambda url, n, c: _httpx(url, n, c, "sized"),
    "aiohttp": _aiohttp,
    "evaluator_http_target": _evaluator,
}


def measure(
    count: int = COUNT, concurrency: int = CONCURRENCY, repeats: int = REPEATS
) -> dict[str, Any]:
    """Benchmark every client; the result maps client -> median requests/second."""
    results: dict[str, list[float]] = {name: [] for name in CLIENTS}
    with endpoint() as url:
        for _ in range(repeats):
            for name, client in CLIENTS.items():
                results[name].append(asyncio.run(client(url, count, concurrency)))
    return {
        "count": count,
        "concurrency": concurrency,
        "repeats": repeats,
        "requests_per_second": {n: round(statistics.median(v), 1) for n, v in results.items()},
        "runs": {n: [round(x, 1) for x in v] for n, v in results.items()},
    }


MEANINGS = {
    "httpx_default_limits": (
        "httpx AsyncClient, default pool limits (100 connections, 20 kept alive)"
    ),
    "httpx": "httpx AsyncClient, pool sized to the concurrency",
    "aiohttp": "bare aiohttp ClientSession: the client-side limit of this machine",
    "evaluator_http_target": "HttpTarget.query: aiohttp plus admission, deadline, size cap, "
    "bounded decoding, parsing",
}


def run(
    count: int = COUNT, concurrency: int = CONCURRENCY, repeats: int = REPEATS
) -> dict[str, Any]:
    """The figures for ``make bench``: requests/s of each client (``_details``: raw runs)."""
    raw = measure(count, concurrency, repeats)
    shape = f"{count:,} POSTs, {concurrency} in flight, zero-latency endpoint; median of {repeats}"
    out: dict[str, Any] = {}
    for name, value in raw["requests_per_second"].items():
        out[f"{name}, requests/s"] = {
            "value": round(value),
            "unit": "requests/s",
            "goal": None,
            "met": None,
            "meaning": f"{MEANINGS[name]}; {shape}",
            "runs": raw["runs"][name],
        }
    rps = raw["requests_per_second"]
    out["HttpTarget.query / bare aiohttp"] = {
        "value": round(rps["evaluator_http_target"] / rps["aiohttp"], 3),
        "unit": "ratio",
        "goal": None,
        "met": None,
        "meaning": "share of the bare client's rate that evaluator's HTTP target keeps",
    }
    out["_details"] = raw
    return out


def main() -> None:
    """Measure the transports and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    print(json.dumps(measure(args.count, args.concurrency, args.repeats), indent=2))


if __name__ == "__main__":
    main()

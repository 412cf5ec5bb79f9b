"""A RAG endpoint for benchmarks: aiohttp, default contract, a fixed latency, own process.

``python -m tests.benchmarks.endpoint --latency 0.05`` binds 127.0.0.1 on a free port,
prints the port on stdout and serves ``POST /rag`` until terminated. Each answer sleeps
``latency`` seconds (``asyncio.sleep``) and reports the sleep it actually got in
``timings.sleep``, so a client can subtract exactly the endpoint's share from the latency
it measured. With ``--latency 0`` the body is encoded once and served as is: the server
does as little as aiohttp allows, so benchmarks measure the client.

With ``--sse`` it serves ``POST /rag/stream`` instead: server-sent events whose first
piece of answer comes after the number of seconds the request's ``question`` says (the
headers go out at once), then a final event with the ids and, in ``timings.first_token``,
the seconds from the request's arrival to the first piece's write as the server saw them.

With ``--log-requests`` it also keeps, per request, the ``X-Bench-Job`` header, the
question and the wall-clock times (``time.time()``) it arrived and its answer went out,
served as JSON by ``GET /requests``: a benchmark can place each case in time.

Use :func:`tests.benchmarks.support.endpoint` to start and stop it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from aiohttp import web

#: the retrieved evidence every answer carries: ids doc-0 .. doc-4, best first
RETRIEVED = [{"id": f"doc-{i}", "score": 1.0 / (i + 1), "text": "x" * 200} for i in range(5)]
#: six stages, as a real pipeline reports (embedding, vector, keyword, rerank, model, sleep)
STAGES = {"embedding": 0.011, "vector": 0.004, "keyword": 0.002, "rerank": 0.03, "model": 0.9}


def body(slept: float) -> dict[str, Any]:
    """The endpoint's answer in the default contract, the time it slept among its stage
    timings."""
    return {
        "answer": "Refunds are accepted within 7 days (七天) of delivery, see the policy [1].",
        "retrieved": RETRIEVED,
        "citations": [1, 2],
        "timings": {**STAGES, "sleep": slept},
    }


def make_app(latency: float, log_requests: bool = False) -> web.Application:
    """The endpoint answering after ``latency`` seconds, keeping each request's times with
    ``log_requests``."""
    static = json.dumps(body(0.0), ensure_ascii=False).encode()
    #: (job, question, arrived, answered) per request, with ``log_requests``
    log: list[tuple[str, str, float, float]] = []

    async def logged(request: web.Request) -> web.Response:
        arrived = time.time()
        question = str(json.loads(await request.read())["question"])
        await asyncio.sleep(latency)
        data = json.dumps(body(time.time() - arrived), ensure_ascii=False).encode()
        log.append((request.headers.get("X-Bench-Job", ""), question, arrived, time.time()))
        return web.Response(body=data, content_type="application/json")

    async def requests(request: web.Request) -> web.Response:
        return web.json_response(log)

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        if latency <= 0:
            return web.Response(body=static, content_type="application/json")
        started = time.perf_counter()
        await asyncio.sleep(latency)
        slept = time.perf_counter() - started
        data = json.dumps(body(slept), ensure_ascii=False).encode()
        return web.Response(body=data, content_type="application/json")

    app = web.Application()
    app.router.add_post("/rag", logged if log_requests else handle)
    app.router.add_get("/requests", requests)
    return app


def make_sse_app() -> web.Application:
    """The streaming endpoint: the first piece after the delay the question names, then the
    rest."""

    async def handle(request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        delay = float(json.loads(await request.read())["question"])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.sleep(delay)
        await response.write(b'data: {"delta": "Refunds are accepted"}\n\n')
        first = time.perf_counter() - arrived
        final = {
            "delta": " within 7 days.",
            "type": "final",
            "sources": RETRIEVED,
            "timings": {"first_token": first},
        }
        await response.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/rag/stream", handle)
    return app


async def serve(latency: float, sse: bool = False, log_requests: bool = False) -> None:
    """Serve the endpoint on a free loopback port, printed, until the process is stopped."""
    app = make_sse_app() if sse else make_app(latency, log_requests)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    print(runner.addresses[0][1], flush=True)  # the bound port, asked for 0
    try:
        await asyncio.Event().wait()  # until SIGTERM ends the process
    finally:
        await runner.cleanup()


def main() -> None:
    """Serve the endpoint the command line asks for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--sse", action="store_true", help="stream, first piece delayed")
    parser.add_argument(
        "--log-requests", action="store_true", help="keep each request's times: GET /requests"
    )
    args = parser.parse_args()
    asyncio.run(serve(args.latency, args.sse, args.log_requests))


if __name__ == "__main__":
    main()

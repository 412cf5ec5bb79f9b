"""How exactly the evaluator measures time to first token: a streaming endpoint in its own
process sends its first piece of answer a known time after the request (50 ms and 200 ms),
one case at a time through the whole runner, and each case's ``ttft_seconds`` is compared
with that delay.

Two errors per delay: against the nominal delay (what a user reads: it includes the
endpoint's own sleep overshoot and the loopback round trip), and against the first-token
time the endpoint measured itself (request arrival to the first write), which leaves only
the evaluator's share: sending the request, reading and parsing the first event.

``python -m tests.benchmarks.run --only ttft``
"""

from __future__ import annotations

import asyncio
from typing import Any

from evaluator.config import HttpTargetConfig
from evaluator.factory import build_target
from evaluator.models import Case, Dataset
from evaluator.run.runner import RunOptions, run_dataset
from tests.benchmarks.support import endpoint, figure, median, quick

DELAYS = (0.05, 0.2)
GOAL_MS = 2.0


def _dataset(delay: float, n: int) -> Dataset:
    cases = tuple(Case(id=f"c{i}", question=repr(delay), relevance={"doc-0": 1}) for i in range(n))
    return Dataset(path="ttft.jsonl", name="ttft", cases=cases, content_hash="0" * 64)


async def _errors(url: str, delay: float, n: int) -> tuple[list[float], list[float]]:
    """Per case: |TTFT - delay| and |TTFT - the endpoint's own first-token time|, in ms."""
    config = HttpTargetConfig(
        url=url,
        streaming={
            "format": "sse",
            "content": "delta",
            "fields_from": "type == 'final'",
            "done": "[DONE]",
        },
        response={"ids": "sources[].id", "timings": "timings"},
        retry={"retries": 0},
    )
    target = build_target(config)
    try:
        await run_dataset(_dataset(delay, 3), target, RunOptions(concurrency=1))  # warm up
        report = await run_dataset(_dataset(delay, n), target, RunOptions(concurrency=1))
    finally:
        await target.aclose()
    nominal, own = [], []
    for record in report.cases:
        if record.error is not None or record.ttft_seconds is None:
            raise RuntimeError(f"case {record.id} failed: {record.error}")
        nominal.append(abs(record.ttft_seconds - delay) * 1e3)
        own.append(abs(record.ttft_seconds - dict(record.stage_seconds)["first_token"]) * 1e3)
    return nominal, own


def run() -> dict[str, Any]:
    """The error of the measured time to first token at each known delay, its figures by
    name."""
    n = 20 if quick() else 100
    out: dict[str, Any] = {}
    details: dict[str, Any] = {"cases_per_delay": n, "concurrency": 1}
    with endpoint(sse=True) as url:
        for delay in DELAYS:
            nominal, own = asyncio.run(_errors(url, delay, n))
            ms = round(delay * 1e3)
            mid, top = median(nominal), max(nominal)
            out[f"ttft_error_median_{ms}ms"] = figure(
                mid, "ms", goal=f"<= {GOAL_MS:g} ms", met=mid <= GOAL_MS, digits=3,
                meaning=f"median |measured TTFT - {ms} ms| over {n} streamed cases",
            )  # fmt: skip
            out[f"ttft_error_max_{ms}ms"] = figure(
                top, "ms", goal=f"<= {GOAL_MS:g} ms", met=top <= GOAL_MS, digits=3,
                meaning=f"worst |measured TTFT - {ms} ms| over {n} streamed cases",
            )  # fmt: skip
            out[f"ttft_client_share_median_{ms}ms"] = figure(
                median(own), "ms", digits=3,
                meaning="median |TTFT - the endpoint's own first-token time|: the "
                "evaluator's share (request out, first event in and parsed)",
            )  # fmt: skip
            out[f"ttft_client_share_max_{ms}ms"] = figure(
                max(own), "ms", digits=3,
                meaning="worst |TTFT - the endpoint's own first-token time|",
            )  # fmt: skip
            details[f"{ms}ms"] = {
                "nominal_error_ms": [round(x, 3) for x in nominal],
                "client_share_ms": [round(x, 3) for x in own],
            }
    out["_details"] = details
    return out

"""The judge path's own cost per case, and what the verdict cache saves on a second run.

A report of ``CASES`` scored cases (``run_dataset`` over the in-process callable target
``tests.benchmarks.support:answer``: every case has an answer and evidence texts) is
judged by :func:`evaluator.judge.run.judge_report` against the honest loopback judge of
``tests/support/judges.py`` (an OpenAI-compatible ``/v1/chat/completions`` that answers at
once), run in a process of its own, so that this process's CPU (``time.process_time``) is
the judge path's alone: building each check's prompt, the HTTP call, parsing and checking
the verdict, the cache, the judged metrics. The judge's latency is excluded by
construction (it answers at once, in another process); its wall time is reported beside.

1. No cache, ``REPEATS`` passes (median): CPU per judged case and per judge call.
2. The cache (``VerdictStore``, the table in the history store): a first pass into an
   empty store, then a second pass over the same report: judge calls (only the canaries,
   never cached, are asked again) and wall time of each.

``python -m tests.benchmarks.run --only judge``
"""

from __future__ import annotations

import asyncio
import json
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator.judge.client import JudgeClient
from evaluator.judge.run import judge_report
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from evaluator.report import RunReport
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.callable import CallableTarget
from tests.benchmarks.support import REPO, figure, golden_set, median, quick

CONCURRENCY = 16
#: the judge in its own process: prints its port, serves until stdin closes
_JUDGE = """
import sys, time
from tests.support.judges import LoopbackJudge
with LoopbackJudge() as judge:
    print(judge.port, flush=True)
    sys.stdin.read()
"""


def _report(n: int) -> RunReport:
    target = CallableTarget("tests.benchmarks.support:answer", name="bench")
    return asyncio.run(run_dataset(golden_set(n), target, RunOptions(k=5, concurrency=8)))


async def _pass(
    report: RunReport, config: JudgeConfig, cache: VerdictStore | None
) -> dict[str, Any]:
    async with JudgeClient(config) as client:
        cpu, started = time.process_time(), time.perf_counter()
        judged = await judge_report(report, client, cache=cache)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    usage = judged.usage
    judgements = sum(len(c.outcomes) for c in judged.cases)
    return {
        "cpu": cpu,
        "wall": wall,
        "calls": usage.calls,
        "cache_hits": usage.cache_hits,
        "errors": dict(usage.errors),
        "cases": len(judged.cases),
        "checks": judgements,
        "judge_latency": usage.latency_seconds,
    }


def run() -> dict[str, Any]:
    cases, repeats = (300, 3) if quick() else (1_000, 5)
    report = _report(cases)
    proc = subprocess.Popen(
        [sys.executable, "-c", _JUDGE],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise RuntimeError(f"loopback judge did not start (got {line!r})")
        url = f"http://127.0.0.1:{int(line)}/v1/chat/completions"
        config = JudgeConfig(url=url, model="loopback", concurrency=CONCURRENCY, cache=False)
        asyncio.run(_pass(report, config, None))  # warm-up
        plain = [asyncio.run(_pass(report, config, None)) for _ in range(repeats)]
        with tempfile.TemporaryDirectory() as folder:
            store = VerdictStore(Path(folder))
            cached = config.model_copy(update={"cache": True})
            first = asyncio.run(_pass(report, cached, store))
            second = asyncio.run(_pass(report, cached, store))
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    judged_cases = plain[0]["cases"]
    calls = plain[0]["calls"]
    cpu = median([p["cpu"] for p in plain])
    wall = median([p["wall"] for p in plain])
    errors = sum(sum(p["errors"].values()) for p in [*plain, first, second])
    out: dict[str, Any] = {
        "judge path's own CPU per judged case (zero-latency judge, no cache)": figure(
            cpu / judged_cases * 1e6,
            "µs",
            meaning=(
                f"judge_report over {judged_cases:,} scored cases ({calls:,} judge calls: "
                f"the applicable checks and the canaries), median of {repeats} passes of "
                f"this process's CPU; per call {cpu / calls * 1e6:.0f} µs; the loopback "
                f"judge answers at once in another process; wall {wall:.2f} s at "
                f"concurrency {CONCURRENCY}"
            ),
            runs=[p["cpu"] / judged_cases * 1e6 for p in plain],
            digits=1,
        ),
        "verdict cache, second run over the same answers: judge calls": figure(
            second["calls"],
            "calls",
            meaning=(
                f"first run into an empty cache {first['calls']:,} calls, second "
                f"{second['calls']:,} ({second['cache_hits']:,} cache hits; the canaries are "
                "never cached)"
            ),
            digits=0,
        ),
        "verdict cache, second run / first run: wall": figure(
            second["wall"] / first["wall"],
            "ratio",
            meaning=(
                f"first run {first['wall']:.2f} s (CPU {first['cpu']:.2f} s, filling the "
                f"cache), second {second['wall']:.2f} s (CPU {second['cpu']:.2f} s), against "
                f"a judge answering at once: with a real judge's latency the saving is larger"
            ),
        ),
        "verdict cache, first run (filling it) / a run without the cache: wall": figure(
            first["wall"] / wall,
            "ratio",
            meaning=(
                f"what storing {first['calls'] - second['calls']:,} verdicts (one SQLite "
                f"transaction each) costs the first run ({first['wall']:.2f} s against "
                f"{wall:.2f} s uncached); the second "
                f"run is {second['wall'] / wall:.2f}x the uncached run's wall, "
                f"CPU per case {second['cpu'] / judged_cases * 1e6:.0f} µs against "
                f"{cpu / judged_cases * 1e6:.0f} µs"
            ),
        ),
        "judge errors in these passes": figure(
            errors,
            "calls",
            goal="0",
            met=errors == 0,
            digits=0,
            meaning="a judge error would make the figures above meaningless",
        ),
    }
    out["_details"] = {"quick": quick(), "plain": plain, "first": first, "second": second}
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))

"""The judge path's own overhead per case, and what the verdict cache saves on a second run.

The judge is the honest loopback judge of ``tests/support/judges.py`` (an OpenAI-compatible
``/v1/chat/completions`` that answers at once), run in a process of its own: its latency is
excluded by construction, and this process's CPU (``time.process_time``) is evaluator's alone.
The target is the in-process callable ``tests.benchmarks.support:answer`` (every case has an
answer and evidence texts), so the run itself is evaluator's work too.

1. Overhead: the same run, with and without the judge, alternated ``REPEATS`` times. Without:
   ``run_dataset`` and ``write_report`` (what ``evaluator run`` does for a job without a
   judge). With: the same, then ``judge_file`` as ``evaluator run`` calls it for a job with a
   judge (read the report back with its evidence, judge every applicable check and the
   canaries, write it again), no cache. The overhead per case is the median of the paired
   differences (wall and CPU) over the cases.
2. The judge pass alone (``judge_report``), no cache: CPU per judged case and per call.
3. Repeated verdicts: the same pass with ``samples = 3`` (every check asked three times, the
   majority deciding), its CPU per judged case against ``samples = 1``.
4. The cache (``VerdictStore``, the table in the history store): a first pass into an empty
   store (its verdicts written in one transaction at the pass's end), then a second pass
   over the same report: judge calls (only the canaries, never cached, are asked again),
   wall time of each, and the first pass against a pass without the cache.

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

from evaluator.judge.apply import judge_file
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from evaluator.models import Dataset
from evaluator.report import RunReport, write_report
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


def _run(golden: Dataset) -> RunReport:
    target = CallableTarget("tests.benchmarks.support:answer", name="bench")
    return asyncio.run(run_dataset(golden, target, RunOptions(k=5, concurrency=8)))


def _whole_run(golden: Dataset, folder: Path, judge: JudgeConfig | None) -> dict[str, float]:
    """One run as ``evaluator run`` makes it: the run and its report, then, with a judge,
    the judge pass over the written report (no cache). Wall and this process's CPU."""
    path = folder / "run.json"
    cpu, started = time.process_time(), time.perf_counter()
    write_report(_run(golden), path)
    calls = 0
    if judge is not None:
        calls = judge_file(path, judge, cache_folder=None)[1].usage.calls
    return {
        "wall": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "calls": calls,
    }


async def _pass(
    report: RunReport, config: JudgeConfig, cache: VerdictStore | None
) -> dict[str, Any]:
    async with JudgePanel(config) as panel:
        cpu, started = time.process_time(), time.perf_counter()
        judged = await judge_report(report, panel, cache=cache)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    commits = cache.commits if cache is not None else 0
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
        "commits": commits,
    }


def _samples_figure(
    plain: list[dict[str, Any]], sampled: list[dict[str, Any]], judged_cases: int
) -> dict[str, Any]:
    """What asking every check three times costs the judge path per case, against once."""
    once = median([p["cpu"] for p in plain]) / judged_cases * 1e6
    thrice = median([p["cpu"] for p in sampled]) / judged_cases * 1e6
    return figure(
        thrice / once,
        "ratio",
        meaning=(
            f"judge_report's CPU per judged case at samples = 3 ({thrice:.0f} µs, "
            f"{sampled[0]['calls']:,} calls) against samples = 1 ({once:.0f} µs, "
            f"{plain[0]['calls']:,} calls), median of {len(plain)} passes each, no cache; "
            f"wall {median([p['wall'] for p in sampled]):.2f} s against "
            f"{median([p['wall'] for p in plain]):.2f} s with a judge answering at once"
        ),
        runs=[p["cpu"] / judged_cases * 1e6 for p in sampled],
        digits=2,
    )


def run() -> dict[str, Any]:
    """The judge path's overhead per case and the verdict cache's saving, its figures by
    name."""
    cases, repeats = (300, 3) if quick() else (1_000, 5)
    golden = golden_set(cases)
    report = _run(golden)
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
        with tempfile.TemporaryDirectory() as folder:
            _whole_run(golden, Path(folder), config)  # warm-up (judge_file's imports)
            paired = []
            for i in range(repeats):  # alternated, so drifting load colours both alike
                order = (None, config) if i % 2 == 0 else (config, None)
                paired.append(
                    {
                        "without" if judge is None else "with": _whole_run(
                            golden, Path(folder), judge
                        )
                        for judge in order
                    }
                )
        plain = [asyncio.run(_pass(report, config, None)) for _ in range(repeats)]
        # repeated verdicts: every check asked three times, the majority decides
        thrice = config.model_copy(update={"samples": 3})
        sampled = [asyncio.run(_pass(report, thrice, None)) for _ in range(repeats)]
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
    errors = sum(sum(p["errors"].values()) for p in [*plain, *sampled, first, second])
    errors += sum(p["with"]["calls"] != paired[0]["with"]["calls"] for p in paired)
    wall_added = [(p["with"]["wall"] - p["without"]["wall"]) / cases * 1e6 for p in paired]
    cpu_added = [(p["with"]["cpu"] - p["without"]["cpu"]) / cases * 1e6 for p in paired]
    without_wall = median([p["without"]["wall"] for p in paired])
    with_wall = median([p["with"]["wall"] for p in paired])
    out: dict[str, Any] = {
        "judge path's own overhead per case, CPU: a run with a zero-latency judge - the same "
        "run without": figure(
            median(cpu_added),
            "µs",
            meaning=(
                f"run_dataset + write_report of {cases:,} cases (in-process target), then "
                f"judge_file as evaluator run calls it ({paired[0]['with']['calls']:,} judge "
                f"calls, no cache: read back, prompts, HTTP, verdicts, written again), against "
                f"the same run without a judge; median of {repeats} alternated pairs of this "
                f"process's CPU per case (pairs {min(cpu_added):.0f}-{max(cpu_added):.0f} µs); "
                "the judge answers at once in another process, so its latency is excluded"
            ),
            runs=cpu_added,
            digits=1,
        ),
        "judge path's own overhead per case, wall: a run with a zero-latency judge - the same "
        "run without": figure(
            median(wall_added),
            "µs",
            meaning=(
                f"the same pairs' wall per case (pairs {min(wall_added):.0f}-"
                f"{max(wall_added):.0f} µs): run without {without_wall:.2f} s, with "
                f"{with_wall:.2f} s ({with_wall / without_wall:.1f}x), judge calls at "
                f"concurrency {CONCURRENCY}; on this 2-core machine the loopback judge's own "
                "CPU competes with the run's, so the wall overstates what a remote judge's "
                "zero latency would add"
            ),
            runs=wall_added,
            digits=1,
        ),
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
        "judge path's own CPU per judged case, samples = 3 / samples = 1": _samples_figure(
            plain, sampled, judged_cases
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
                f"what storing {first['calls'] - second['calls']:,} verdicts (in "
                f"{first['commits']} SQLite transaction(s) for the pass) costs the first run "
                f"({first['wall']:.2f} s against "
                f"{wall:.2f} s uncached); the second "
                f"run is {second['wall'] / wall:.2f}x the uncached run's wall; CPU of the "
                f"first run {first['cpu'] / cpu:.2f}x the uncached run's; second run "
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
            meaning=(
                "a judge error (or a judged run making fewer calls than another) would make "
                "the figures above meaningless"
            ),
        ),
    }
    out["_details"] = {
        "quick": quick(),
        "paired": paired,
        "plain": plain,
        "first": first,
        "second": second,
    }
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))

"""The hot path against its real alternatives, side by side in one run.

Three clients, the same golden set, the same loopback endpoint (``tests.benchmarks.endpoint``
in its own process), run back to back and alternated:

- **evaluator**: ``run_dataset`` over the HTTP target built from an ``HttpTargetConfig`` (the
  product's own client), scoring and summary included;
- **bare loop**: :mod:`tests.benchmarks.bare_loop`, a bare aiohttp loop with no scoring
  (the floor of a Python client on this machine);
- **promptfoo** (whole process only): the npm package's ``eval`` with its HTTP provider,
  the same questions and endpoint, one ``icontains-any`` assertion per expected fact; set
  up by ``make bench`` under ``bench-results/promptfoo/`` (never committed). When npm or
  the package is not there, its figures say so instead of being made up.

Goals (issue 15, kept by issue 25), measured in process so that only the client differs:

1. 50 ms endpoint, concurrency 50: evaluator's wall time within 1.05x of the bare loop's,
   and the latency it adds to the endpoint's own time (latency measured minus the sleep the
   endpoint reports) within 1.3x of the bare loop's, at P50 and at P95.
2. Zero-latency endpoint, concurrency 50: evaluator's CPU per case within 1.5x of the bare
   loop's (``time.process_time`` of this process: the endpoint runs in another).

Then whole processes (interpreter start included), 50 ms endpoint, concurrency 50:
``evaluator run``, ``python -m tests.benchmarks.bare_loop`` and ``promptfoo eval``: wall
time and peak memory (``os.wait4``), and their ratios.

``python -m tests.benchmarks.run --only goals``
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from evaluator.config import HttpTargetConfig
from evaluator.factory import build_target
from evaluator.models import Dataset
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.base import Target
from tests.benchmarks.bare_loop import bare_loop
from tests.benchmarks.support import (
    REPO,
    endpoint,
    figure,
    golden_set,
    golden_set_bytes,
    measured_process,
    median,
    nearest_rank,
    quick,
)

LATENCY = 0.05
CONCURRENCY = 50
WALL_GOAL = 1.05
ADDED_GOAL = 1.3
CPU_GOAL = 1.5
PROMPTFOO_DIR = REPO / "bench-results" / "promptfoo"
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
LABELS = {"evaluator": "evaluator run", "bare": "bare aiohttp loop", "promptfoo": "promptfoo eval"}


def _sizes() -> dict[str, int]:
    if quick():
        return {
            "cases": 500,
            # a 500-case pair at 50 ms takes about 0.5 s; two spread 1.05-1.58 at P50
            # (2026-12-05): five, as for the zero-latency pairs
            "pairs": 5,
            "zero_cases": 1_000,
            # a zero-latency pair takes well under a second; three spread 1.03-1.38 and
            # 0.69-2.14 in earlier runs, so quick mode takes five as bench_border does
            "zero_pairs": 5,
            "process_cases": 500,
        }
    # a zero-latency pair takes about a second: enough of them that one noisy pair on a
    # shared machine does not decide met or missed (3 pairs swung the ratio by +-25%)
    return {
        "cases": 1_000,
        # a 50 ms pair takes about 3 s; the latency figures are medians of the pairs' ratios
        "pairs": 7,
        "zero_cases": 2_000,
        "zero_pairs": 11,
        "process_cases": 1_000,
    }


def _target(url: str) -> Target:
    return build_target(HttpTargetConfig(url=url, max_connections=200))


async def _evaluator(target: Target, dataset: Dataset) -> tuple[float, list[float], float, int]:
    """(wall, added latency per case, CPU seconds, failed cases) of one run_dataset."""
    options = RunOptions(k=5, concurrency=CONCURRENCY)
    cpu, started = time.process_time(), time.perf_counter()
    report = await run_dataset(dataset, target, options)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    added = [r.latency_seconds - r.stage_seconds.get("sleep", 0.0) for r in report.cases]
    return wall, added, cpu, report.summary.error_count


async def _bare(
    session: aiohttp.ClientSession, url: str, dataset: Dataset
) -> tuple[float, list[float], float]:
    questions = [c.question for c in dataset.questions]
    cpu = time.process_time()
    wall, added = await bare_loop(session, url, questions, CONCURRENCY)
    return wall, added, time.process_time() - cpu


async def _pairs(url: str, dataset: Dataset, pairs: int) -> dict[str, Any]:
    """``pairs`` runs of each client, alternated, after one warm-up of each."""
    target = _target(url)
    out: dict[str, Any] = {
        "evaluator": {"wall": [], "added": [], "cpu": [], "added_runs": []},
        "bare": {"wall": [], "added": [], "cpu": [], "added_runs": []},
        "errors": 0,
    }
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            await _evaluator(target, dataset)
            await _bare(session, url, dataset)
            for _ in range(pairs):
                wall, added, cpu, errors = await _evaluator(target, dataset)
                out["evaluator"]["wall"].append(wall)
                out["evaluator"]["added"] += added
                out["evaluator"]["added_runs"].append(added)
                out["evaluator"]["cpu"].append(cpu)
                out["errors"] += errors
                wall, added, cpu = await _bare(session, url, dataset)
                out["bare"]["wall"].append(wall)
                out["bare"]["added"] += added
                out["bare"]["added_runs"].append(added)
                out["bare"]["cpu"].append(cpu)
    finally:
        await target.aclose()
    return out


# --- whole processes ---------------------------------------------------------------------


def promptfoo_version() -> str:
    """The installed promptfoo's version (the Makefile pins what ``make bench`` installs)."""
    package = PROMPTFOO_DIR / "node_modules" / "promptfoo" / "package.json"
    try:
        return str(json.loads(package.read_text("utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return "(version unknown)"


def promptfoo_binary() -> Path | None:
    """The installed promptfoo CLI, or None (``make bench`` installs it)."""
    binary = PROMPTFOO_DIR / "node_modules" / ".bin" / "promptfoo"
    return binary if binary.exists() else None


def _promptfoo_config(tmp: Path, url: str, golden: Path) -> Path:
    tests = []
    for line in golden.read_text("utf-8").splitlines():
        case = json.loads(line)
        facts = case.get("expected_facts") or []
        asserts = [
            {"type": "icontains-any", "value": fact if isinstance(fact, list) else [fact]}
            for fact in facts
        ]
        tests.append({"vars": {"question": case["question"]}, "assert": asserts})
    (tmp / "tests.json").write_text(json.dumps(tests, ensure_ascii=False), "utf-8")
    config = {
        "description": "evaluator benchmark: the same golden set and endpoint",
        "prompts": ["{{question}}"],
        "providers": [
            {
                "id": "http",
                "config": {
                    "url": url,
                    "method": "POST",
                    "headers": {"Content-Type": "application/json"},
                    "body": {"question": "{{prompt}}", "top_k": 5},
                    "transformResponse": "json.answer",
                },
            }
        ],
        "tests": "file://tests.json",
    }
    path = tmp / "promptfooconfig.json"
    path.write_text(json.dumps(config), "utf-8")
    return path


def _promptfoo(tmp: Path, url: str, golden: Path) -> dict[str, Any]:
    binary = promptfoo_binary()
    if binary is None:
        return {"skipped": f"promptfoo is not installed under {PROMPTFOO_DIR} (make bench does it)"}
    config = _promptfoo_config(tmp, url, golden)
    home = tmp / "promptfoo-home"
    home.mkdir(exist_ok=True)
    env = {
        "PROMPTFOO_CONFIG_DIR": str(home),
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
        "PROMPTFOO_SELF_HOSTED": "1",
        "NO_COLOR": "1",
    }
    command = [
        str(binary), "eval", "-c", str(config), "--max-concurrency", str(CONCURRENCY),
        "--no-cache", "--no-table", "--no-progress-bar", "--no-write",
        "-o", str(tmp / "promptfoo-results.json"),
    ]  # fmt: skip
    result = measured_process(command, tmp, env)
    out_file = tmp / "promptfoo-results.json"
    if out_file.exists():
        try:
            data = json.loads(out_file.read_text("utf-8"))
            stats = data.get("results", {}).get("stats", {})
            result["stats"] = {k: stats.get(k) for k in ("successes", "failures", "errors")}
        except ValueError:
            result["stats"] = None
    return result


def _processes(url: str, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        golden = tmp / "golden.jsonl"
        golden.write_bytes(golden_set_bytes(n))
        runs: dict[str, Any] = {"evaluator": [], "bare": [], "promptfoo": []}
        repeats = 1 if quick() else 3
        for _ in range(repeats):
            runs["evaluator"].append(
                measured_process(
                    [
                        EVALUATOR,
                        "run",
                        "--dataset",
                        str(golden),
                        "--target-url",
                        url,
                        "--concurrency",
                        str(CONCURRENCY),
                        "--output",
                        str(tmp / "r.json"),
                    ],
                    tmp,
                )
            )
            runs["bare"].append(
                measured_process(
                    [
                        sys.executable,
                        "-m",
                        "tests.benchmarks.bare_loop",
                        str(golden),
                        url,
                        str(CONCURRENCY),
                    ],
                    REPO,
                )
            )
            runs["promptfoo"].append(_promptfoo(tmp, url, golden))
        return runs


def _med(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r and r.get("exit_code") in (0, 100)]
    return median(values) if values else None


def run() -> dict[str, Any]:
    """The hot path against its real alternatives, side by side, its figures by name."""
    sizes = _sizes()
    dataset = golden_set(sizes["cases"])
    zero_set = golden_set(sizes["zero_cases"])
    with endpoint(LATENCY) as url:
        slow = asyncio.run(_pairs(url, dataset, sizes["pairs"]))
        processes = _processes(url, sizes["process_cases"])
    with endpoint(0.0) as url:
        zero = asyncio.run(_pairs(url, zero_set, sizes["zero_pairs"]))
    ev, bare = slow["evaluator"], slow["bare"]
    out: dict[str, Any] = {}
    wall_ratio = median(ev["wall"]) / median(bare["wall"])
    out["50 ms endpoint, concurrency 50: run loop wall / bare loop's"] = figure(
        wall_ratio,
        "ratio",
        goal=f"<= {WALL_GOAL:g}",
        met=wall_ratio <= WALL_GOAL,
        meaning=(
            f"run_dataset over the product's HTTP target, {sizes['cases']:,} cases, median "
            f"{median(ev['wall']):.3f} s; bare aiohttp loop {median(bare['wall']):.3f} s "
            f"(ideal {sizes['cases'] * LATENCY / CONCURRENCY:g} s); {sizes['pairs']} "
            "alternated pairs"
        ),
        runs=[e / b for e, b in zip(ev["wall"], bare["wall"], strict=True)],
    )
    for stat, pct in (("P50", 50), ("P95", 95)):
        e_ms = nearest_rank(ev["added"], pct) * 1000
        b_ms = nearest_rank(bare["added"], pct) * 1000
        # as for the CPU figure: each pair's ratio sees one machine load, and their median is
        # not moved by one pair run under another helper's burst, as the percentile of the
        # cases pooled over all pairs was (it read 0.61-1.80 on the same code)
        ratios = [
            nearest_rank(e, pct) / b_pct
            for e, b in zip(ev["added_runs"], bare["added_runs"], strict=True)
            if (b_pct := nearest_rank(b, pct)) > 0
        ]
        ratio = median(ratios) if ratios else None
        out[f"50 ms endpoint, concurrency 50: latency added, {stat}, / bare loop's"] = figure(
            ratio,
            "ratio",
            goal=f"<= {ADDED_GOAL:g}",
            met=None if ratio is None else ratio <= ADDED_GOAL,
            meaning=(
                f"latency measured minus the endpoint's own sleep, {stat}: median over "
                f"{len(ratios)} alternated pairs of evaluator's / the bare loop's"
                + (f" (pairs {min(ratios):.2f}-{max(ratios):.2f})" if ratios else "")
                + f"; over every case of every pair evaluator {e_ms:.2f} ms, bare loop "
                f"{b_ms:.2f} ms"
            ),
            runs=ratios,
        )
    ze, zb = zero["evaluator"], zero["bare"]
    cpu_e = median(ze["cpu"]) / sizes["zero_cases"] * 1e6
    cpu_b = median(zb["cpu"]) / sizes["zero_cases"] * 1e6
    # each pair runs back to back, so its ratio sees one machine load; the median of the
    # pairs' ratios is not moved by the load drifting between pairs, as a ratio of the two
    # medians (taken from different pairs) is
    pair_ratios = [e / b for e, b in zip(ze["cpu"], zb["cpu"], strict=True)]
    cpu_ratio = median(pair_ratios)
    out["zero-latency endpoint, concurrency 50: CPU per case / bare loop's"] = figure(
        cpu_ratio,
        "ratio",
        goal=f"<= {CPU_GOAL:g}",
        met=cpu_ratio <= CPU_GOAL,
        meaning=(
            f"median over {sizes['zero_pairs']} alternated pairs of this process's CPU time "
            f"per case, evaluator / bare loop (pairs {min(pair_ratios):.2f}-"
            f"{max(pair_ratios):.2f}); medians evaluator {cpu_e:.0f} µs (HTTP target, "
            f"scoring, summary), bare loop {cpu_b:.0f} µs (POST and json.loads), their "
            f"ratio {cpu_e / cpu_b:.2f}; {sizes['zero_cases']:,} cases"
        ),
        runs=pair_ratios,
    )
    failures = slow["errors"] + zero["errors"]
    out["failed cases in these runs"] = figure(
        failures, "cases", goal="0", met=failures == 0, digits=0,
        meaning="a failed case would make every figure above meaningless",
    )  # fmt: skip
    n = sizes["process_cases"]
    walls = {k: _med(v, "wall_seconds") for k, v in processes.items()}
    peaks = {k: _med(v, "peak_mib") for k, v in processes.items()}
    pf_skip = next((r["skipped"] for r in processes["promptfoo"] if "skipped" in r), None)
    pf_note = pf_skip or (
        f"promptfoo {promptfoo_version()} eval, HTTP provider: {walls['promptfoo']:.2f} s, "
        f"{peaks['promptfoo']:.0f} MiB"
        if walls["promptfoo"] is not None
        else "promptfoo did not finish: see the JSON details"
    )
    for name in ("evaluator", "bare", "promptfoo"):
        label = {
            "evaluator": "evaluator run",
            "bare": "bare aiohttp loop",
            "promptfoo": "promptfoo eval",
        }[name]
        out[f"whole process, {n:,} cases, 50 ms endpoint, c=50: {label}, wall"] = figure(
            walls[name], "s",
            meaning=(pf_note if name == "promptfoo" else "interpreter start to exit")
            + (f"; peak {peaks[name]:.0f} MiB" if peaks[name] is not None else ""),
        )  # fmt: skip
    if walls["promptfoo"] is not None and walls["evaluator"]:
        out["whole process: promptfoo wall / evaluator's"] = figure(
            walls["promptfoo"] / walls["evaluator"], "ratio",
            meaning="how many times evaluator's time promptfoo takes for the same cases",
        )  # fmt: skip
    if peaks["promptfoo"] is not None and peaks["evaluator"]:
        out["whole process: promptfoo peak memory / evaluator's"] = figure(
            peaks["promptfoo"] / peaks["evaluator"], "ratio",
            meaning="peak resident memory of the process (node's for promptfoo)",
        )  # fmt: skip
    if walls["bare"] and walls["evaluator"]:
        out["whole process: evaluator wall / bare loop's"] = figure(
            walls["evaluator"] / walls["bare"], "ratio",
            meaning="the whole CLI (imports, golden set, scoring, report) over a 30-line script",
        )  # fmt: skip
    out["_details"] = {
        "quick": quick(),
        "sizes": sizes,
        "slow": {
            "evaluator_wall": ev["wall"],
            "bare_wall": bare["wall"],
            "evaluator_added_p50_p95_ms": [
                nearest_rank(ev["added"], 50) * 1000,
                nearest_rank(ev["added"], 95) * 1000,
            ],
            "bare_added_p50_p95_ms": [
                nearest_rank(bare["added"], 50) * 1000,
                nearest_rank(bare["added"], 95) * 1000,
            ],
        },
        "zero": {"evaluator_cpu": ze["cpu"], "bare_cpu": zb["cpu"]},
        "processes": processes,
        "npm": shutil.which("npm"),
    }
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))

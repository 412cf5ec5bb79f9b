"""Scale: ``evaluator run`` and ``evaluator gate`` at 1,000, 10,000 and 100,000 cases.

Whole processes, as a user or a pipeline runs them, each measured by the kernel
(``os.wait4``: peak resident memory and CPU of that one child):

1. ``evaluator run`` of a generated golden set against an in-process callable target that
   answers at once (``tests.benchmarks.support:answer``), so the run loop is evaluator's
   own work and everything else is visible: interpreter start, loading the golden set,
   the summary, writing the report, the terminal output. "Outside the run loop" is the
   process's wall time minus the run loop's (the report's ``duration_seconds``).
2. ``evaluator gate`` on two reports of that size (a baseline and a slightly worse
   candidate, generated and streamed to disk by evaluator's writer), without and with
   ``--significance`` (the 2,000-resample bootstrap).

Goals (issue 25): run of 100,000 cases under 300 MiB and under 5 s outside the run loop;
gate on two 100,000-case reports under 6 s and 1 GiB; both linear. "Linear" is judged
on the growth from 10,000 to 100,000 cases: at most 12x the time for 10x the cases
(memory has a fixed floor, the interpreter and imports, so it is judged on its growth
above the 1,000-case run).

``python -m tests.benchmarks.run --only scale``
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from evaluator.report import RunReport, parse_timestamp, write_report
from evaluator.summary import summarise
from tests.benchmarks.bench_gate import _case
from tests.benchmarks.support import figure, golden_set_bytes, measured_process, quick

SIZES = (1_000, 10_000, 100_000)
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
RUN_MEMORY_GOAL_MIB = 300.0
RUN_OUTSIDE_GOAL_S = 5.0
GATE_SECONDS_GOAL = 6.0
GATE_MEMORY_GOAL_MIB = 1024.0
#: time growth allowed from 10k to 100k cases and still called linear
LINEAR_FACTOR = 12.0


def _run(n: int, tmp: Path) -> dict[str, Any]:
    golden = tmp / f"golden-{n}.jsonl"
    golden.write_bytes(golden_set_bytes(n))
    output = tmp / f"run-{n}.json"
    command = [
        EVALUATOR, "run", "--dataset", str(golden),
        "--target", "tests.benchmarks.support:answer", "--concurrency", "50",
        "--output", str(output),
    ]  # fmt: skip
    result = measured_process(command, tmp)
    if result["exit_code"] != 0:
        raise RuntimeError(f"evaluator run ({n} cases) exited {result['exit_code']}: {result}")
    header = json.loads(output.read_bytes().split(b"\n", 1)[0] + b"]}")
    result["run_loop_seconds"] = header["duration_seconds"]
    result["outside_seconds"] = result["wall_seconds"] - header["duration_seconds"]
    result["report_bytes"] = output.stat().st_size
    output.unlink()
    return result


def _report(n: int, seed: int, shift: float, run_id: str) -> RunReport:
    rng = random.Random(seed)
    cases = [_case(rng, i, shift) for i in range(n)]
    return RunReport(
        run_id=run_id,
        generated_at=parse_timestamp("2025-01-01T00:00:00+00:00"),
        config_hash="bench",
        dataset_hash="bench-golden-set",
        target="bench:8000",
        dataset="bench",
        k=5,
        duration_seconds=60.0,
        summary=summarise(cases),
        cases=tuple(cases),
    )


def _gate(n: int, tmp: Path) -> dict[str, Any]:
    baseline, candidate = tmp / f"baseline-{n}.json", tmp / f"candidate-{n}.json"
    write_report(_report(n, 1, 0.0, "baseline"), baseline)
    write_report(_report(n, 2, -0.03, "candidate"), candidate)
    base = [EVALUATOR, "gate", "--baseline", str(baseline), "--candidate", str(candidate)]
    out: dict[str, Any] = {"report_bytes": baseline.stat().st_size + candidate.stat().st_size}
    for name, extra in (("point", []), ("significance", ["--significance"])):
        result = measured_process([*base, "--format", "json", *extra], tmp)
        if result["exit_code"] not in (0, 2):
            raise RuntimeError(f"evaluator gate ({n} cases) exited {result['exit_code']}: {result}")
        out[name] = result
    baseline.unlink()
    candidate.unlink()
    return out


def _linear(values: dict[int, float], floor: float = 0.0) -> float | None:
    """Growth from 10k to 100k cases (above ``floor``), or None when not measured."""
    if 10_000 not in values or 100_000 not in values:
        return None
    low = max(values[10_000] - floor, 1e-9)
    return (values[100_000] - floor) / low


def run() -> dict[str, Any]:
    """``evaluator run`` and ``gate`` at each size of golden set, their figures by name."""
    sizes = SIZES
    runs: dict[int, dict[str, Any]] = {}
    gates: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for n in sizes:
            runs[n] = _run(n, tmp)
        for n in sizes:
            gates[n] = _gate(n, tmp)
    top = max(sizes)
    r, g = runs[top], gates[top]["point"]
    out: dict[str, Any] = {}
    out[f"evaluator run, {top:,} cases: peak memory"] = figure(
        r["peak_mib"],
        "MiB",
        goal=f"< {RUN_MEMORY_GOAL_MIB:g} MiB",
        met=r["peak_mib"] < RUN_MEMORY_GOAL_MIB,
        meaning="peak resident memory of the whole process (kernel's maxrss); "
        + ", ".join(f"{n:,}: {runs[n]['peak_mib']:.0f} MiB" for n in sizes),
    )
    out[f"evaluator run, {top:,} cases: time outside the run loop"] = figure(
        r["outside_seconds"],
        "s",
        goal=f"< {RUN_OUTSIDE_GOAL_S:g} s",
        met=r["outside_seconds"] < RUN_OUTSIDE_GOAL_S,
        meaning=(
            "process wall time minus the run loop's: interpreter, imports, loading the golden "
            "set, summary, streaming the report "
            f"({r['report_bytes'] / 1e6:.0f} MB), terminal output; "
            + ", ".join(f"{n:,}: {runs[n]['outside_seconds']:.2f} s" for n in sizes)
            + f"; run loop {r['run_loop_seconds']:.2f} s at {top:,}"
        ),
    )
    growth = _linear({n: runs[n]["outside_seconds"] for n in sizes})
    out["evaluator run: growth of time outside the loop, 10k -> 100k cases"] = figure(
        growth,
        "ratio",
        goal=f"<= {LINEAR_FACTOR:g} (linear: 10x cases)",
        met=None if growth is None else growth <= LINEAR_FACTOR,
        meaning="time outside the run loop at 100,000 cases over that at 10,000",
    )
    floor = runs[min(sizes)]["peak_mib"]
    mem_growth = _linear({n: runs[n]["peak_mib"] for n in sizes}, floor=floor)
    out["evaluator run: growth of memory above the 1k run, 10k -> 100k cases"] = figure(
        mem_growth,
        "ratio",
        goal=f"<= {LINEAR_FACTOR:g} (linear: 10x cases)",
        met=None if mem_growth is None else mem_growth <= LINEAR_FACTOR,
        meaning=(f"peak memory above the 1,000-case run's ({floor:.0f} MiB: interpreter, imports)"),
    )
    out[f"evaluator gate, two {top:,}-case reports: wall time"] = figure(
        g["wall_seconds"],
        "s",
        goal=f"< {GATE_SECONDS_GOAL:g} s",
        met=g["wall_seconds"] < GATE_SECONDS_GOAL,
        meaning=(
            "whole process: start, reading and validating both reports "
            f"({gates[top]['report_bytes'] / 1e6:.0f} MB), rules, paired differences, per-case "
            "diff, JSON output; "
            + ", ".join(f"{n:,}: {gates[n]['point']['wall_seconds']:.2f} s" for n in sizes)
        ),
    )
    out[f"evaluator gate, two {top:,}-case reports: peak memory"] = figure(
        g["peak_mib"],
        "MiB",
        goal=f"< {GATE_MEMORY_GOAL_MIB:g} MiB",
        met=g["peak_mib"] < GATE_MEMORY_GOAL_MIB,
        meaning=", ".join(f"{n:,}: {gates[n]['point']['peak_mib']:.0f} MiB" for n in sizes),
    )
    gate_growth = _linear({n: gates[n]["point"]["wall_seconds"] for n in sizes})
    out["evaluator gate: growth of wall time, 10k -> 100k cases"] = figure(
        gate_growth,
        "ratio",
        goal=f"<= {LINEAR_FACTOR:g} (linear: 10x cases)",
        met=None if gate_growth is None else gate_growth <= LINEAR_FACTOR,
        meaning="gate wall time at 100,000 cases over that at 10,000",
    )
    sig = gates[top]["significance"]
    out[f"evaluator gate --significance, two {top:,}-case reports: wall time"] = figure(
        sig["wall_seconds"],
        "s",
        meaning=(
            f"with the 2,000-resample paired bootstrap; peak {sig['peak_mib']:.0f} MiB; "
            + ", ".join(f"{n:,}: {gates[n]['significance']['wall_seconds']:.2f} s" for n in sizes)
        ),
    )
    out["_details"] = {
        "quick": quick(),
        "runs": {str(n): v for n, v in runs.items()},
        "gates": {str(n): v for n, v in gates.items()},
    }
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))

"""``make bench``: run every benchmark module, write ``bench-results/results.{json,md}``.

Each ``tests/benchmarks/bench_*.py`` has ``run() -> dict``: named figures, each a mapping
with ``value``, ``unit``, ``goal``, ``met`` (None without a goal) and ``meaning``, and an
optional ``_details`` entry (raw runs, profiles). Every module runs in a process of its
own, so one benchmark's imports, global state (logging, caches) or memory cannot colour
another's, and each is bounded in time. The machine is noted with the figures.

Usage::

    python -m tests.benchmarks.run                 # everything (what make bench does)
    python -m tests.benchmarks.run --quick         # the goal modules, fewer cases and repeats
    python -m tests.benchmarks.run --only scoring  # one module (repeat --only for more);
                                                   # writes results-scoring.{json,md}

Exit status 1 when a benchmark could not run; a missed goal is a result, not an error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = REPO / "bench-results"
#: the order the table shows; modules not listed run after these, alphabetically
ORDER = (
    "goals", "scale", "scrape", "platform", "border", "judge", "scoring", "runner",
    "conversations", "transport", "gate", "startup", "soak",
)  # fmt: skip
#: what ``--quick`` runs: the modules that measure issue 25's goals (and 24's, 27's)
QUICK = ("goals", "scale", "scrape", "platform", "border", "judge")
#: seconds a module may take before it is stopped (the soak has its own limit inside)
TIMEOUTS = {
    "soak": 480.0, "runner": 240.0, "transport": 240.0, "goals": 420.0, "scale": 420.0,
    "hostile": 420.0, "platform": 540.0, "scrape": 360.0, "judge_concurrency": 360.0,
}  # fmt: skip
DEFAULT_TIMEOUT = 240.0
PACKAGES = (
    "evaluator", "aiohttp", "brotli", "msgspec", "prometheus-client", "apscheduler",
    "pydantic", "structlog", "tenacity",
)  # fmt: skip


def modules() -> list[str]:
    """Short names (``scoring`` for ``bench_scoring.py``) in table order."""
    found = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    return [m for m in ORDER if m in found] + [m for m in found if m not in ORDER]


def machine() -> dict[str, Any]:
    """The machine the benchmarks ran on: CPU, cores, Python and package versions."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    try:
        import psutil

        memory = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        memory = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": memory,
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "versions": versions,
        "commit": _git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(_git("status", "--porcelain", "--", "evaluator")),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def run_child(name: str, out: Path) -> None:
    """In the child process: import ``bench_<name>``, call ``run()``, write its JSON."""
    module = importlib.import_module(f"tests.benchmarks.bench_{name}")
    result = module.run()
    out.write_text(json.dumps(result, ensure_ascii=False, default=str), "utf-8")


def run_one(name: str) -> dict[str, Any]:
    """``bench_<name>`` in a child process, bounded in time; its figures or its error."""
    timeout = TIMEOUTS.get(name, DEFAULT_TIMEOUT)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "result.json")
        command = [sys.executable, "-m", "tests.benchmarks.run", "--child", name, str(out)]
        started = time.perf_counter()
        error = None
        try:
            done = subprocess.run(
                command, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
            )
            if done.returncode != 0:
                tail = "\n".join(done.stderr.strip().splitlines()[-15:])
                error = f"exit {done.returncode}:\n{tail}"
        except subprocess.TimeoutExpired:
            error = f"did not finish within {timeout:g} s"
        seconds = time.perf_counter() - started
        result: dict[str, Any] = {}
        if error is None:
            result = json.loads(out.read_text("utf-8"))
    details = result.pop("_details", {})
    return {
        "module": f"tests/benchmarks/bench_{name}.py",
        "seconds": round(seconds, 1),
        "figures": result,
        "details": details,
        "error": error,
    }


# --- rendering -------------------------------------------------------------------------------


def fmt_value(value: float | None, unit: str) -> str:
    """A figure's value in its unit, as the tables print it."""
    if value is None:
        return "n/a"
    if unit in ("ratio", "ms", "s", "MiB"):
        text = f"{value:,.2f}"
    elif abs(value) >= 100 or float(value).is_integer():
        text = f"{value:,.0f}"
    else:
        text = f"{value:.3g}"
    return text if unit == "ratio" else f"{text} {unit}"


def fmt_met(met: bool | None) -> str:
    """Whether a figure met its goal, as the tables print it."""
    return "n/a" if met is None else ("yes" if met else "**no**")


def label(name: str, figure: str) -> str:
    """A figure's label, prefixed with its benchmark's name unless it has it."""
    return figure if figure.startswith(f"{name}:") else f"{name}: {figure}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(benchmarks: dict[str, Any]) -> str:
    """The Markdown table of every benchmark's figures, a benchmark that did not run said so."""
    rows = ["| figure | value | goal | met | what it means |", "| --- | --- | --- | --- | --- |"]
    for name, bench in benchmarks.items():
        if bench["error"]:
            first = bench["error"].splitlines()[0]
            rows.append(f"| {name} | **did not run** | | | {_cell(first)} |")
        for figure, f in bench["figures"].items():
            rows.append(
                f"| {_cell(label(name, figure))} | {fmt_value(f['value'], f['unit'])} "
                f"| {_cell(f['goal'] or '')} | {fmt_met(f['met'])} | {_cell(f['meaning'])} |"
            )
    return "\n".join(rows)


def _machine_line(m: dict[str, Any]) -> str:
    v = m["versions"]
    dirty = " with uncommitted changes to evaluator/" if m["uncommitted_changes"] else ""
    packages = ", ".join(f"{k} {x}" for k, x in v.items() if x is not None and k != "evaluator")
    return (
        f"{m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['memory_gib']} GiB; "
        f"{m['os']}; {m['python']}; evaluator {v['evaluator']} at {m['commit']}{dirty}; "
        f"{packages}; load average {m['load_average_at_start']} at start, "
        f"{m.get('load_average_at_end')} at end"
    )


def goals_summary(results: dict[str, Any]) -> str:
    """Each issue-15 goal with its measured value and met/missed, for the terminal."""
    from tests.benchmarks.render_docs import goal_rows

    lines = ["Goals:"]
    for key, f in goal_rows(results):
        if f is None:
            lines.append(f"  NOT MEASURED  {key}")
            continue
        verdict = {True: "met   ", False: "MISSED", None: "n/a   "}[f["met"]]
        lines.append(f"  {verdict}  {key}: {fmt_value(f['value'], f['unit'])} (goal {f['goal']})")
    return "\n".join(lines)


def _profiles(benchmarks: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, bench in benchmarks.items():
        for key, value in bench["details"].items():
            if not (key.startswith("profile") and isinstance(value, dict)):
                continue
            spots = value.get("hotspots", {})
            lines += [f"### {name}: {key.removeprefix('profile_')}", ""]
            lines.append("Self time by package (built-ins count for their caller):")
            lines.append(
                ", ".join(f"{s['package']} {s['share']:.0%}" for s in spots.get("packages", []))
            )
            lines += ["", "Self time, top functions (share of the profiled run):"]
            lines += [f"- {s['share']:.0%} `{s['function']}`" for s in spots.get("self", [])[:8]]
            lines += ["", "evaluator functions, inclusive time:"]
            lines += [
                f"- {s['share']:.0%} `{s['function']}`"
                for s in spots.get("evaluator_inclusive", [])[:8]
            ]
            lines.append("")
    return lines


def markdown(results: dict[str, Any]) -> str:
    """The Markdown summary of a benchmark run."""
    m = results["machine"]
    benchmarks = results["benchmarks"]
    lines = [
        "# evaluator benchmarks",
        "",
        f"`make bench` on {results['generated_at']}, {results['duration_seconds']:.0f} s in all"
        + (f" (only {', '.join(results['only'])})" if results["only"] else "")
        + ".",
        "",
        f"Machine: {_machine_line(m)}.",
        "",
        "Each figure is a median over repeats (see the JSON for every run) or a ratio. The "
        "machine is shared and noisy: compare ratios, and medians only run to run.",
        "",
        table(benchmarks),
        "",
        "Seconds per benchmark: "
        + ", ".join(f"{n} {b['seconds']:.0f}" for n, b in benchmarks.items())
        + ".",
        "",
    ]
    profiles = _profiles(benchmarks)
    if profiles:
        lines += ["## Profiles of missed goals (pyinstrument)", "", *profiles]
    errors = [(n, b["error"]) for n, b in benchmarks.items() if b["error"]]
    if errors:
        lines += ["## Benchmarks that did not run", ""]
        lines += [f"- {n}:\n\n```\n{e}\n```\n" for n, e in errors]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks asked for, each in a child process, and write their results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run only bench_NAME (repeatable)"
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"only {', '.join(QUICK)}, fewer cases and repeats"
    )
    parser.add_argument("--child", nargs=2, metavar=("NAME", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        os.environ["BENCH_QUICK"] = "1"  # inherited by every module's process
    if args.child:
        run_child(args.child[0], Path(args.child[1]))
        return 0
    available = modules()
    chosen = available
    if args.only:
        wanted = [n.removeprefix("bench_").removesuffix(".py") for n in args.only]
        unknown = [n for n in wanted if n not in available]
        if unknown:
            parser.error(f"unknown benchmark(s) {unknown}; known: {available}")
        chosen = [n for n in available if n in wanted]
    elif args.quick:
        chosen = [n for n in available if n in QUICK]
    started = time.perf_counter()
    info = machine()
    benchmarks: dict[str, Any] = {}
    for i, name in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {name} ...", end=" ", flush=True)
        benchmarks[name] = run_one(name)
        status = "ERROR" if benchmarks[name]["error"] else "done"
        print(f"{status} in {benchmarks[name]['seconds']:.0f} s", flush=True)
    info["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "duration_seconds": round(time.perf_counter() - started, 1),
        "only": chosen if args.only or args.quick else None,
        "quick": bool(args.quick),
        "machine": info,
        "benchmarks": benchmarks,
    }
    OUT.mkdir(exist_ok=True)
    # a partial run must not overwrite the figures of the last full one
    stem = "results" if not args.only else "results-" + "-".join(chosen)
    if args.quick and not args.only:
        stem = "results"  # the quick run is a run of the goals: the page renders from it
    (OUT / f"{stem}.json").write_text(
        json.dumps(results, indent=2, ensure_ascii=False) + "\n", "utf-8"
    )
    text = markdown(results)
    (OUT / f"{stem}.md").write_text(text + "\n", "utf-8")
    print()
    print(text)
    print()
    print(goals_summary(results))
    print(f"\nwritten: {OUT / f'{stem}.json'}, {OUT / f'{stem}.md'}")
    return 1 if any(b["error"] for b in benchmarks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

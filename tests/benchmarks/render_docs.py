"""Render ``docs/performance.md`` from a ``make bench`` results file.

``python -m tests.benchmarks.render_docs [bench-results/results.json]``
``python -m tests.benchmarks.render_docs --only judge [bench-results/results-judge.json]``

The page is generated, never edited by hand: its tables are the results file's figures and
every sentence that states a number or a verdict is built from them, so the prose cannot
disagree with the table. Re-run ``make bench`` (or ``make bench-quick``) to refresh it.

``--only judge`` renders the judge's part alone from a ``--only judge`` run (its section, its
rows of the figure table and its line of the method list), leaving every other figure of the
page as the whole run wrote it; the section names the run its figures come from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.benchmarks.run import OUT, REPO, fmt_met, fmt_value, table

PAGE = REPO / "docs" / "performance.md"

#: issue 25's goals (its tables: keep, relaxed, platform scale; then issue 24's border):
#: (module, figure key) in the order the page lists them
GOALS: tuple[tuple[str, str], ...] = (
    ("goals", "50 ms endpoint, concurrency 50: run loop wall / bare loop's"),
    ("goals", "50 ms endpoint, concurrency 50: latency added, P50, / bare loop's"),
    ("goals", "50 ms endpoint, concurrency 50: latency added, P95, / bare loop's"),
    ("goals", "zero-latency endpoint, concurrency 50: CPU per case / bare loop's"),
    ("scale", "evaluator run, 100,000 cases: peak memory"),
    ("scale", "evaluator run, 100,000 cases: time outside the run loop"),
    ("scale", "evaluator run: growth of time outside the loop, 10k -> 100k cases"),
    ("scale", "evaluator run: growth of memory above the 1k run, 10k -> 100k cases"),
    ("scale", "evaluator gate, two 100,000-case reports: wall time"),
    ("scale", "evaluator gate, two 100,000-case reports: peak memory"),
    ("scale", "evaluator gate: growth of wall time, 10k -> 100k cases"),
    ("scrape", "/metrics scrape over HTTP, 50 jobs, runs overlapping"),
    ("platform", "a scrape while runs are in flight: latency it adds to a case being measured"),
    ("platform", "platform, 100 jobs x 1,000 cases every 5 min, 50 ms endpoint: daemon CPU, "
     "average over the cycle"),
    ("platform", "platform, 100 jobs x 1,000 cases every 5 min, 50 ms endpoint: daemon peak RSS"),
    ("platform", "platform: latency added, P50, / bare loop's"),
    ("platform", "platform: latency added, P95, / bare loop's"),
    ("border", "zero-latency endpoint, c=50, 3 secrets configured: CPU per case / bare loop's"),
)  # fmt: skip


def _figure(results: dict[str, Any], module: str, key: str) -> dict[str, Any] | None:
    bench = results["benchmarks"].get(module)
    if bench is None:
        return None
    found: dict[str, Any] | None = bench["figures"].get(key)
    return found


def goal_rows(results: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """Each goal's figure of the results (None: not measured)."""
    return [(key, _figure(results, module, key)) for module, key in GOALS]


def _goals_table(results: dict[str, Any]) -> list[str]:
    rows = ["| goal | measured | target | met |", "| --- | --- | --- | --- |"]
    for key, f in goal_rows(results):
        if f is None:
            rows.append(f"| {key} | not measured in this run | | n/a |")
            continue
        rows.append(
            f"| {key} | {fmt_value(f['value'], f['unit'])} | {f['goal'] or ''} "
            f"| {fmt_met(f['met'])} |"
        )
    return rows


def _side_by_side(results: dict[str, Any]) -> list[str]:
    bench = results["benchmarks"].get("goals")
    if bench is None or bench["error"]:
        return ["The side-by-side benchmark did not run in this results file."]
    processes = bench["details"].get("processes", {})
    sizes = bench["details"].get("sizes", {})
    lines = [
        f"Whole processes, {sizes.get('process_cases', 0):,} cases of the same generated golden "
        "set, the same 50 ms loopback endpoint, 50 requests in flight, run back to back "
        "(median of the repeats; peak memory from the kernel's accounting of each process):",
        "",
        "| client | wall | CPU | peak memory | exit |",
        "| --- | --- | --- | --- | --- |",
    ]
    names = {
        "evaluator": "`evaluator run` (HTTP target, scoring, report)",
        "bare": "bare aiohttp loop (`tests/benchmarks/bare_loop.py`)",
        "promptfoo": "promptfoo `eval`, HTTP provider",
    }
    skipped = None
    for name, title in names.items():
        runs = [r for r in processes.get(name, []) if "skipped" not in r]
        if not runs:
            skipped = next((r["skipped"] for r in processes.get(name, []) if "skipped" in r), None)
            lines.append(f"| {title} | not run | | | {skipped or 'no runs'} |")
            continue
        walls = sorted(r["wall_seconds"] for r in runs)
        cpus = sorted(r["cpu_seconds"] for r in runs)
        peaks = sorted(r["peak_mib"] for r in runs)
        mid = len(runs) // 2
        codes = ", ".join(str(r["exit_code"]) for r in runs)
        lines.append(
            f"| {title} | {walls[mid]:.2f} s | {cpus[mid]:.2f} s | {peaks[mid]:.0f} MiB | {codes} |"
        )
    ratios = [
        (k, f)
        for k, f in bench["figures"].items()
        if k.startswith("whole process:") and f["value"] is not None
    ]
    if ratios:
        lines.append("")
        for key, f in ratios:
            lines.append(f"- {key.removeprefix('whole process: ')}: **{f['value']:.2f}**.")
    if skipped:
        lines += ["", f"promptfoo was not measured: {skipped}."]
    lines += _promptfoo_outcome(processes.get("promptfoo", []))
    return lines


def _promptfoo_outcome(runs: list[dict[str, Any]]) -> list[str]:
    """What promptfoo's exit code means: 100 is "some assertion failed", not a broken run."""
    stats = [r["stats"] for r in runs if r.get("stats")]
    if not stats:
        return []
    last = stats[-1]
    return [
        "",
        "promptfoo exits 100 when any test's assertion fails, not when a run breaks. In its "
        f"last run {last.get('successes')} cases passed the answer assertion (`icontains-any` "
        f"on the expected facts), {last.get('failures')} failed it and {last.get('errors')} "
        "were errors.",
    ]


def _scale(results: dict[str, Any]) -> list[str]:
    bench = results["benchmarks"].get("scale")
    if bench is None or bench["error"]:
        return ["The scale benchmark did not run in this results file."]
    runs, gates = bench["details"]["runs"], bench["details"]["gates"]
    lines = [
        "| cases | `run`: peak | outside the run loop | run loop | report | `gate`: wall | peak "
        "| `gate --significance` |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in sorted(runs, key=int):
        r, g = runs[n], gates[n]
        lines.append(
            f"| {int(n):,} | {r['peak_mib']:.0f} MiB | {r['outside_seconds']:.2f} s "
            f"| {r['run_loop_seconds']:.2f} s | {r['report_bytes'] / 1e6:.1f} MB "
            f"| {g['point']['wall_seconds']:.2f} s | {g['point']['peak_mib']:.0f} MiB "
            f"| {g['significance']['wall_seconds']:.2f} s |"
        )
    return lines


def _platform(results: dict[str, Any]) -> list[str]:
    """How bench_platform scaled a 5-minute cycle into the bench's time, with its numbers."""
    bench = results["benchmarks"].get("platform")
    if bench is None or bench["error"]:
        return ["The platform-scale benchmark did not run in this results file."]
    d = bench["details"]
    return [
        "One `evaluator serve` with 100 jobs (one target each, all on one 50 ms loopback "
        "endpoint in its own process), 1,000 cases per job, `interval_seconds = 300`, "
        "concurrency 2: the configuration of the goal. The daemon starts its jobs within 50 s "
        "of each other (0.5 s a job) and each fires every 300 s after, so a 5-minute cycle is "
        "a busy part and an idle rest. The benchmark runs one whole cycle's busy part, each "
        f"target paced at {d['requests_per_second_per_target']:g} requests/s (about "
        f"{d['requests_per_second_per_target'] * 100:,.0f} cases/s, "
        f"{d['requests_per_second_per_target'] * 100 / (100_000 / 300):.1f}x the cycle's "
        "average of 333 cases/s, so the latency rules are judged under more load, not less): "
        f"{d['runs']} runs in {d['busy_wall']:.0f} s, {d['busy_cpu']:.1f} CPU seconds of the "
        f"daemon process. {_platform_rest(d)} Resident "
        "memory is sampled every 0.25 s (psutil), its peak reported. A scrape of `/metrics` "
        "every 15 s (as the shipped Prometheus configuration) places each case against the "
        "scrapes' windows (the endpoint logs each request's arrival), for the latency a scrape "
        "adds to the cases it overlaps.",
        *_platform_floor(d),
    ]


def _platform_rest(d: dict[str, Any]) -> str:
    """How the rest of the cycle was counted: the tail measured until the daemon settled
    (results files before it extrapolated one 15 s window right after the busy part)."""
    if "tail_cpu" not in d:
        return (
            f"The idle rest is not waited for: its CPU rate is measured over "
            f"{d['idle_wall']:.0f} s ({d['idle_cpu']:.2f} CPU s) and extrapolated to the rest "
            "of the 300 s. Average = (busy CPU + idle rate x (300 s - busy wall)) / 300 s."
        )
    return (
        f"After the last run's line the tail (its reports and history rows still being "
        f"written) is measured in 5 s windows until one uses under 2% of a core: "
        f"{d['tail_cpu']:.2f} CPU s over {d['tail_wall']:.0f} s; the settled window's rate "
        f"({d['idle_rate']:.2%} of a core) is extrapolated to the rest of the 300 s. Average "
        "= (busy CPU + tail CPU + settled rate x (300 s - busy wall - tail wall)) / 300 s."
    )


def _platform_floor(d: dict[str, Any]) -> list[str]:
    """The paced bare loop's cost: the floor under the platform CPU goal (older results files
    have no such figure)."""
    bare_us = d.get("bare_paced_cpu_per_request_us")
    if not bare_us:
        return []
    floor = bare_us * 1e-6 * 100_000 / 300
    cases = 100 * d["runs"] and d["busy_cpu"] / max(d["runs"] * 1_000, 1) * 1e6
    return [
        "",
        "The floor under the CPU goal: before the daemon starts and again after its cycle, "
        "the bare aiohttp loop makes "
        "the daemon's requests the daemon's way (100 sessions, 2 in flight each, each paced at "
        f"{d['requests_per_second_per_target']:g} requests/s from the phase the daemon's "
        "stagger gives its job, every answer decoded) and costs "
        f"{bare_us:.0f} µs of CPU per request, so a cycle's 100,000 requests alone take "
        f"{floor:.1%} of a core on this machine, before any scoring, metrics, report or "
        f"history. The daemon's {cases:.0f} µs per case is {cases / bare_us:.2f}x that. "
        + (
            "The 10% goal is below what the HTTP client alone costs here; the ratio is what "
            "this benchmark can hold the daemon to."
            if floor >= 0.10
            else "The ratio is what this benchmark can hold the daemon to."
        ),
        "",
        "The phases matter as much as the pace. The same bare loop with its 100 sessions "
        "started together sends 100 requests at once every 0.2 s: on this machine that cost "
        "159-168 µs per request (each wake-up serves many) and added 4.7-5.0 ms at P50 (each "
        "request queues behind the burst); spread, 283-316 µs and 0.58-0.64 ms (2026-12-05). "
        "Until 6c7dfca the daemon staggered its jobs by equal steps, which made such bursts: "
        "9.9% of a core then, with added latency 5x the bare loop's at P50. Until 4b6fc48 "
        "the first runs were spread over a fixed 10 s, so the 100 runs also ended within "
        "10 s, and their summaries, reports and history rows (about 50 ms of CPU each) added "
        "11-16 ms at P95 to the cases of those last 10 s; spread over 50 s, 1.7 ms.",
    ]


JUDGE_HEADING = "## The judge path: its own overhead, and the verdict cache"
#: bench_judge's figures the section's prose reads
JUDGE_CPU = (
    "judge path's own overhead per case, CPU: a run with a zero-latency judge - the same run "
    "without"
)
JUDGE_WALL = (
    "judge path's own overhead per case, wall: a run with a zero-latency judge - the same run "
    "without"
)
JUDGE_CALLS = "verdict cache, second run over the same answers: judge calls"
JUDGE_SECOND = "verdict cache, second run / first run: wall"
JUDGE_FILL = "verdict cache, first run (filling it) / a run without the cache: wall"


def _run_named(results: dict[str, Any]) -> str:
    m = results["machine"]
    quick = ", quick mode" if results.get("quick") else ""
    return (
        f"the `python -m tests.benchmarks.run --only judge` run of {results['generated_at']}"
        f"{quick} (evaluator at {m['commit']}"
        + (" with uncommitted changes" if m.get("uncommitted_changes") else "")
        + f"; load average {m['load_average_at_start']} at start and "
        f"{m.get('load_average_at_end')} at end)"
    )


def _judge(results: dict[str, Any], *, alone: bool = False) -> list[str]:
    """What the judge path costs a run beside the run itself, and what the cache saves."""
    bench = results["benchmarks"].get("judge")
    if bench is None or bench["error"]:
        return ["The judge benchmark did not run in this results file."]
    f = bench["figures"]
    if any(k not in f for k in (JUDGE_CPU, JUDGE_WALL, JUDGE_CALLS, JUDGE_SECOND, JUDGE_FILL)):
        return ["The judge benchmark of this results file predates these figures."]

    def v(key: str) -> str:
        return fmt_value(f[key]["value"], f[key]["unit"])

    first = bench["details"]["first"]
    lines = [
        "`evaluator run` of a job with a judge against the same run without one, the judge a "
        "loopback OpenAI-compatible server answering at once in a process of its own (so the "
        "judge's latency is excluded, and this process's CPU is evaluator's alone): the judge "
        f"path (reading the report back, building each check's prompt, the HTTP call, "
        f"checking the verdict, writing the report again) adds {v(JUDGE_CPU)} of CPU per "
        f"case, and {v(JUDGE_WALL)} of wall (on a 2-core machine, where the loopback judge's "
        "own CPU competes with the run's). A second run over unchanged answers makes "
        f"{v(JUDGE_CALLS)} to the judge (the canaries, never cached) against "
        f"{first['calls']:,} in the first, in {v(JUDGE_SECOND)}x the first's wall; filling the "
        f"cache costs the first run {v(JUDGE_FILL)}x the wall of a pass without the cache "
        f"(its {first['calls'] - f[JUDGE_CALLS]['value']:,.0f} verdicts written in "
        f"{first['commits']} transaction(s)).",
    ]
    if alone:
        lines += [
            "",
            f"The figures of this section (and the judge's rows below) are from "
            f"{_run_named(results)}; the rest of the page is from the run named at its top.",
        ]
    return lines


def _judge_rows(results: dict[str, Any]) -> list[str]:
    return table({"judge": results["benchmarks"]["judge"]}).split("\n")[2:]


def _judge_method(results: dict[str, Any]) -> str:
    bench = results["benchmarks"]["judge"]
    return (
        f"- **judge** (`{bench['module']}`, {bench['seconds']:.0f} s): see the module's "
        "docstring for the method."
    )


def splice_judge(page: str, results: dict[str, Any]) -> str:
    """``page`` with its judge section, judge rows and judge method line from ``results``
    (a ``--only judge`` run); every other line as it was."""
    if "judge" not in results["benchmarks"]:
        raise ValueError("the results file has no judge benchmark")
    lines = page.rstrip("\n").split("\n")
    section = [JUDGE_HEADING, "", *_judge(results, alone=True), ""]
    if JUDGE_HEADING in lines:
        start = lines.index(JUDGE_HEADING)
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        lines[start:end] = section
    else:
        lines[lines.index("## Every figure") : lines.index("## Every figure")] = section
    rows = [i for i, line in enumerate(lines) if line.startswith("| judge: ")]
    new_rows = _judge_rows(results)
    if rows:
        lines[rows[0] : rows[-1] + 1] = new_rows
    else:  # after the table's last row
        start = lines.index("## Every figure")
        last = max(i for i in range(start, len(lines)) if lines[i].startswith("| "))
        lines[last + 1 : last + 1] = new_rows
    method = [i for i, line in enumerate(lines) if line.startswith("- **judge** (")]
    if method:
        lines[method[0]] = _judge_method(results)
    return "\n".join(lines) + "\n"


def _verdict(results: dict[str, Any]) -> list[str]:
    rows = goal_rows(results)
    met = [k for k, f in rows if f is not None and f["met"]]
    missed = [(k, f) for k, f in rows if f is not None and f["met"] is False]
    absent = [k for k, f in rows if f is None]
    lines = [f"{len(met)} of {len(rows)} goals met in this run."]
    if missed:
        lines += ["", "Missed:", ""]
        lines += [
            f"- {k}: {fmt_value(f['value'], f['unit'])} against {f['goal']} ({f['meaning']})."
            for k, f in missed
        ]
    if absent:
        lines += ["", "Not measured in this run: " + "; ".join(absent) + "."]
    return lines


def render(results: dict[str, Any]) -> str:
    """docs/performance.md from the benchmark results."""
    m = results["machine"]
    v = m["versions"]
    quick = " (quick mode: fewer cases and repeats)" if results.get("quick") else ""
    only = results.get("only")
    lines = [
        "# Performance",
        "",
        "<!-- generated by tests/benchmarks/render_docs.py from bench-results/results.json: "
        "do not edit, run make bench -->",
        "",
        f"Generated from the `make bench` run of {results['generated_at']}{quick}, "
        f"{results['duration_seconds']:.0f} s in all"
        + (f", modules {', '.join(only)} only" if only else "")
        + f". Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['python']}; "
        f"evaluator {v.get('evaluator')} at {m['commit']}"
        + (" with uncommitted changes" if m.get("uncommitted_changes") else "")
        + f"; load average {m['load_average_at_start']} at start and "
        f"{m.get('load_average_at_end')} at end. The machine is shared: compare ratios (each "
        "measured back to back in the same run), not absolute speeds.",
        "",
        "`make bench` runs every module of `tests/benchmarks/` in a process of its own, prints "
        "each figure with its goal and whether it was met, and writes "
        "`bench-results/results.json` (every repeat, the machine, profiles) and "
        "`bench-results/results.md`; this page is rendered from the JSON by "
        "`tests/benchmarks/render_docs.py`. `make bench-quick` runs the goal modules with "
        "fewer cases and repeats. No timing is asserted by the test suite.",
        "",
        "## Goals",
        "",
        *_goals_table(results),
        "",
        *_verdict(results),
        "",
        "## Side by side: evaluator, a bare aiohttp loop and promptfoo",
        "",
        *_side_by_side(results),
        "",
        "## Scale: 1,000, 10,000 and 100,000 cases",
        "",
        "`evaluator run` against an in-process target that answers at once (so the run loop is "
        "evaluator's own work), and `evaluator gate` on two generated reports of each size. "
        "Each is a whole process, its peak memory the kernel's:",
        "",
        *_scale(results),
        "",
        "## Platform scale: 100 jobs x 1,000 cases every 5 minutes",
        "",
        *_platform(results),
        "",
        JUDGE_HEADING,
        "",
        *_judge(results),
        "",
        "## Every figure",
        "",
        table(results["benchmarks"]),
        "",
        "## How each figure is made",
        "",
    ]
    for name, bench in results["benchmarks"].items():
        lines.append(f"- **{name}** (`{bench['module']}`, {bench['seconds']:.0f} s): see the "
                     "module's docstring for the method.")  # fmt: skip
    errors = [(n, b["error"]) for n, b in results["benchmarks"].items() if b["error"]]
    if errors:
        lines += ["", "## Benchmarks that did not run", ""]
        lines += [f"- {n}: {e.splitlines()[0]}" for n, e in errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write docs/performance.md, or only its judge part, from a results file."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["--only", "judge"]:
        source = Path(args[2]) if len(args) > 2 else OUT / "results-judge.json"
        results = json.loads(source.read_text("utf-8"))
        PAGE.write_text(splice_judge(PAGE.read_text("utf-8"), results), "utf-8")
        print(f"written: the judge's part of {PAGE} (from {source})")
        return 0
    source = Path(args[0]) if args else OUT / "results.json"
    results = json.loads(source.read_text("utf-8"))
    PAGE.write_text(render(results), "utf-8")
    print(f"written: {PAGE} (from {source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

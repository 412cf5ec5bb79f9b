"""What the benchmarks share: the figure record, golden sets, a callable target, the
endpoint subprocess and a pyinstrument summary.

A figure is a plain dict so that every module's ``run()`` result is JSON as it stands::

    figure(21_500.0, "cases/s", goal=">= 20,000", met=True, meaning="...")
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evaluator.dataset import parse_dataset
from evaluator.models import Case, Dataset, Retrieved, TargetResponse

__all__ = [
    "REPO",
    "RESPONSE",
    "Profile",
    "answer",
    "endpoint",
    "figure",
    "golden_set",
    "golden_set_bytes",
    "hotspots",
    "median",
    "nearest_rank",
    "profile",
    "quick",
]

REPO = Path(__file__).resolve().parents[2]
#: GNU time (Debian package time): the peak RSS of one command alone
GNU_TIME = "/usr/bin/time"

Figure = dict[str, Any]


def figure(
    value: float | None,
    unit: str,
    *,
    goal: str | None = None,
    met: bool | None = None,
    meaning: str = "",
    runs: Sequence[float] | None = None,
    digits: int = 3,
) -> Figure:
    """One named result: ``met`` is None when the figure has no goal."""
    out: Figure = {
        "value": None if value is None else round(float(value), digits),
        "unit": unit,
        "goal": goal,
        "met": met,
        "meaning": meaning,
    }
    if runs is not None:
        out["runs"] = [round(float(r), digits) for r in runs]
    return out


def quick() -> bool:
    """``make bench-quick`` (``BENCH_QUICK=1``): fewer repeats and cases, same figures."""
    return os.environ.get("BENCH_QUICK") == "1"


def median(values: Sequence[float]) -> float:
    """The median of ``values`` as a float."""
    return float(statistics.median(values))


def nearest_rank(values: Sequence[float], percentile: float) -> float:
    """Nearest-rank percentile, as evaluator's summaries compute P95."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * percentile // 100))
    return float(ordered[int(rank) - 1])


# --- golden sets and a callable target -------------------------------------------------------

_TOPICS = ("refund", "shipping", "account", "payment", "invoice")
_FACTS = (["七天", "7天", "7 days"], "refund", ["3-5个工作日", "3 to 5 working days"])


def golden_set_bytes(n: int, seed: int = 7) -> bytes:
    """``n`` valid JSONL cases: 10% unanswerable, binary and graded relevance over doc-0..9,
    one or two expected facts (some with alternatives), Chinese and English questions."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        topic = _TOPICS[i % len(_TOPICS)]
        zh = i % 2 == 0
        question = (
            f"{topic} 问题 {i}：退款申请有期限吗？" if zh else f"{topic} question {i}: how long?"
        )
        case: dict[str, Any] = {"id": f"case-{i:05d}", "question": question}
        if i % 10 == 0:
            case.update(relevant_ids=[], unanswerable=True)
        else:
            docs = rng.sample(range(10), rng.choice((1, 2)))
            relevant: Any = [f"doc-{d}" for d in docs]
            if i % 3 == 0:
                relevant = {f"doc-{d}": rng.choice((1, 2)) for d in docs}
            case.update(
                relevant_ids=relevant,
                expected_facts=list(rng.sample(_FACTS, rng.choice((1, 2)))),
                unanswerable=False,
            )
        case["tags"] = [topic, "zh" if zh else "en"]
        lines.append(json.dumps(case, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def golden_set(n: int, seed: int = 7, name: str = "bench") -> Dataset:
    """The cases of :func:`golden_set_bytes`, validated by evaluator's own parser."""
    return parse_dataset(golden_set_bytes(n, seed), f"{name}.jsonl")


#: what the callable target answers: the endpoint's body as a TargetResponse
RESPONSE = TargetResponse(
    retrieved=tuple(
        Retrieved(id=f"doc-{i}", score=1.0 / (i + 1), text="x" * 200) for i in range(5)
    ),
    answer="Refunds are accepted within 7 days (七天) of delivery, see the policy [1].",
    citations=(1, 2),
    timings={
        "embedding": 0.011,
        "vector": 0.004,
        "keyword": 0.002,
        "rerank": 0.03,
        "model": 0.9,
        "sleep": 0.0,
    },
)


async def answer(case: Case, k: int) -> TargetResponse:
    """A callable target (``tests.benchmarks.support:answer``) that answers at once."""
    return RESPONSE


#: how long :func:`answer_slowly` takes per case
SLOW_SECONDS = 0.05


async def answer_slowly(case: Case, k: int) -> TargetResponse:
    """A callable target that answers after 50 ms: runs that last, so they overlap."""
    await asyncio.sleep(SLOW_SECONDS)
    return RESPONSE


# --- the endpoint in its own process ---------------------------------------------------------


@contextmanager
def endpoint(
    latency: float = 0.0,
    start_timeout: float = 20.0,
    *,
    sse: bool = False,
    log_requests: bool = False,
) -> Iterator[str]:
    """``tests.benchmarks.endpoint`` in a subprocess answering after ``latency`` s; its URL
    (with ``sse``: the streaming endpoint, first piece after the question's seconds; with
    ``log_requests``: each request's times at ``/requests`` beside ``/rag``)."""
    command = [sys.executable, "-m", "tests.benchmarks.endpoint", "--latency", repr(latency)]
    if log_requests:
        command.append("--log-requests")
    proc = subprocess.Popen(
        [*command, "--sse"] if sse else command,
        stdout=subprocess.PIPE,
        cwd=REPO,
        text=True,
        bufsize=1,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], start_timeout)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise RuntimeError(f"benchmark endpoint did not start (got {line!r})")
        yield f"http://127.0.0.1:{int(line)}/rag" + ("/stream" if sse else "")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()  # else a ResourceWarning, an error under pytest


# --- profiles --------------------------------------------------------------------------------


def _package(frame: Any) -> str:
    """The top-level package (or stdlib module) a frame's code lives in."""
    if frame.file_path is None or frame.file_path_short is None:
        return "<built-in>"
    short = str(frame.file_path_short).replace("\\", "/")
    head = short.split("/", 1)[0]
    return head.removesuffix(".py") or "<unknown>"


def hotspots(root: Any, top: int = 10) -> dict[str, list[dict[str, Any]]]:
    """Where the time went in a pyinstrument frame tree: self time by function and by
    package (a built-in counts for the package that called it), and evaluator functions
    by inclusive time (each counted once along a recursive path)."""
    total = root.time or 1.0
    own: dict[str, float] = {}
    packages: dict[str, float] = {}
    inclusive: dict[str, float] = {}

    def walk(frame: Any, above: frozenset[str], caller: str) -> None:
        if frame.is_synthetic:
            return
        key = f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
        own[key] = own.get(key, 0.0) + frame.total_self_time
        package = _package(frame)
        if package == "<built-in>":
            package = caller
        packages[package] = packages.get(package, 0.0) + frame.total_self_time
        if key not in above and "evaluator/" in (frame.file_path or ""):
            inclusive[key] = inclusive.get(key, 0.0) + frame.time
        for child in frame.children:
            walk(child, above | {key}, package)

    walk(root, frozenset(), "<root>")

    def rows(table: dict[str, float], name: str = "function") -> list[dict[str, Any]]:
        ranked = sorted(table.items(), key=lambda kv: kv[1], reverse=True)[:top]
        return [{name: k, "share": round(v / total, 3)} for k, v in ranked]

    return {
        "self": rows(own),
        "packages": rows(packages, "package"),
        "evaluator_inclusive": rows(inclusive),
    }


class Profile:
    """pyinstrument around a block: ``with Profile() as p: ...``, then ``p.result``
    (hotspots, and the call tree as text)."""

    def __init__(self, interval: float = 0.0005) -> None:
        from pyinstrument import Profiler

        self._profiler = Profiler(interval=interval, async_mode="enabled")
        self.result: dict[str, Any] = {}

    def __enter__(self) -> Profile:
        self._started = time.perf_counter()
        self._profiler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        session = self._profiler.stop()
        root = session.root_frame()
        self.result = {
            "seconds": round(time.perf_counter() - self._started, 3),
            "hotspots": hotspots(root) if root is not None else {},
            "tree": self._profiler.output_text(unicode=False, color=False, show_all=False),
        }


def profile(work: Callable[[], object], interval: float = 0.0005) -> dict[str, Any]:
    """Run ``work()`` under pyinstrument; its hotspots and the rendered call tree (text)."""
    with Profile(interval) as p:
        work()
    return p.result


# --- whole processes ---------------------------------------------------------------------


def measured_process(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``command`` to its end (this repository first on PYTHONPATH, no EVALUATOR_
    variables): its wall and CPU seconds, peak RSS (MiB), exit code and output tails,
    measured by the kernel for that one process tree."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    full_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
    )
    full_env.update(env or {})
    # GNU time forks the command from its own small process: a child forked straight from
    # this benchmark would inherit the benchmark's peak RSS in ru_maxrss (Linux keeps the
    # larger across fork and exec), so every process here read as large as the benchmark.
    # Output goes to files: a pipe nobody reads until the end stalls a chatty child.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as peak:
            started = time.perf_counter()
            proc = subprocess.Popen(
                [GNU_TIME, "-f", "%M", "-o", peak.name, *command],
                cwd=cwd,
                env=full_env,
                stdout=out,
                stderr=err,
            )
            # wait4 on GNU time: its rusage covers the command and all it waited for
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - started
            peak_kib = float(peak.read().strip().splitlines()[-1])  # KiB on Linux
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    return {
        "wall_seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_mib": peak_kib / 1024,
        "exit_code": os.waitstatus_to_exitcode(status),
        "stdout_tail": stdout.strip().splitlines()[-2:],
        # GNU time appends "Command exited with non-zero status N" to stderr, not to -o
        "stderr_tail": [
            line for line in stderr.strip().splitlines() if not line.startswith("Command exited")
        ][-3:],
    }

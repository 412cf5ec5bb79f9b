"""Benchmark: the history store's cost per run and its size per 1,000 runs of 1,000 cases.

Writes 1,000 runs of a 1,000-case golden set through the daemon's own path
(:meth:`HistoryRecorder.record`: the run's rows in one transaction, retention, then the
stability window and the drift test read back), timing each call, then measures the file.
The store is written from a worker thread in the daemon, so this time is never spent on
the event loop; it bounds how far behind the history can fall (one write per run).

Run it as ``python tests/benchmarks/bench_history.py`` or call :func:`run` (``make bench``).
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evaluator.history.recorder import HistoryRecorder, HistorySettings
from evaluator.models import Case, CaseRecord, CaseScores
from evaluator.report import RunReport, parse_timestamp
from evaluator.summary import summarise
from tests.benchmarks.support import figure, nearest_rank
from tests.support.records import replace

CASES = 1_000
RUNS = 1_000
GOAL_MS = 100.0
GOAL_MB = 100.0


def _variants(case_id: str) -> list[CaseRecord]:
    """A case's possible outcomes: passes mostly, sometimes wrong, ranked lower, or failed."""
    base = CaseRecord(
        case=Case(
            id=case_id,
            question=f"question {case_id}?",
            relevance={f"doc-{case_id}": 1},
            expected_facts=(("fact",),),
            unanswerable=False,
            tags=(),
        ),
        outcome=CaseScores(
            recall_at_k=1.0,
            mrr=1.0,
            ndcg_at_k=1.0,
            citation_precision=1.0,
            citation_recall=1.0,
            citation_valid=True,
            answer_correct=True,
            fact_recall=1.0,
            refused=False,
        ),
        ranked_ids=(f"doc-{case_id}",),
        answer="fact",
        citations=(1,),
        latency_seconds=0.2,
        stage_seconds={},
    )
    wrong = replace(
        base,
        outcome=CaseScores(
            recall_at_k=1.0,
            mrr=0.5,
            ndcg_at_k=0.63,
            citation_precision=0.5,
            citation_recall=0.5,
            citation_valid=True,
            answer_correct=False,
            fact_recall=0.0,
            refused=False,
        ),
    )
    missed = replace(
        base,
        outcome=CaseScores(
            recall_at_k=0.0,
            mrr=0.0,
            ndcg_at_k=0.0,
            citation_precision=0.0,
            citation_recall=0.0,
            citation_valid=True,
            answer_correct=False,
            fact_recall=0.0,
            refused=False,
        ),
    )
    return [base] * 8 + [wrong, missed]


def _reports(rng: random.Random) -> tuple[list[list[CaseRecord]], RunReport]:
    variants = [_variants(f"case-{i:04d}") for i in range(CASES)]
    template_cases = tuple(v[0] for v in variants)
    template = RunReport(
        run_id="template",
        generated_at=parse_timestamp("2026-01-01T00:00:00Z"),
        config_hash="c" * 16,
        dataset_hash="d" * 64,
        target="bench",
        dataset="golden",
        k=5,
        duration_seconds=1.0,
        summary=summarise(template_cases),
        cases=template_cases,
    )
    return variants, template


def run() -> dict[str, Any]:
    """The history store's cost per run and size per 1,000 runs, its figures by name."""
    rng = random.Random(17)
    variants, template = _reports(rng)
    start = datetime.now(UTC) - timedelta(minutes=RUNS)
    timings: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        recorder = HistoryRecorder(Path(tmp), HistorySettings(keep_runs=RUNS, max_age_days=30))
        try:
            for i in range(RUNS):
                cases = tuple(rng.choice(v) for v in variants)
                at = start + timedelta(minutes=i)
                report = replace(
                    template, run_id=f"run-{i:04d}", generated_at=at, cases=cases
                )  # the summary is not what history costs: the template's is reused
                began, began_cpu = time.perf_counter(), time.process_time()
                outcome = recorder.record("bench", "golden", report, "complete")
                timings.append(time.perf_counter() - began)
                cpu.append(time.process_time() - began_cpu)
                if outcome.errors:
                    raise RuntimeError(f"history store errors: {outcome.errors}")
        finally:
            recorder.close()
        folder = Path(tmp)
        size = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("history"))
        history = outcome.history
    ms = [t * 1000 for t in timings]
    last = ms[-100:]  # with the table full: the cost a long-running daemon pays
    median_ms = statistics.median(last)
    cpu_ms = statistics.median([t * 1000 for t in cpu[-100:]])
    p95_ms = nearest_rank(last, 95)
    mb = size / 1e6
    raw = {
        "benchmark": "history_store",
        "cases": CASES,
        "runs": RUNS,
        "first_100_median_ms": round(statistics.median(ms[:100]), 2),
        "last_100_median_ms": round(median_ms, 2),
        "last_100_p95_ms": round(p95_ms, 2),
        "last_100_median_cpu_ms": round(cpu_ms, 2),
        "bytes": size,
        "bytes_per_case_outcome": round(size / (CASES * RUNS), 1),
        "window_runs": history.runs_in_window if history else None,
        "classes": {k.value: v for k, v in history.counts.items()} if history else None,
    }
    return {
        f"history store, one {CASES:,}-case run (write + stability + drift)": figure(
            median_ms,
            "ms",
            goal=f"< {GOAL_MS:g} ms",
            met=median_ms < GOAL_MS,
            meaning=(
                f"median wall time of the last 100 of {RUNS:,} runs (P95 {p95_ms:.1f} ms, "
                f"CPU {cpu_ms:.1f} ms), in the history worker thread, never on the event loop"
            ),
            digits=1,
        ),
        f"history store size, {RUNS:,} runs of {CASES:,} cases": figure(
            mb,
            "MB",
            goal=f"< {GOAL_MB:g} MB",
            met=mb < GOAL_MB,
            meaning=f"SQLite file after {RUNS * CASES:,} case outcomes "
            f"({size / (CASES * RUNS):.0f} bytes each)",
            digits=1,
        ),
        "_details": raw,
    }


if __name__ == "__main__":
    print(json.dumps(run()["_details"], indent=2))

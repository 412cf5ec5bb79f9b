"""Benchmark: the status page of a job with 10,000 cases and 1,000 runs of history.

Builds the page the daemon serves at ``/`` (views + Jinja2 render, the work the worker
thread does per request) for one job whose last run has 10,000 cases, a tenth of them
failing, 1,000 trend rows, a failing gate and a significant drift, with 2,000 newly
failing and 500 flaky cases (the page links the first ones and counts the rest).

Run it as ``python tests/benchmarks/bench_pages.py`` or call :func:`run` (``make bench``).
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from evaluator.models import Case, CaseRecord, CaseScores
from evaluator.pages.chart import Limit
from evaluator.pages.health import DriftSignal, JobSignals
from evaluator.pages.render import PageRenderer
from evaluator.pages.trend import RunPoint
from evaluator.pages.views import JobState, job_view
from evaluator.report import RunReport
from evaluator.summary import summarise
from tests.benchmarks.support import figure, quick

CASES = 10_000
RUNS = 1_000
GOAL_MS = 200.0


def _record(i: int) -> CaseRecord:
    ok = i % 10 != 0
    return CaseRecord(
        case=Case(
            id=f"case-{i:05d}",
            question=f"question {i}?",
            relevance={f"doc-{i}": 1},
            expected_facts=(("fact",),),
            unanswerable=False,
            tags=("bench",),
        ),
        outcome=CaseScores(
            recall_at_k=1.0 if ok else 0.0,
            mrr=1.0 if ok else 0.0,
            ndcg_at_k=1.0 if ok else 0.0,
            citation_precision=1.0,
            citation_recall=1.0,
            citation_valid=True,
            answer_correct=ok,
            fact_recall=1.0 if ok else 0.0,
            refused=False,
        ),
        ranked_ids=(f"doc-{i}",),
        answer="fact" if ok else "nothing",
        citations=(1,),
        latency_seconds=0.2,
        stage_seconds={},
    )


def _state() -> JobState:
    cases = [_record(i) for i in range(CASES)]
    report = RunReport(
        run_id="bench",
        generated_at=datetime(2026, 1, 1, tzinfo=UTC),
        config_hash="c",
        dataset_hash="d",
        target="reference",
        dataset="bench",
        k=5,
        cases=tuple(cases),
        summary=summarise(cases),
        duration_seconds=12.0,
    )
    now = time.time()
    runs = [
        RunPoint(f"r{i}", now - 900 * i, "complete", {"mrr": 0.9 - (i % 7) / 100})
        for i in range(RUNS)
    ]
    ids = [c.id for c in cases]
    signals = JobSignals(
        "complete",
        CASES,
        0.0,
        False,
        ("mrr.max_drop",),
        drift=[DriftSignal("mrr", True, -0.38, 0.9, 0.52)],
        drift_current_runs=3,
        newly_failing=2000,
    )
    return JobState(
        "reference", "bench", report, "complete", now, baseline=report, gate_passing=False,
        gate_failing=("mrr.max_drop",), runs=runs, signals=signals,
        newly_failing=ids[:2000], flaky=ids[2000:2500],
        # the trend lines' gate line, and where each newly failing case began (history's
        # window of ten runs)
        gate_limits=[Limit("mrr", 0.89, "gate", "the gate's limit (may drop at most 0.01)")],
        newly_failing_verdicts={i: [True] * 7 + [False] * 3 for i in ids[:2000]},
        window_runs=10,
    )  # fmt: skip


def run() -> dict[str, Any]:
    state = _state()
    renderer = PageRenderer()
    times = []
    for _ in range(5 if quick() else 20):
        started = time.perf_counter()
        view = job_view(state, case_href=lambda t, d, c: f"/case?id={c}", report_href="/r",
                        anchor="job-0")  # fmt: skip
        renderer.status([view])
        times.append((time.perf_counter() - started) * 1000)
    median = statistics.median(times)
    return {
        f"status page, one job of {CASES:,} cases and {RUNS:,} runs": figure(
            median,
            "ms",
            goal=f"< {GOAL_MS:g} ms",
            met=median < GOAL_MS,
            meaning=f"median of {len(times)} renders (views + template), max {max(times):.1f} ms",
            digits=1,
        )
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

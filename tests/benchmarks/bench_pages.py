"""Benchmark: the status page and the case table of a job with 10,000 cases and 1,000 runs
of history.

Builds the page the daemon serves at ``/`` (views + Jinja2 render, the work the worker
thread does per request) for one job whose last run has 10,000 cases, a tenth of them
failing, 1,000 trend rows, a failing gate and a significant drift, with 2,000 newly
failing and 500 flaky cases (the page links the first ones and counts the rest).

The case table (``/case-table``) is measured the way the daemon serves it: its snapshot
(every case's row, its changes against an all-passing baseline by the gate's own case diff,
its stability class) is built once per run, on the first request after it, then each
request filters, sorts and renders one page of it. Both the first request and the
following ones are measured, over a mix of queries (the default page, failed by RR, a
text search, a stability class, the last page of all cases).

Run it as ``python tests/benchmarks/bench_pages.py`` or call :func:`run` (``make bench``).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import msgspec

from evaluator.daemon.pages import cases_href, regressions
from evaluator.models import Case, CaseRecord, CaseScores
from evaluator.pages.cases import CaseTable, case_table, parse_query, table_view
from evaluator.pages.chart import Limit
from evaluator.pages.health import DriftSignal, JobSignals
from evaluator.pages.render import PageRenderer
from evaluator.pages.status import JobPage, job_view, report_digest
from evaluator.pages.trend import RunPoint
from evaluator.report import RunReport
from evaluator.summary import summarise
from tests.benchmarks.support import figure, quick

CASES = 10_000
RUNS = 1_000
GOAL_MS = 200.0


def _record(i: int, *, healthy: bool = False) -> CaseRecord:
    ok = healthy or i % 10 != 0
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


def _state() -> JobPage:
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
    return JobPage(
        "reference", "bench", report, "complete", now, baseline=report, gate_passing=False,
        gate_failing=("mrr.max_drop",), runs=runs, signals=signals,
        newly_failing=ids[:2000], flaky=ids[2000:2500],
        # the trend lines' gate line, and where each newly failing case began (history's
        # window of ten runs)
        gate_limits=[Limit("mrr", 0.89, "gate", "the gate's limit (may drop at most 0.01)")],
        newly_failing_verdicts={i: [True] * 7 + [False] * 3 for i in ids[:2000]},
        window_runs=10,
    )  # fmt: skip


#: the case table requests of one round, as a browser's address bar would send them
QUERIES: tuple[tuple[tuple[str, str], ...], ...] = (
    (),
    (("show", "failed"), ("sort", "rr"), ("order", "desc")),
    (("q", "question 12"), ("size", "200")),
    (("show", "newly_failing"), ("sort", "stability")),
    (("page", str(CASES // 50)),),
)


def _snapshot(report: RunReport, baseline: RunReport, stability: dict[str, str]) -> CaseTable:
    """What the daemon builds on the first request after a run (StatusPages.table)."""
    regressed, note = regressions(baseline, report)
    return case_table(
        report, regressed=regressed, stability=stability, redact=_redact, baseline_note=note
    )


def _redact(text: str) -> str:
    return text


def _table_page(
    renderer: PageRenderer, table: CaseTable, pairs: tuple[tuple[str, str], ...]
) -> str:
    view = table_view(
        table,
        parse_query(pairs),
        href=lambda p: cases_href("reference", "bench", p),
        case_href=lambda c: f"/case?id={c}",
    )
    return renderer.case_table(view, run_age="1 s ago")


def _case_table_figures(state: JobPage, renderer: PageRenderer) -> dict[str, Any]:
    report = state.report
    assert report is not None
    healthy = [_record(i, healthy=True) for i in range(CASES)]
    baseline = msgspec.structs.replace(
        report, run_id="baseline", cases=tuple(healthy), summary=summarise(healthy)
    )
    ids = [c.id for c in report.cases]
    stability = dict.fromkeys(ids, "stable_pass")
    stability.update(dict.fromkeys(ids[:2000], "newly_failing"))
    stability.update(dict.fromkeys(ids[2000:2500], "flaky"))
    first, pages = [], []
    for _ in range(3 if quick() else 8):
        started = time.perf_counter()
        table = _snapshot(report, baseline, stability)
        _table_page(renderer, table, QUERIES[0])
        first.append((time.perf_counter() - started) * 1000)
        for pairs in QUERIES:
            started = time.perf_counter()
            _table_page(renderer, table, pairs)
            pages.append((time.perf_counter() - started) * 1000)
    regressed = table.counts["regressed"]
    assert regressed == CASES // 10, regressed  # the failing tenth, against a passing baseline
    first_median, page_median = statistics.median(first), statistics.median(pages)
    return {
        f"case table, first request after a run ({CASES:,} cases)": figure(
            first_median,
            "ms",
            goal=f"< {GOAL_MS:g} ms",
            met=first_median < GOAL_MS,
            meaning=(
                f"median of {len(first)}: the snapshot (rows, {regressed:,} regressions by "
                f"the gate's case diff, stability classes) and the first page; max "
                f"{max(first):.1f} ms"
            ),
            digits=1,
        ),
        f"case table page, per request ({CASES:,} cases)": figure(
            page_median,
            "ms",
            goal=f"< {GOAL_MS:g} ms",
            met=page_median < GOAL_MS,
            meaning=(
                f"median of {len(pages)} requests over {len(QUERIES)} queries (filter, sort, "
                f"search, last page; 50-200 rows each) from the snapshot; max {max(pages):.1f} ms"
            ),
            digits=1,
        ),
    }


def _status_page(renderer: PageRenderer, state: JobPage) -> str:
    view = job_view(state, case_href=lambda t, d, c: f"/case?id={c}", report_href="/r",
                    cases_href="/case-table", anchor="job-0")  # fmt: skip
    return renderer.status([view])


def run() -> dict[str, Any]:
    """The status page's and case table's render times for a large job, its figures by name."""
    state = _state()
    report = state.report
    assert report is not None
    renderer = PageRenderer()
    _status_page(renderer, state)  # the templates compiled, once per process
    first, times = [], []
    for _ in range(3 if quick() else 8):
        # the first request after a run digests the report (label audit, worst cases) once,
        # as the daemon does (StatusPages keeps the digest beside the run)...
        started = time.perf_counter()
        digested = dataclasses.replace(state, digest=report_digest(report))
        _status_page(renderer, digested)
        first.append((time.perf_counter() - started) * 1000)
        # ...and every later one renders from it
        for _ in range(3):
            started = time.perf_counter()
            _status_page(renderer, digested)
            times.append((time.perf_counter() - started) * 1000)
    median, first_median = statistics.median(times), statistics.median(first)
    return {
        f"status page, one job of {CASES:,} cases and {RUNS:,} runs": figure(
            median,
            "ms",
            goal=f"< {GOAL_MS:g} ms",
            met=median < GOAL_MS,
            meaning=(
                f"median of {len(times)} renders (views + template) from the run's digest, "
                f"max {max(times):.1f} ms"
            ),
            digits=1,
        ),
        f"status page, first request after a run ({CASES:,} cases)": figure(
            first_median,
            "ms",
            goal=f"< {GOAL_MS:g} ms",
            met=first_median < GOAL_MS,
            meaning=(
                f"median of {len(first)}: the report's digest (label audit, worst cases) and "
                f"the page; max {max(first):.1f} ms"
            ),
            digits=1,
        ),
        **_case_table_figures(state, renderer),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

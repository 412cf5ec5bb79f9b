"""Benchmark: ``evaluator gate`` end to end on two 5,000-case reports, intervals included.

Times the whole process (interpreter start, imports, reading both reports, the paired
bootstrap, the diff and the rendering), median of 3. Goal: under 2 seconds.

Run it as ``python tests/benchmarks/bench_gate.py`` or call :func:`run` (``make bench``).
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator.models import Case, CaseError, CaseRecord, CaseScores
from evaluator.report import RunReport, parse_timestamp, write_report
from evaluator.summary import summarise

CASES = 5_000
REPEATS = 3
GOAL_SECONDS = 2.0
EVALUATOR = Path(sys.executable).with_name("evaluator")


def _case(rng: random.Random, i: int, shift: float) -> CaseRecord:
    """A realistic-looking case; ``shift`` nudges the candidate's scores and latency."""
    unanswerable = i % 10 == 0
    case = Case(
        id=f"case-{i:05d}",
        question=f"question number {i}?",
        relevance={} if unanswerable else {f"doc-{i}": 1},
        expected_facts=() if unanswerable else (("fact",),),
        unanswerable=unanswerable,
        tags=("bench",),
    )
    if rng.random() < 0.01:
        return CaseRecord(
            case=case,
            outcome=CaseError(kind="timeout", message="no answer within 30s"),
            ranked_ids=(),
            answer=None,
            citations=(),
            latency_seconds=30.0,
            stage_seconds={},
        )
    rank = rng.choice([1, 1, 1, 2, 3, 0]) if not unanswerable else 0
    if shift < 0 and rng.random() < -shift:
        rank = 0
    ranked = tuple(f"doc-{i + j}" if j else f"doc-x{i}" for j in range(5))
    recall = 1.0 if rank else 0.0
    correct = rng.random() < 0.85 + shift
    return CaseRecord(
        case=case,
        outcome=CaseScores(
            recall_at_k=recall,
            mrr=1.0 / rank if rank else 0.0,
            ndcg_at_k=recall,
            citation_precision=rng.choice([1.0, 1.0, 1.0, 0.5]),
            citation_recall=recall,
            citation_valid=True,
            answer_correct=correct,
            fact_recall=1.0 if correct else 0.0,
            refused=False,
        ),
        ranked_ids=ranked,
        answer="fact" if correct else "something else",
        citations=(1,),
        latency_seconds=rng.uniform(0.5, 2.5) * (1 + max(shift, 0)),
        stage_seconds={"embedding": 0.01, "rerank": 0.03, "model": rng.uniform(0.4, 2.0)},
    )


def _report(seed: int, shift: float, run_id: str) -> RunReport:
    rng = random.Random(seed)
    cases = [_case(rng, i, shift) for i in range(CASES)]
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


def run() -> dict[str, Any]:
    """Build two 5,000-case reports, time ``evaluator gate`` on them; returns the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        baseline, candidate = Path(tmp, "baseline.json"), Path(tmp, "candidate.json")
        write_report(_report(1, 0.0, "baseline"), baseline)
        write_report(_report(2, -0.03, "candidate"), candidate)
        command = [
            str(EVALUATOR),
            "gate",
            "--baseline",
            str(baseline),
            "--candidate",
            str(candidate),
            "--format",
            "json",
        ]
        timings = []
        exit_code = None
        for _ in range(REPEATS):
            started = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            timings.append(time.perf_counter() - started)
            exit_code = proc.returncode
            if proc.returncode not in (0, 2):
                raise RuntimeError(f"evaluator gate exited {proc.returncode}: {proc.stderr}")
        intervals = len(json.loads(proc.stdout)["intervals"])
        size = baseline.stat().st_size + candidate.stat().st_size
    median = statistics.median(timings)
    raw = {
        "benchmark": "gate_5000_cases",
        "cases": CASES,
        "report_bytes": size,
        "runs_seconds": [round(t, 3) for t in timings],
        "median_seconds": round(median, 3),
        "goal_seconds": GOAL_SECONDS,
        "within_goal": median < GOAL_SECONDS,
        "exit_code": exit_code,
        "intervals": intervals,
    }
    return {
        f"evaluator gate, two {CASES:,}-case reports, whole process": {
            "value": raw["median_seconds"],
            "unit": "s",
            "goal": f"< {GOAL_SECONDS:g} s",
            "met": raw["within_goal"],
            "meaning": (
                f"interpreter start, imports, reading both reports ({size / 1e6:.1f} MB), "
                f"rules, per-case diff, paired bootstrap intervals ({intervals}), JSON output; "
                f"exit code {exit_code}; median of {REPEATS}"
            ),
            "runs": raw["runs_seconds"],
        },
        "_details": raw,
    }


if __name__ == "__main__":
    result = run()["_details"]
    print(json.dumps(result, indent=2))
    print(
        f"evaluator gate, 2 x {CASES} cases with CIs: median {result['median_seconds']:.3f}s "
        f"(goal < {GOAL_SECONDS:.0f}s)",
        file=sys.stderr,
    )

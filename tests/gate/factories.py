"""Small builders of run reports for the gate tests: from case records, or summary-only JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluator.models import Case, CaseError, CaseRecord, CaseScores, Outcome
from evaluator.report import RunReport, parse_timestamp, report_to_dict
from evaluator.summary import summarise

#: The gate exercise of docs/gate.md.
EXERCISE_BASELINE = {
    "recall_at_k": 0.90,
    "mrr": 0.76,
    "ndcg_at_k": 0.72,
    "citation_precision": 0.98,
    "answer_accuracy": 0.84,
    "p95_seconds": 2.0,
}
EXERCISE_CANDIDATE = {
    "recall_at_k": 0.92,
    "mrr": 0.74,
    "ndcg_at_k": 0.75,
    "citation_precision": 0.96,
    "answer_accuracy": 0.87,
    "p95_seconds": 2.8,
}


def record(
    case_id: str,
    *,
    recall: float = 1.0,
    rr: float = 1.0,
    ndcg: float | None = None,
    precision: float = 1.0,
    correct: bool | None = True,
    latency: float = 0.1,
    error: str | None = None,
    unanswerable: bool = False,
    question: str | None = None,
    ranked: Sequence[str] = ("d1",),
    stages: Mapping[str, float] | None = None,
) -> CaseRecord:
    """One case; ``error`` (a kind) makes it a failed case with null scores."""
    outcome: Outcome
    if error is not None:
        outcome = CaseError(error, f"{error} talking to the target")
    else:
        outcome = CaseScores(
            recall_at_k=recall,
            mrr=rr,
            ndcg_at_k=recall if ndcg is None else ndcg,
            citation_precision=precision,
            citation_recall=recall,
            answer_correct=correct,
            fact_recall=None if correct is None else float(correct),
            refused=False,
        )
    return CaseRecord(
        case=Case(
            id=case_id,
            question=question or f"question {case_id}?",
            relevance={"d1": 1},
            expected_facts=(("fact",),) if correct is not None else (),
            unanswerable=unanswerable,
            tags=(),
        ),
        outcome=outcome,
        ranked_ids=tuple(ranked) if error is None else (),
        answer="fact" if correct else "nope",
        citations=(1,),
        latency_seconds=latency,
        stage_seconds=dict(stages or {}),
    )


def report(
    records: Sequence[CaseRecord],
    *,
    dataset_hash: str = "golden-hash-1",
    k: int = 5,
    dataset: str = "golden",
    target: str = "rag:8000",
    run_id: str = "run-1",
) -> RunReport:
    """A report whose summary is computed from ``records``, as the runner does."""
    return RunReport(
        run_id=run_id,
        generated_at=parse_timestamp("2025-01-01T00:00:00+00:00"),
        config_hash="cfg",
        dataset_hash=dataset_hash,
        target=target,
        dataset=dataset,
        k=k,
        duration_seconds=1.0,
        summary=summarise(records),
        cases=tuple(records),
    )


def summary_report(
    values: Mapping[str, float | None],
    *,
    n: int = 100,
    error_rate: float = 0.0,
    dataset_hash: str = "golden-hash-1",
    k: int = 5,
    cases: Sequence[CaseRecord] = (),
    run_id: str = "run-1",
) -> dict[str, Any]:
    """Report JSON whose summary holds ``values`` directly (the gate judges the summary).

    Quality values become ``totals`` of ``n`` cases; ``p50_seconds``/``p95_seconds`` are
    written as they are. A metric left out (or None) is null.
    """
    base = report_to_dict(report(cases, dataset_hash=dataset_hash, k=k, run_id=run_id))
    totals = {
        m: {"sum": v * n, "count": n}
        for m, v in values.items()
        if v is not None and not m.endswith("_seconds")
    }
    base["summary"] = {
        **{m: v for m, v in values.items() if not m.endswith("_seconds")},
        "case_count": n,
        "scored_count": n - round(error_rate * n),
        "error_count": round(error_rate * n),
        "error_rate": error_rate,
        "p50_seconds": values.get("p50_seconds"),
        "p95_seconds": values.get("p95_seconds"),
        "stage_p95_seconds": {},
        "errors_by_kind": {},
        "totals": totals,
    }
    return base


def write(path: Path, data: RunReport | Mapping[str, Any]) -> Path:
    """Write a report (or report JSON) to ``path``; returns ``path``."""
    payload = report_to_dict(data) if isinstance(data, RunReport) else dict(data)
    path.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    return path

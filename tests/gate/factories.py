"""Small builders of run reports for the gate tests: summary-only JSON, and the records and
reports of :mod:`tests.support.records` (the one record factory), re-exported."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluator.models import CaseRecord
from evaluator.report import RunReport, report_to_dict
from tests.support.records import record, report

__all__ = [
    "EXERCISE_BASELINE",
    "EXERCISE_CANDIDATE",
    "record",
    "report",
    "summary_report",
    "write",
]

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

"""One job's history as the daemon serves it: stability of every case and the drift signal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evaluator.history.drift import Drift, compute_drift
from evaluator.history.outcome import CaseOutcome, outcome_of
from evaluator.history.stability import (
    MIN_RUNS,
    CaseStability,
    Stability,
    class_counts,
    stabilities,
)
from evaluator.history.store import RUN_METRICS, RunRow, windows_of
from evaluator.report import RunReport

__all__ = ["JobHistory", "job_history", "run_row"]


@dataclass(frozen=True, slots=True)
class JobHistory:
    """Stability and drift of one job after its latest complete run."""

    window: int
    runs_in_window: int
    cases: tuple[CaseStability, ...]
    drift: Drift | None
    counts: Mapping[Stability, int] = field(default_factory=dict)

    def listed(self, stability: Stability) -> list[str]:
        return [c.case_id for c in self.cases if c.stability is stability]

    def to_dict(self, *, with_cases: bool = True) -> dict[str, object]:
        data: dict[str, object] = {
            "window": self.window,
            "runs_in_window": self.runs_in_window,
            "counts": {k.value: v for k, v in self.counts.items()},
            "flaky": self.listed(Stability.FLAKY),
            "newly_failing": self.listed(Stability.NEWLY_FAILING),
            "recovered": self.listed(Stability.RECOVERED),
            "stable_fail": self.listed(Stability.STABLE_FAIL),
            "drift": self.drift.to_dict() if self.drift is not None else None,
        }
        if with_cases:
            data["cases"] = [c.to_dict() for c in self.cases]
        return data


def job_history(
    runs: Sequence[Mapping[str, CaseOutcome]], *, window: int, recent: int, alpha: float
) -> JobHistory:
    """Stability over the latest ``window`` runs and drift of the latest ``recent`` runs
    against the ``window`` before them.

    Args:
        runs: complete runs, oldest first (``window + recent`` of them, or fewer so far).
    """
    latest = runs[-window:]
    # the drift test's runs before the window: a case that failed there is not newly failing
    earlier = windows_of(runs[-(window + recent) : -window]) if len(runs) > window else {}
    cases = tuple(stabilities(windows_of(latest), min(MIN_RUNS, window), earlier))
    drift = compute_drift(runs[-(window + recent) :], recent, alpha)
    return JobHistory(window, len(latest), cases, drift, class_counts(cases))


def run_row(report: RunReport, outcome: str) -> tuple[RunRow, dict[str, CaseOutcome]]:
    """What history keeps of a report: the run's row and each case's outcome."""
    finished = report.generated_at.timestamp()
    summary = report.summary
    # the store's columns name the values kept (one list: RUN_METRICS)
    metrics = {name: summary.get(name) for name in RUN_METRICS}
    row = RunRow(
        run_id=report.run_id,
        finished_at=finished,
        outcome=outcome,
        case_count=report.case_count,
        scored_count=summary.scored_count,
        error_count=report.error_count,
        dataset_hash=report.dataset_hash,
        config_hash=report.config_hash,
        metrics=metrics,
    )
    return row, {c.id: outcome_of(c, report.run_id, finished) for c in report.cases}

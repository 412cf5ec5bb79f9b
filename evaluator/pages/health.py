"""A job's health from what changed: red, amber or green, with the reasons in words.

One definition, shared with the shipped alerts (deploy/prometheus/rules/alerts.yml; a test
holds the two together, thresholds and promtool scenarios alike):

=======  ================================================================================
state    when
=======  ================================================================================
red      a drift check is significant with at least :data:`DRIFT_MIN_SCORED` scored cases
         (``RagEval*Drop``), the gate against the baseline fails (``RagEvalGateFailing``),
         or the last run's error ratio is above :data:`ERROR_RATIO_ALERT`
         (``RagEvalErrorRatioHigh``)
amber    cases newly failing in the history window, the last run not complete, or the
         judge reported compromised or uncalibrated
green    none of these
=======  ================================================================================

The page shows the *condition*, not the alert: an alert adds ``for:`` (and
``keep_firing_for:``) on top, so the page turns red up to 30 minutes before Prometheus pages
and turns green again while an alert still holds. Pure: the inputs are plain values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from evaluator.pages.chart import Limit

__all__ = [
    "DRIFT_METRIC",
    "DRIFT_MIN_SCORED",
    "ERROR_RATIO_ALERT",
    "DriftSignal",
    "Health",
    "JobSignals",
    "State",
    "alert_limits",
    "job_health",
]

#: ``RagEvalErrorRatioHigh``: ``rag_eval_error_ratio > 0.05``
ERROR_RATIO_ALERT = 0.05
#: the drift alerts' floor: ``rag_eval:scored_cases:sum >= 30``
DRIFT_MIN_SCORED = 30

#: the drift check of history and the run metric it moves (for the reason in words)
DRIFT_METRIC: Mapping[str, str] = {
    "hit": "recall_at_k",
    "mrr": "mrr",
    "ndcg_at_k": "ndcg_at_k",
    "answer": "answer_accuracy",
    "citation_precision": "citation_precision",
}
_LABEL = {
    "recall_at_k": "Recall@K",
    "mrr": "MRR",
    "ndcg_at_k": "nDCG@K",
    "answer_accuracy": "answer accuracy",
    "citation_precision": "citation precision",
}


def alert_limits() -> tuple[Limit, ...]:
    """The shipped alerts' fixed thresholds, as lines on the trend charts.

    Only the error ratio's alert has one: the drift alerts read a test over cases, not a
    distance from a line, and the latency alerts compare with Prometheus's own 7-day history
    of the case histogram (Grafana draws those)."""
    return (
        Limit(
            "error_rate",
            ERROR_RATIO_ALERT,
            "alert",
            "the RagEvalErrorRatioHigh threshold",
            bad_above=True,
        ),
    )


class State(StrEnum):
    RED = "red"
    AMBER = "amber"
    GREEN = "green"


@dataclass(frozen=True, slots=True)
class DriftSignal:
    """One drift check of the latest history verdict (history's ``CheckDrift``, flattened)."""

    check: str
    significant: bool
    shift: float | None
    #: the check's metric averaged over the reference window, and in the latest run
    before: float | None = None
    after: float | None = None


@dataclass(frozen=True, slots=True)
class JobSignals:
    """Everything the state reads, as the daemon knows it after the last run."""

    outcome: str | None
    scored_cases: int = 0
    error_ratio: float | None = None
    gate_passing: bool | None = None
    gate_failing: tuple[str, ...] = ()
    #: the failing gate's decision table: where to look (``evaluator gate``'s lines)
    gate_diagnosis: tuple[str, ...] = ()
    drift: Sequence[DriftSignal] = ()
    #: runs in the drift's current side and in its reference window
    drift_current_runs: int = 0
    drift_reference_runs: int = 0
    newly_failing: int = 0
    #: the judge's own health in words when it is compromised or uncalibrated (None: fine,
    #: or no judge); the judge module fills it, the page only shows it
    judge_problem: str | None = None
    #: a changed golden set rejected, in words (None: the file in use is the file on disk)
    reload_rejected: str | None = None
    #: the job is gated against a baseline report (its green says so)
    has_baseline: bool = False


@dataclass(frozen=True, slots=True)
class Health:
    state: State
    #: why, most severe first; empty when green
    reasons: tuple[str, ...] = field(default_factory=tuple)
    #: what green says: the job has a baseline to compare with, or history only
    has_baseline: bool = False

    @property
    def headline(self) -> str:
        if self.reasons:
            return self.reasons[0]
        if self.has_baseline:
            return "no change against the baseline or history"
        return "no change in history (no baseline configured)"


def _drift_reason(d: DriftSignal, current: int) -> str:
    """``MRR 0.90 → 0.52 in the latest run, significant over the last 3 runs``: the level of
    the reference window, the latest run's (not an average with the current side's runs
    before the change), and the window the test found it significant over."""
    metric = DRIFT_METRIC.get(d.check, d.check)
    label = _LABEL.get(metric, metric)
    runs = f" over the last {current} run{'s' if current != 1 else ''}" if current else ""
    if d.before is not None and d.after is not None:
        return f"{label} {d.before:.2f} → {d.after:.2f} in the latest run, significant{runs}"
    moved = f"{label} moved {d.shift:+.3f}" if d.shift is not None else label
    return f"{moved}{runs}, significant"


def _red_reasons(s: JobSignals) -> list[str]:
    """What turns the job red: a significant drift over enough scored cases, a failing gate,
    an error ratio above the alert's."""
    red: list[str] = []
    if s.scored_cases >= DRIFT_MIN_SCORED:
        red += [_drift_reason(d, s.drift_current_runs) for d in s.drift if d.significant]
    if s.gate_passing is False:
        rules = ", ".join(s.gate_failing)
        reason = "gate against the baseline fails" + (f": {rules}" if rules else "")
        if s.gate_diagnosis:
            reason += "; where to look: " + "; ".join(s.gate_diagnosis)
        red.append(reason)
    if s.error_ratio is not None and s.error_ratio > ERROR_RATIO_ALERT:
        red.append(
            f"{s.error_ratio:.1%} of the last run's cases errored "
            f"(alert above {ERROR_RATIO_ALERT:.0%})"
        )
    return red


def _amber_reasons(s: JobSignals) -> list[str]:
    """What turns the job amber: newly failing cases, no or an unfinished last run, a judge
    problem, a rejected golden-set reload."""
    amber: list[str] = []
    if s.newly_failing:
        amber.append(f"{s.newly_failing} case{'s' if s.newly_failing != 1 else ''} newly failing")
    if s.outcome is None:
        amber.append("no run yet")
    elif s.outcome != "complete":
        amber.append(f"last run {s.outcome}")
    if s.judge_problem:
        amber.append(f"judge: {s.judge_problem}")
    if s.reload_rejected:
        amber.append(s.reload_rejected)
    return amber


def job_health(s: JobSignals) -> Health:
    """The job's state and every reason for it (see the module's table)."""
    red, amber = _red_reasons(s), _amber_reasons(s)
    if red:
        return Health(State.RED, (*red, *amber), s.has_baseline)
    if amber:
        return Health(State.AMBER, tuple(amber), s.has_baseline)
    return Health(State.GREEN, has_baseline=s.has_baseline)

"""A job's SLOs in the daemon: each finished run's events, counted for the SLOs that count
the job (``rag_eval_slo_events_total{slo, outcome}``).

A run's events are what its report holds: the cases it scored (and, for ``no_error``, those
that failed), so an incomplete run counts what it scored and a run that broke without a
report counts nothing. ``judged`` events are read from the report's judge block, and only
for the checks its judge is trusted for: calibrated for the check (``evaluator
calibrate``) and trusted by this run's canaries (:func:`~evaluator.judge.trust.untrusted_reasons`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluator.config import Settings
from evaluator.config.slo import SloConfig
from evaluator.errors import ReportError
from evaluator.judge.apply import calibration_of
from evaluator.judge.checks import check
from evaluator.judge.derived import judged_of
from evaluator.judge.trust import untrusted_reasons
from evaluator.report import RunReport
from evaluator.slo.burn import BurnPlan
from evaluator.slo.ledger import EventLedger
from evaluator.slo.sli import Events, RunEvidence, count_events

__all__ = ["TrackedSlo", "run_events", "track_slos", "trusted_verdicts"]


def trusted_verdicts(report: RunReport) -> dict[str, dict[str, bool]]:
    """check -> case id -> the judge's verdict, for each check this run's judge is trusted
    for; empty for an unjudged run, a compromised judge, or a judge block that does not
    read back (its figures derived from its verdicts)."""
    try:
        judged = judged_of(report, f"run {report.run_id}")
    except ReportError:
        return {}
    if judged is None or untrusted_reasons(judged):
        return {}
    calibrated = calibration_of(judged)
    verdicts: dict[str, dict[str, bool]] = {}
    for case in judged.cases:
        for outcome in case.outcomes:
            if outcome.status != "judged" or not calibrated.get(outcome.check, False):
                continue
            verdict = check(outcome.check).verdict(outcome.values)
            if verdict is not None:
                verdicts.setdefault(outcome.check, {})[case.case_id] = verdict
    return verdicts


def run_events(slos: Sequence[SloConfig], report: RunReport) -> dict[str, Events]:
    """Each SLO's good and bad events in the run ``report`` records, by SLO name."""
    judged = trusted_verdicts(report) if any(s.check for s in slos) else {}
    evidence = RunEvidence(report.cases, judged)
    return {slo.name: count_events(slo.choice, evidence) for slo in slos}


@dataclass(frozen=True, slots=True)
class TrackedSlo:
    """An SLO as the daemon runs it: its settings, its alerts' plan (the status page shows
    the burn rate over its fastest page's long window) and the ledger of its events."""

    config: SloConfig
    plan: BurnPlan
    ledger: EventLedger


def track_slos(
    settings: Settings, previous: Mapping[str, TrackedSlo]
) -> tuple[dict[str, TrackedSlo], list[str]]:
    """The SLOs of ``settings``, each keeping its ledger from ``previous`` when its window
    did not change; and the names whose ledger is new (to restore from the history store)."""
    tracked: dict[str, TrackedSlo] = {}
    fresh: list[str] = []
    for slo in settings.slos:
        old = previous.get(slo.name)
        if old is not None and old.config.window_seconds == slo.window_seconds:
            ledger = old.ledger
        else:
            ledger = EventLedger(slo.window_seconds)
            fresh.append(slo.name)
        tracked[slo.name] = TrackedSlo(slo, settings.burn_plan(slo), ledger)
    return tracked, fresh

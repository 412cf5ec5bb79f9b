"""Judge drift: the labelled cases judged again, the verdicts compared with the labels.

A judge model can change behind the same name (a provider's silent update, a new
quantisation). The daemon re-judges the cases of its latest report that have a human label
for the same answer, never from the cache, and exports agreement and kappa per check; the
shipped alert fires when agreement falls below the band ``evaluator calibrate`` measured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluator.judge.calibrate import cohen_kappa
from evaluator.judge.checks import JudgedCheck, Subject, judged_checks
from evaluator.judge.judged_pass import JudgedPass, subjects_of
from evaluator.judge.labels import Label, outcome_verdict
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import answer_hash
from evaluator.report import RunReport

__all__ = ["DriftPoint", "rejudge_labelled"]


@dataclass(frozen=True, slots=True)
class DriftPoint:
    """One check's agreement with the labels on this re-judging (None: no verdict)."""

    check: str
    labels: int
    agreement: float | None
    kappa: float | None


#: one check of one case to judge again, with the human label of its answer
_Job = tuple[JudgedCheck, Subject, Label]


async def rejudge_labelled(
    report: RunReport, panel: JudgePanel, labels: Mapping[tuple[str, str, str], Label]
) -> list[DriftPoint]:
    """Judge again every check of ``report`` that a label covers; compare per check."""
    judged = JudgedPass(panel, None, None)
    jobs = _labelled(report, labels, judged.checks)
    outcomes = await asyncio.gather(
        *(judged.verdict(check, subject, use_cache=False) for check, subject, _ in jobs)
    )
    pairs: dict[str, list[tuple[bool, bool]]] = {c.name: [] for c in judged_checks()}
    for (check, _, label), outcome in zip(jobs, outcomes, strict=True):
        verdict = outcome_verdict(outcome)
        if verdict is not None:
            pairs[check.name].append((label.verdict, verdict))
    return [_point(name, got) for name, got in pairs.items() if got]


def _labelled(
    report: RunReport,
    labels: Mapping[tuple[str, str, str], Label],
    checks: Sequence[JudgedCheck],
) -> list[_Job]:
    """The checks (of ``checks``) of the report's cases that apply and that a label of the
    same answer covers."""
    jobs = []
    for subject in subjects_of(report.cases):
        digest = answer_hash(subject.answer)
        for check in checks:
            label = labels.get((subject.case_id, digest, check.name))
            if label is not None and check.applies(subject):
                jobs.append((check, subject, label))
    return jobs


def _point(check: str, pairs: list[tuple[bool, bool]]) -> DriftPoint:
    """One check's agreement and kappa over its (human, judge) pairs."""
    human = [h for h, _ in pairs]
    judge = [j for _, j in pairs]
    agreement = sum(h == j for h, j in pairs) / len(pairs)
    return DriftPoint(check, len(pairs), agreement, cohen_kappa(human, judge))

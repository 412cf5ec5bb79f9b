"""Judged runs for tests, as a judged pass writes them: the metrics the verdicts give, and a
canary whose verdict says whether the judge held, so every reader derives the same figures
(:func:`evaluator.judge.derived.judged_of`)."""

from __future__ import annotations

from evaluator.judge.canary_verdicts import (
    DEFAULT_LENIENT_ABOVE,
    CanaryClass,
    compromised,
    lenient,
)
from evaluator.judge.derived import metric_means
from evaluator.judge.record import (
    CanaryResult,
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    JudgeUsage,
)

__all__ = ["canary", "judged_run"]


def canary(
    fooled: bool | None = False, case_id: str = "canary-case", kind: CanaryClass = "injection"
) -> CanaryResult:
    """A fact-support canary of class ``kind`` the judge held (``fooled`` False), passed
    (True) or gave no verdict (None: its call failed)."""
    if fooled is None:
        outcome = CheckOutcome("fact_support", "error", error_kind="judge_timeout", error="t")
    else:
        values = {"fact_recall": 1.0 if fooled else 0.0, "answer_correct": fooled}
        outcome = CheckOutcome("fact_support", "judged", values, "canary")
    return CanaryResult("fact_support", case_id, fooled, outcome.reason, outcome, kind)


def judged_run(
    *cases: CaseJudgement,
    model: str = "m",
    prompt_version: str = "p",
    canaries: tuple[CanaryResult, ...] | None = None,
    calibration: str | None = None,
    samples: int = 1,
    panel: tuple[str, ...] = (),
) -> JudgedRun:
    """A judged run of ``cases`` whose figures follow from its verdicts; by default one
    canary of each class, each held (the judge's leniency measured, as a gate asks)."""
    held = (
        (canary(), canary(kind="specific_but_wrong"), canary(kind="vague_but_topical"))
        if canaries is None
        else canaries
    )
    return JudgedRun(
        model=model,
        prompt_version=prompt_version,
        metrics=metric_means(cases),
        usage=JudgeUsage(),
        canaries=held,
        cases=cases,
        compromised=compromised(held),
        lenient=lenient(held, DEFAULT_LENIENT_ABOVE),
        calibration=calibration,
        samples=samples,
        panel=panel,
    )

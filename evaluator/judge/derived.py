"""A report's judged figures, derived from its verdicts on read, never taken as written.

A report's ``judge`` block holds per-case verdicts, the canaries' verdicts, and figures that
follow from them: the judged metrics (each a mean of its check's values), whether a canary
fooled the judge (``fooled``, then ``compromised`` and ``lenient``). A reader that took the
figures as written would pass a candidate whose block says ``judged_fact_recall: 1.0``,
``compromised: true``, or holds the baseline's block pasted in. So every reader (the gate,
the pages, ``calibrate``, ``review``, the SLOs) reads the block through :func:`judged_of`:
each value typed and bounded (:func:`~evaluator.judge.record.judged_run_from_dict`), every
verdict tied to the answer the report holds (its ``answer_hash``), and every figure
recomputed from the verdicts; a written figure that does not follow from them is refused,
naming its field, as a summary that does not follow from its cases is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from evaluator.errors import ReportError
from evaluator.judge.canary_verdicts import WRONG_ANSWER_CLASSES, compromised, lenient
from evaluator.judge.checks import JudgedCheck, check, check_names, judged_checks, judged_metrics
from evaluator.judge.record import (
    CanaryResult,
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    answer_hash,
    judged_run_from_dict,
)
from evaluator.judge.settings import MAX_INJECTION_CANARIES, MAX_WRONG_ANSWER_CANARIES
from evaluator.metrics import FLOAT_TOLERANCE
from evaluator.models import CaseRecord
from evaluator.report import RunReport

__all__ = ["canary_fooled", "judged_of", "metric_means"]

#: canaries a report may hold: ``[judge] canaries`` allows at most 20 injection canaries,
#: ``wrong_answer_canaries`` 10 of each wrong-answer class for each check taking them
MAX_CANARIES = MAX_INJECTION_CANARIES + MAX_WRONG_ANSWER_CANARIES * len(WRONG_ANSWER_CLASSES) * sum(
    1 for c in judged_checks() if c.wrong_answers
)


def metric_means(cases: Iterable[CaseJudgement]) -> dict[str, float | None]:
    """Each judged metric's mean over the cases judged for its check (None: no case)."""
    cases = tuple(cases)
    out: dict[str, float | None] = {}
    for metric in judged_metrics():
        values = [
            float(o.values[metric.value])
            for c in cases
            for o in c.outcomes
            if o.check == metric.check and o.status == "judged" and metric.value in o.values
        ]
        out[metric.name] = sum(values) / len(values) if values else None
    return out


def canary_fooled(judged_check: JudgedCheck, outcome: CheckOutcome) -> bool | None:
    """Whether the judge passed a canary: any vote that passed it (a majority would hide a
    judge talked round one time in three); None when no vote gave a verdict on it (the call
    failed, was skipped, or the judge found nothing to judge in an answer made to be
    judged: a judge answering canaries unlike other cases is not a judge that held)."""
    assert judged_check.canary is not None  # only canaried checks deal canaries
    votes = [v.outcome for v in outcome.votes] or [outcome]
    judged = [
        o for o in votes if o.status == "judged" and judged_check.verdict(o.values) is not None
    ]
    if not judged:
        return None
    return any(judged_check.canary.fooled(o.values) for o in judged)


def judged_of(report: RunReport, source: str) -> JudgedRun | None:
    """``report``'s judged run, read back and derived (None: the report was not judged).

    Raises:
        ReportError: a value of the wrong type or out of bounds, a verdict of another answer
            or of a case the report does not hold, or a written figure that does not follow
            from the verdicts (each naming its field under ``judge.``).
    """
    if report.judge is None:
        return None
    judged = judged_run_from_dict(report.judge, source)
    _check_cases(judged.cases, report.cases, source)
    canaries = _derived_canaries(judged.canaries, source)
    metrics = metric_means(judged.cases)
    _check_metrics(judged, metrics, source)
    flags = {
        "compromised": (judged.compromised, compromised(canaries)),
        "lenient": (judged.lenient, lenient(canaries, judged.lenient_above)),
    }
    for name, (written, derived) in flags.items():
        if written != derived:
            why = f"is {_json(written)}, its canaries' verdicts give {_json(derived)}"
            raise _fail(source, name, why)
    return dataclasses.replace(judged, metrics=metrics, canaries=canaries)


def _fail(source: str, where: str, what: str) -> ReportError:
    return ReportError(f"{source}: judge.{where}: {what}")


def _json(value: bool | None) -> str:
    return "null" if value is None else str(value).lower()


def _check_cases(
    cases: tuple[CaseJudgement, ...], records: tuple[CaseRecord, ...], source: str
) -> None:
    """Each case's verdicts name a case of the report, once, judged on the answer the report
    holds for it (a verdict of another answer, or the baseline's block pasted in, is
    refused); and every scored case has its verdicts (:func:`_check_every_case_judged`)."""
    answers = {r.id: r.answer for r in records}
    seen: set[str] = set()
    _check_every_case_judged(cases, records, source)
    for i, case in enumerate(cases):
        if case.case_id not in answers:
            raise _fail(source, f"cases.{i}.case_id", "names no case of the report")
        if case.case_id in seen:
            raise _fail(source, f"cases.{i}.case_id", f"judges {case.case_id!r} twice")
        seen.add(case.case_id)
        if case.answer_hash != answer_hash(answers[case.case_id]):
            raise _fail(
                source,
                f"cases.{i}.answer_hash",
                f"is not the hash of the answer case {case.case_id!r} holds: its verdicts "
                "judged another answer",
            )


def _check_every_case_judged(
    cases: tuple[CaseJudgement, ...], records: tuple[CaseRecord, ...], source: str
) -> None:
    """A judged pass judges every scored case (one entry each, even with no check applying):
    a scored case without its verdicts had them dropped, and dropping a case's failing
    verdicts would raise the judged means the rest give."""
    judged = {c.case_id for c in cases}
    missing = [r.id for r in records if r.scores is not None and r.id not in judged]
    if missing:
        raise _fail(
            source,
            "cases",
            f"holds no verdicts of scored case {missing[0]!r} ({len(missing)} such): a judged "
            "pass judges every scored case",
        )


def _derived_canaries(canaries: tuple[CanaryResult, ...], source: str) -> tuple[CanaryResult, ...]:
    """The canaries, each ``fooled`` following from its verdict (refused when it does not);
    a canary of a report written before its verdict was kept stays as written (and leaves
    the run untrusted: :func:`evaluator.judge.trust.untrusted_reasons`)."""
    if len(canaries) > MAX_CANARIES:
        raise _fail(source, "canaries", f"holds more than {MAX_CANARIES} canaries")
    out = []
    for i, canary in enumerate(canaries):
        if canary.check not in check_names() or check(canary.check).canary is None:
            raise _fail(source, f"canaries.{i}.check", "is not a canaried judged check")
        if canary.kind != "injection" and not check(canary.check).wrong_answers:
            raise _fail(source, f"canaries.{i}.class", "is not a canary class of its check")
        if canary.outcome is not None:
            if canary.outcome.check != canary.check:
                raise _fail(source, f"canaries.{i}.outcome.check", "is not the canary's check")
            fooled = canary_fooled(check(canary.check), canary.outcome)
            if fooled != canary.fooled:
                why = f"is {_json(canary.fooled)}, its verdict gives {_json(fooled)}"
                raise _fail(source, f"canaries.{i}.fooled", why)
        out.append(canary)
    return tuple(out)


def _check_metrics(judged: JudgedRun, metrics: dict[str, float | None], source: str) -> None:
    """Each judged metric as written is the mean its verdicts give (both null, or close)."""
    for name, derived in metrics.items():
        written = judged.metrics.get(name)
        if written is None and derived is None:
            continue
        if written is None or derived is None or abs(written - derived) > FLOAT_TOLERANCE:
            shown = "null" if derived is None else f"{derived:g}"
            raise _fail(
                source,
                f"metrics.{name}",
                f"is {'null' if written is None else f'{written:g}'}, its verdicts give {shown}",
            )

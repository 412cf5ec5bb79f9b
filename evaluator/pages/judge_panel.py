"""The judge's panel of a case view: each judged check's verdict, its reason, the claims the
judge found unsupported, and the human label of the same answer when a labels file is known.

Pure functions over what the edges read: the report's ``judge`` block (checked here, a
report is outside input) and the labels (:func:`evaluator.judge.labels.read_labels`). Every
string from the judge (whose reason and claims may quote the target's answer) or from the
labels file is redacted and cut here; lists are bounded. A judge verdict is never shown as
truth: beside it stands the human label, and whether the two agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.bounds import clip
from evaluator.errors import ReportError
from evaluator.judge.canary_verdicts import acceptance_text
from evaluator.judge.checks import check as judged_check
from evaluator.judge.derived import judged_of
from evaluator.judge.labels import Label, LabelsError, outcome_verdict, read_labels
from evaluator.judge.record import (
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    answer_hash,
)
from evaluator.judge.trust import untrusted_reasons
from evaluator.judge.votes import vote_category
from evaluator.models import CaseRecord
from evaluator.pages.formatting import Redact
from evaluator.report import RunReport

__all__ = [
    "HumanLabelView",
    "JudgePanelView",
    "JudgedCheckView",
    "KnownLabels",
    "judge_panel",
    "judged_or_why",
    "read_known_labels",
    "report_panels",
    "unreadable_panel",
]

#: characters of the judge's reason shown (a verdict's reason is a sentence or two)
REASON_SHOWN_CHARS = 1000
#: unsupported claims listed per check (all are counted), and characters of each
CLAIMS_SHOWN = 20
CLAIM_SHOWN_CHARS = 300
#: characters of a reviewer's note, of the reviewer's name and of the label's time shown
NOTE_SHOWN_CHARS = 500
REVIEWER_SHOWN_CHARS = 100
#: characters of a judge error message and of the judge model's name shown
ERROR_SHOWN_CHARS = 300
MODEL_SHOWN_CHARS = 200


@dataclass(frozen=True, slots=True)
class KnownLabels:
    """The human labels a page may show: where they come from, and what was read there."""

    #: the labels file as configured (shown on the page)
    source: str
    labels: Mapping[tuple[str, str, str], Label]
    #: why the file could not be read (then ``labels`` is empty)
    error: str | None = None
    #: (case id, check) pairs labelled for some answer: "labelled, for another answer"
    labelled: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of(cls, source: str, labels: Mapping[tuple[str, str, str], Label]) -> KnownLabels:
        return cls(source, labels, None, frozenset((k[0], k[2]) for k in labels))

    @classmethod
    def unreadable(cls, source: str, error: str) -> KnownLabels:
        return cls(source, {}, error)


def read_known_labels(path: Path) -> KnownLabels:
    """The labels of ``path`` for a page (the one read this module does, for the daemon's
    case view and the HTML reports alike): a file that cannot be read is said on the page,
    never an error page; a missing file is no label yet."""
    try:
        return KnownLabels.of(str(path), read_labels(path))
    except LabelsError as exc:
        return KnownLabels.unreadable(str(path), str(exc))


@dataclass(frozen=True, slots=True)
class HumanLabelView:
    verdict: str  # "pass" or "fail"
    reviewer: str
    at: str
    note: str
    #: the judge said the same (None: the judge gave no verdict to compare)
    agrees: bool | None


@dataclass(frozen=True, slots=True)
class JudgedCheckView:
    check: str
    description: str
    #: "pass", "fail", "no verdict" (judged, nothing to decide), "error", "skipped" or
    #: "uncertain" (the votes split)
    status: str
    values: list[tuple[str, str]]
    reason: str
    unsupported: list[str]
    unsupported_more: int
    cached: bool
    #: the judge error's kind and message (status "error")
    error: str | None
    human: HumanLabelView | None
    #: no label of this answer, but one of another answer of this case (says nothing here)
    other_answer_labelled: bool
    #: each vote of a repeated verdict: (judge and sample, its verdict); none for one vote
    votes: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class JudgePanelView:
    """The judge's panel of one case view: what the judge found of the case, beside the
    human labels (the judges asked are :class:`evaluator.judge.panel.JudgePanel`)."""

    model: str
    prompt_version: str
    #: why this run's judge is untrusted (:func:`untrusted_reasons`; None: nothing against it)
    untrusted: str | None
    calibration: str | None
    checks: list[JudgedCheckView]
    #: why no check is listed (the case was not judged; the judge block is unreadable)
    note: str | None
    #: where human labels come from (None: no labels file configured)
    labels_source: str | None
    labels_error: str | None
    #: the run's canaries the judge accepted, by class (None: no judged run to read)
    canaries: str | None = None


def judged_or_why(report: RunReport, source: str) -> tuple[JudgedRun | None, str | None]:
    """The report's judged run derived from its verdicts (:func:`judged_of`), or why it
    cannot be read (None, None: not judged)."""
    try:
        return judged_of(report, source), None
    except ReportError as exc:
        return None, str(exc)


def _value(value: float | bool) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.2f}"


def _status(outcome: CheckOutcome, verdict: bool | None) -> str:
    if outcome.status != "judged":
        return outcome.status
    if verdict is None:
        return "no verdict"
    return "pass" if verdict else "fail"


def _description(check: str) -> str:
    """The registered check's description ("" for one this version does not know)."""
    try:
        return judged_check(check).description
    except KeyError:  # read back from a report: only registered checks pass the reader
        return ""


def _human_view(label: Label | None, verdict: bool | None, redact: Redact) -> HumanLabelView | None:
    """The human label of the same answer, and whether the judge agrees with it."""
    if label is None:
        return None
    return HumanLabelView(
        "pass" if label.verdict else "fail",
        redact(clip(label.reviewer, REVIEWER_SHOWN_CHARS)),
        redact(clip(label.at, 40)),
        redact(clip(label.note, NOTE_SHOWN_CHARS)),
        None if verdict is None else verdict == label.verdict,
    )


def _error_text(outcome: CheckOutcome, redact: Redact) -> str | None:
    """A judge error's kind and message (None unless the check errored)."""
    if outcome.status != "error":
        return None
    return redact(clip(f"{outcome.error_kind}: {outcome.error or ''}", ERROR_SHOWN_CHARS))


def _check_view(
    case: CaseJudgement, outcome: CheckOutcome, labels: KnownLabels | None, redact: Redact
) -> JudgedCheckView:
    """One judged check of a case: its verdict, values, reason, unsupported claims, and the
    human label of the same answer."""
    verdict = outcome_verdict(outcome)
    label = labels.labels.get((case.case_id, case.answer_hash, outcome.check)) if labels else None
    claims = outcome.unsupported
    return JudgedCheckView(
        check=outcome.check,
        description=_description(outcome.check),
        status=_status(outcome, verdict),
        values=[(name, _value(v)) for name, v in list(outcome.values.items())[:10]],
        reason=redact(clip(outcome.reason, REASON_SHOWN_CHARS)),
        unsupported=[redact(clip(c, CLAIM_SHOWN_CHARS)) for c in claims[:CLAIMS_SHOWN]],
        unsupported_more=max(len(claims) - CLAIMS_SHOWN, 0),
        cached=outcome.cached,
        error=_error_text(outcome, redact),
        human=_human_view(label, verdict, redact),
        other_answer_labelled=(
            label is None
            and labels is not None
            and (case.case_id, outcome.check) in labels.labelled
        ),
        votes=[
            (
                redact(clip(f"{v.member} #{v.sample}", REVIEWER_SHOWN_CHARS)),
                vote_category(v.outcome),
            )
            for v in outcome.votes
        ],
    )


def judge_panel(
    judged: JudgedRun,
    record: CaseRecord,
    *,
    labels: KnownLabels | None = None,
    redact: Redact,
) -> JudgePanelView:
    """The judge's panel of ``record``'s case view, from its report's judged run."""
    case = judged.case(record.id)
    note = None
    checks: list[JudgedCheckView] = []
    if case is None:
        note = (
            "not judged: the target failed this case"
            if record.scores is None
            else "not judged in this run"
        )
    elif case.answer_hash != answer_hash(record.answer):
        # a report whose answer was edited after judging: these verdicts are of another one
        note = "judged for another answer than the one shown: its verdicts are not shown"
    else:
        checks = [_check_view(case, o, labels, redact) for o in case.outcomes]
        if not checks:
            note = "no judged check applies to this case"
    return JudgePanelView(
        model=redact(clip(judged.model, MODEL_SHOWN_CHARS)),
        prompt_version=redact(clip(judged.prompt_version, MODEL_SHOWN_CHARS)),
        untrusted="; ".join(untrusted_reasons(judged)) or None,
        calibration=redact(judged.calibration) if judged.calibration is not None else None,
        checks=checks,
        note=note,
        labels_source=redact(labels.source) if labels is not None else None,
        labels_error=redact(labels.error) if labels is not None and labels.error else None,
        canaries=acceptance_text(judged.canaries),
    )


def unreadable_panel(error: str, redact: Redact) -> JudgePanelView:
    """The panel of a report whose judge block cannot be read: it says so, nothing else."""
    return JudgePanelView(
        model="?",
        prompt_version="?",
        untrusted=None,
        calibration=None,
        checks=[],
        note=redact(clip(f"the report's judge block is unreadable: {error}", 500)),
        labels_source=None,
        labels_error=None,
    )


def report_panels(
    report: RunReport,
    *,
    source: str,
    labels: KnownLabels | None,
    redact: Redact,
) -> Callable[[CaseRecord], JudgePanelView | None]:
    """The panel of each case of ``report``, its judge block read once: for the HTML
        report's case sections (:func:`evaluator.pages.report.report_view`'s ``panels``) and the
    daemon's case view."""
    judged, error = judged_or_why(report, source)
    if error is not None:
        unreadable = unreadable_panel(error, redact)
        return lambda _record: unreadable
    if judged is None:
        return lambda _record: None
    return lambda record: judge_panel(judged, record, labels=labels, redact=redact)

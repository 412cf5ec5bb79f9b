"""Calibration: how far the judge agrees with human labels, and whether it may be trusted.

Per check and per judge (model + prompt version): agreement, Cohen's kappa with a
bootstrap 95% interval, the confusion matrix and the disagreeing cases. A judge is
*calibrated* for a check when the interval's lower bound reaches ``floor`` over at least
``min_labels`` labels. Beside it: the coverage (labelled answers the judge's votes did not
leave uncertain), and the human ceiling: two reviewers' labels of the same answers (an
overlap sample), their kappa with its interval; a check whose reviewers disagree below
the floor is *ill-defined* (no judge can be calibrated on labels that disagree). Pure
functions; the command does the I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluator.border import printable
from evaluator.judge.checks import check_names
from evaluator.judge.labels import Label, judge_says, judge_uncertain
from evaluator.judge.record import JudgedRun

__all__ = [
    "DEFAULT_FLOOR",
    "DEFAULT_MIN_LABELS",
    "MIN_OVERLAP",
    "CheckCalibration",
    "Confusion",
    "ReviewerAgreement",
    "agreement_of",
    "bootstrap_intervals",
    "calibrate",
    "cohen_kappa",
    "confusion_of",
    "kappa_of",
    "render_markdown",
    "render_text",
    "reviewer_tables",
]

DEFAULT_FLOOR = 0.6
DEFAULT_MIN_LABELS = 50
_RESAMPLES = 2000


#: label pairs counted: ((human pass & judge pass, human pass & judge fail),
#: (human fail & judge pass, human fail & judge fail))
Confusion = tuple[tuple[int, int], tuple[int, int]]


def confusion_of(human: Sequence[bool], judge: Sequence[bool]) -> Confusion:
    """The 2x2 table of two binary raters' verdicts on the same items."""
    if len(human) != len(judge):
        raise ValueError("the two raters rated different numbers of items")
    pairs = list(zip(human, judge, strict=True))
    return (
        (sum(h and j for h, j in pairs), sum(h and not j for h, j in pairs)),
        (sum(j and not h for h, j in pairs), sum(not h and not j for h, j in pairs)),
    )


def agreement_of(confusion: Confusion) -> float | None:
    """The share of items both raters rated alike (None: no item)."""
    (tp, fn), (fp, tn) = confusion
    n = tp + fn + fp + tn
    return None if n == 0 else (tp + tn) / n


def kappa_of(confusion: Confusion) -> float | None:
    """Cohen's kappa of a 2x2 table; None when chance agreement is total (both raters gave
    one and the same verdict throughout: kappa is undefined) or there is no item."""
    (tp, fn), (fp, tn) = confusion
    n = tp + fn + fp + tn
    if n == 0:
        return None
    agree = (tp + tn) / n
    h1 = (tp + fn) / n
    j1 = (tp + fp) / n
    chance = h1 * j1 + (1 - h1) * (1 - j1)
    if chance >= 1:
        return None
    return (agree - chance) / (1 - chance)


def cohen_kappa(human: Sequence[bool], judge: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters (:func:`kappa_of` their table)."""
    return kappa_of(confusion_of(human, judge))


def bootstrap_intervals(
    confusion: Confusion, *, seed: int = 0, resamples: int = _RESAMPLES
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The 95% percentile bootstrap intervals of kappa and of the agreement, from the same
    resampled label pairs. Both None with fewer than two labels; kappa's None when no
    resample defines it.

    Resampling n label pairs with replacement is drawing the four cells of the table from a
    multinomial of n trials with the table's shares, so the intervals are a function of the
    table and the seed alone: a stored calibration is checked by computing them again from
    its own counts (:mod:`evaluator.judge.calibration_store`), in a millisecond whatever n.
    """
    (tp, fn), (fp, tn) = confusion
    n = tp + fn + fp + tn
    if n < 2:
        return None, None
    cells = np.asarray([tp, fn, fp, tn], dtype=float) / n
    draws = np.random.default_rng(seed).multinomial(n, cells, size=resamples) / n
    agree = draws[:, 0] + draws[:, 3]
    a_low, a_high = np.percentile(agree, [2.5, 97.5])
    agreement = (float(a_low), float(a_high))
    h1 = draws[:, 0] + draws[:, 1]
    j1 = draws[:, 0] + draws[:, 2]
    chance = h1 * j1 + (1 - h1) * (1 - j1)
    defined = chance < 1
    if not defined.any():
        return None, agreement
    kappas = (agree[defined] - chance[defined]) / (1 - chance[defined])
    low, high = np.percentile(kappas, [2.5, 97.5])
    return (float(low), float(high)), agreement


@dataclass(frozen=True, slots=True)
class CheckCalibration:
    check: str
    model: str
    prompt_version: str
    labels: int
    agreement: float | None
    kappa: float | None
    interval: tuple[float, float] | None
    #: the agreement's 95% bootstrap interval: the drift alert's band
    agreement_band: tuple[float, float] | None
    #: [[human yes & judge yes, human yes & judge no], [human no & judge yes, both no]]
    confusion: Confusion
    #: (case id, human verdict, judge verdict)
    disagreements: tuple[tuple[str, bool, bool], ...]
    calibrated: bool
    floor: float
    min_labels: int
    #: labelled answers whose votes split (no verdict to compare): coverage's complement
    uncertain: int = 0
    #: how far the reviewers agree with each other on this check (the human ceiling)
    reviewers: ReviewerAgreement | None = None

    @classmethod
    def derived(
        cls,
        identity: tuple[str, str, str],
        confusion: Confusion,
        disagreements: tuple[tuple[str, bool, bool], ...],
        *,
        floor: float,
        min_labels: int,
        uncertain: int = 0,
        reviewers: Confusion | None = None,
    ) -> CheckCalibration:
        """The calibration of one (model, prompt version, check) as its tables decide it:
        every figure and the verdict ``calibrated`` follow from the counts, the floor and the
        minimum alone (so a stored one is checked by deriving it again). A check whose
        reviewers disagree below the floor is ill-defined, and calibrates no judge."""
        model, version, check = identity
        interval, band = bootstrap_intervals(confusion)
        labels = sum(map(sum, confusion))
        human = None if reviewers is None else ReviewerAgreement.derived(reviewers, floor)
        trusted = interval is not None and interval[0] >= floor and labels >= min_labels
        return cls(
            check=check,
            model=model,
            prompt_version=version,
            labels=labels,
            agreement=agreement_of(confusion),
            kappa=kappa_of(confusion),
            interval=interval,
            agreement_band=band,
            confusion=confusion,
            disagreements=disagreements,
            calibrated=trusted and not (human is not None and human.ill_defined),
            floor=floor,
            min_labels=min_labels,
            uncertain=uncertain,
            reviewers=human,
        )

    @property
    def coverage(self) -> float | None:
        """The share of labelled answers the judge gave a verdict on (not uncertain)."""
        answered = self.labels + self.uncertain
        return None if answered == 0 else self.labels / answered

    @property
    def ill_defined(self) -> bool:
        """The reviewers disagree with each other below the floor: the check, not the
        judge, is what is wrong."""
        return self.reviewers is not None and self.reviewers.ill_defined

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "labels": self.labels,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "kappa_interval": list(self.interval) if self.interval else None,
            "agreement_interval": list(self.agreement_band) if self.agreement_band else None,
            "confusion": {
                "human_pass_judge_pass": self.confusion[0][0],
                "human_pass_judge_fail": self.confusion[0][1],
                "human_fail_judge_pass": self.confusion[1][0],
                "human_fail_judge_fail": self.confusion[1][1],
            },
            "disagreements": [
                {"case_id": c, "human": h, "judge": j} for c, h, j in self.disagreements
            ],
            "calibrated": self.calibrated,
            "floor": self.floor,
            "min_labels": self.min_labels,
            "uncertain": self.uncertain,
            "coverage": self.coverage,
            "reviewers": None if self.reviewers is None else self.reviewers.to_dict(),
        }


#: overlapping labels the reviewers need before their disagreement calls a check ill-defined
MIN_OVERLAP = 20


@dataclass(frozen=True, slots=True)
class ReviewerAgreement:
    """Two reviewers' labels of the same answers (an overlap sample) on one check: the
    first reviewer's verdict against the second's."""

    #: [[first pass & second pass, first pass & second fail], [first fail & second pass,
    #: both fail]]
    confusion: Confusion
    labels: int
    agreement: float | None
    kappa: float | None
    interval: tuple[float, float] | None
    #: kappa below the floor over at least MIN_OVERLAP labels
    ill_defined: bool

    @classmethod
    def derived(cls, confusion: Confusion, floor: float) -> ReviewerAgreement:
        """Every figure from the overlap's table and the floor alone."""
        labels = sum(map(sum, confusion))
        kappa = kappa_of(confusion)
        interval, _ = bootstrap_intervals(confusion)
        ill = kappa is not None and kappa < floor and labels >= MIN_OVERLAP
        return cls(confusion, labels, agreement_of(confusion), kappa, interval, ill)

    def to_dict(self) -> dict[str, Any]:
        (pp, pf), (fp, ff) = self.confusion
        return {
            "confusion": {
                "first_pass_second_pass": pp,
                "first_pass_second_fail": pf,
                "first_fail_second_pass": fp,
                "first_fail_second_fail": ff,
            },
            "labels": self.labels,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "kappa_interval": list(self.interval) if self.interval else None,
            "ill_defined": self.ill_defined,
        }


#: (model, prompt version, check) -> (case id, answer hash) -> (human, judge) verdicts
_Pairs = dict[tuple[str, str, str], dict[tuple[str, str], tuple[bool, bool]]]


def calibrate(
    labels: Mapping[tuple[str, str, str], Label],
    runs: Iterable[JudgedRun],
    *,
    floor: float = DEFAULT_FLOOR,
    min_labels: int = DEFAULT_MIN_LABELS,
    reviews: Mapping[tuple[str, str, str], Sequence[Label]] | None = None,
) -> list[CheckCalibration]:
    """One calibration per (judge, check) over the labels whose answer the runs judged, by
    judge and then in registry order of the checks; each with the labelled answers the
    judge's votes left uncertain, and, from ``reviews`` (every reviewer's labels), how far
    the reviewers agree with each other on the check.

    A label pairs with a verdict only for the same case *and* the same answer hash: a label
    of another answer says nothing about this one.
    """
    runs = list(runs)
    order = {name: i for i, name in enumerate(check_names())}
    pairs = _pairs(labels, runs)
    uncertain = _uncertain(labels, runs)
    ceilings = reviewer_tables(reviews or {})
    groups = sorted(set(pairs) | set(uncertain), key=lambda key: (*key[:2], order[key[2]]))
    return [
        _calibration(
            key,
            pairs.get(key, {}),
            floor,
            min_labels,
            uncertain=uncertain.get(key, 0),
            reviewers=ceilings.get(key[2]),
        )
        for key in groups
    ]


def _uncertain(
    labels: Mapping[tuple[str, str, str], Label], runs: Iterable[JudgedRun]
) -> dict[tuple[str, str, str], int]:
    """Per (model, prompt version, check): the labelled answers whose votes split."""
    out: dict[tuple[str, str, str], int] = {}
    for run in runs:
        for _, _, check in judge_uncertain(run.cases) & set(labels):
            group = (run.model, run.prompt_version, check)
            out[group] = out.get(group, 0) + 1
    return out


def reviewer_tables(
    reviews: Mapping[tuple[str, str, str], Sequence[Label]],
) -> dict[str, Confusion]:
    """Per check: the first reviewer's verdict against the second's on every answer both
    labelled (an overlap sample)."""
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    for (_, _, check), labels in reviews.items():
        if len(labels) > 1:
            pairs.setdefault(check, []).append((labels[0].verdict, labels[1].verdict))
    return {
        check: confusion_of([a for a, _ in got], [b for _, b in got])
        for check, got in pairs.items()
    }


def _pairs(labels: Mapping[tuple[str, str, str], Label], runs: Iterable[JudgedRun]) -> _Pairs:
    """Each judge's verdict beside the human label of the same case, answer and check."""
    pairs: _Pairs = {}
    for run in runs:
        for key, verdict in judge_says(run.cases).items():
            label = labels.get(key)
            if label is None:
                continue
            case_id, answer, check = key
            group = pairs.setdefault((run.model, run.prompt_version, check), {})
            group[(case_id, answer)] = (label.verdict, verdict)
    return pairs


def _calibration(
    identity: tuple[str, str, str],
    group: Mapping[tuple[str, str], tuple[bool, bool]],
    floor: float,
    min_labels: int,
    *,
    uncertain: int,
    reviewers: Confusion | None,
) -> CheckCalibration:
    """One judge's calibration for one check from its (human, judge) pairs."""
    items = sorted(group.items())
    human = [h for _, (h, _) in items]
    judge = [j for _, (_, j) in items]
    return CheckCalibration.derived(
        identity,
        confusion_of(human, judge),
        tuple((c, h, j) for (c, _), (h, j) in items if h != j),
        floor=floor,
        min_labels=min_labels,
        uncertain=uncertain,
        reviewers=reviewers,
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(value: tuple[float, float] | None) -> str:
    return "n/a" if value is None else f"[{value[0]:.3f}, {value[1]:.3f}]"


def render_text(results: Sequence[CheckCalibration], disagreements: int = 10) -> str:
    """The calibration for the terminal; names and case ids from the reports are
    :func:`~evaluator.border.printable` (one forged line is one escaped line)."""
    if not results:
        return "no label matches a judged answer of these reports"
    lines = []
    for r in results:
        lines.append(
            f"{r.check} ({printable(r.model)}, {printable(r.prompt_version)}): {_status(r)}; "
            f"{r.labels} labels, "
            f"agreement {_num(r.agreement)}, kappa {_num(r.kappa)} 95% {_interval(r.interval)} "
            f"(floor {r.floor} over >= {r.min_labels} labels)"
        )
        if r.uncertain:
            lines.append(
                f"  coverage {_num(r.coverage)}: {r.uncertain} labelled answer(s) uncertain "
                f"(the votes split), kappa above is on the {r.labels} certain ones"
            )
        if r.reviewers is not None:
            lines.append(_reviewers_line(r.reviewers))
        (tp, fn), (fp, tn) = r.confusion
        lines.append(f"  human pass: judge pass {tp}, judge fail {fn}")
        lines.append(f"  human fail: judge pass {fp}, judge fail {tn}")
        for case_id, human, judge in r.disagreements[:disagreements]:
            lines.append(f"  disagree {printable(case_id)}: human {_pf(human)}, judge {_pf(judge)}")
        more = len(r.disagreements) - disagreements
        if more > 0:
            lines.append(f"  ... and {more} more disagreement(s)")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """A name from a report in a Markdown table cell: one line, its pipes escaped."""
    return printable(text).replace("|", "\\|")


def _status(r: CheckCalibration) -> str:
    if r.ill_defined:
        return "ILL-DEFINED (the reviewers disagree with each other below the floor)"
    return "calibrated" if r.calibrated else "UNCALIBRATED"


def _reviewers_line(r: ReviewerAgreement) -> str:
    """The human ceiling: the reviewers against each other on the check's overlap."""
    return (
        f"  reviewers: {r.labels} answers labelled twice, agreement {_num(r.agreement)}, "
        f"kappa {_num(r.kappa)} 95% {_interval(r.interval)}"
        + (
            f" (under {MIN_OVERLAP}: too few to call the check ill-defined)"
            if r.labels < MIN_OVERLAP
            else ""
        )
    )


def _pf(value: bool) -> str:
    return "pass" if value else "fail"


def render_markdown(results: Sequence[CheckCalibration]) -> str:
    lines = [
        "| check | judge | prompts | labels | agreement | kappa | 95% interval | coverage "
        "| reviewers' kappa | calibrated |",
        "|---|---|---|---:|---:|---:|---|---:|---|---|",
    ]
    for r in results:
        human = (
            "n/a"
            if r.reviewers is None
            else (
                f"{_num(r.reviewers.kappa)} {_interval(r.reviewers.interval)} "
                f"({r.reviewers.labels})"
            )
        )
        verdict = "ill-defined" if r.ill_defined else ("yes" if r.calibrated else "no")
        lines.append(
            f"| {r.check} | {_cell(r.model)} | {_cell(r.prompt_version)} | {r.labels} "
            f"| {_num(r.agreement)} | {_num(r.kappa)} | {_interval(r.interval)} "
            f"| {_num(r.coverage)} | {human} | {verdict} |"
        )
    return "\n".join(lines)

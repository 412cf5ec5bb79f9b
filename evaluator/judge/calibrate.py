"""Calibration: how far the judge agrees with human labels, and whether it may be trusted.

Per check and per judge (model + prompt version): agreement, Cohen's kappa with a
bootstrap 95% interval, the confusion matrix and the disagreeing cases. A judge is
*calibrated* for a check when the interval's lower bound reaches ``floor`` over at least
``min_labels`` labels. Pure functions; the command does the I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluator.judge.checks import check_names
from evaluator.judge.labels import Label, judge_says
from evaluator.judge.record import JudgedRun

__all__ = [
    "DEFAULT_FLOOR",
    "DEFAULT_MIN_LABELS",
    "CheckCalibration",
    "bootstrap_intervals",
    "calibrate",
    "cohen_kappa",
    "render_markdown",
    "render_text",
]

DEFAULT_FLOOR = 0.6
DEFAULT_MIN_LABELS = 50
_RESAMPLES = 2000


def cohen_kappa(human: Sequence[bool], judge: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters; None when chance agreement is total (both
    raters gave one and the same verdict throughout: kappa is undefined)."""
    if len(human) != len(judge):
        raise ValueError("the two raters rated different numbers of items")
    n = len(human)
    if n == 0:
        return None
    agree = sum(h == j for h, j in zip(human, judge, strict=True)) / n
    h1 = sum(human) / n
    j1 = sum(judge) / n
    chance = h1 * j1 + (1 - h1) * (1 - j1)
    if chance >= 1:
        return None
    return (agree - chance) / (1 - chance)


def bootstrap_intervals(
    human: Sequence[bool], judge: Sequence[bool], *, seed: int = 0, resamples: int = _RESAMPLES
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The 95% percentile bootstrap intervals of kappa and of the agreement, from the same
    resampled label pairs (seeded: the same labels give the same intervals). Both None with
    fewer than two labels; kappa's None when no resample defines it."""
    n = len(human)
    if n < 2:
        return None, None
    a = np.asarray(human, dtype=float)
    b = np.asarray(judge, dtype=float)
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    ha, jb = a[picks], b[picks]
    agree = (ha == jb).mean(axis=1)
    a_low, a_high = np.percentile(agree, [2.5, 97.5])
    agreement = (float(a_low), float(a_high))
    h1, j1 = ha.mean(axis=1), jb.mean(axis=1)
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
    confusion: tuple[tuple[int, int], tuple[int, int]]
    #: (case id, human verdict, judge verdict)
    disagreements: tuple[tuple[str, bool, bool], ...]
    calibrated: bool
    floor: float
    min_labels: int

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
        }


#: (model, prompt version, check) -> (case id, answer hash) -> (human, judge) verdicts
_Pairs = dict[tuple[str, str, str], dict[tuple[str, str], tuple[bool, bool]]]


def calibrate(
    labels: Mapping[tuple[str, str, str], Label],
    runs: Iterable[JudgedRun],
    *,
    floor: float = DEFAULT_FLOOR,
    min_labels: int = DEFAULT_MIN_LABELS,
) -> list[CheckCalibration]:
    """One calibration per (judge, check) over the labels whose answer the runs judged, by
    judge and then in registry order of the checks.

    A label pairs with a verdict only for the same case *and* the same answer hash: a label
    of another answer says nothing about this one.
    """
    order = {name: i for i, name in enumerate(check_names())}
    groups = sorted(_pairs(labels, runs).items(), key=lambda kv: (*kv[0][:2], order[kv[0][2]]))
    return [
        _calibration(model, version, check, group, floor, min_labels)
        for (model, version, check), group in groups
    ]


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


def _confusion(pairs: Sequence[tuple[bool, bool]]) -> tuple[tuple[int, int], tuple[int, int]]:
    """[[human pass & judge pass, human pass & judge fail], [human fail & judge pass, both
    fail]]."""
    return (
        (sum(h and j for h, j in pairs), sum(h and not j for h, j in pairs)),
        (sum(j and not h for h, j in pairs), sum(not h and not j for h, j in pairs)),
    )


def _calibration(
    model: str,
    version: str,
    check: str,
    group: Mapping[tuple[str, str], tuple[bool, bool]],
    floor: float,
    min_labels: int,
) -> CheckCalibration:
    """One judge's calibration for one check from its (human, judge) pairs."""
    items = sorted(group.items())
    human = [h for _, (h, _) in items]
    judge = [j for _, (_, j) in items]
    pairs = list(zip(human, judge, strict=True))
    interval, band = bootstrap_intervals(human, judge)
    return CheckCalibration(
        check=check,
        model=model,
        prompt_version=version,
        labels=len(items),
        agreement=sum(h == j for h, j in pairs) / len(items),
        kappa=cohen_kappa(human, judge),
        interval=interval,
        agreement_band=band,
        confusion=_confusion(pairs),
        disagreements=tuple((c, h, j) for (c, _), (h, j) in items if h != j),
        calibrated=interval is not None and interval[0] >= floor and len(items) >= min_labels,
        floor=floor,
        min_labels=min_labels,
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(value: tuple[float, float] | None) -> str:
    return "n/a" if value is None else f"[{value[0]:.3f}, {value[1]:.3f}]"


def render_text(results: Sequence[CheckCalibration], disagreements: int = 10) -> str:
    if not results:
        return "no label matches a judged answer of these reports"
    lines = []
    for r in results:
        status = "calibrated" if r.calibrated else "UNCALIBRATED"
        lines.append(
            f"{r.check} ({r.model}, {r.prompt_version}): {status}; {r.labels} labels, "
            f"agreement {_num(r.agreement)}, kappa {_num(r.kappa)} 95% {_interval(r.interval)} "
            f"(floor {r.floor} over >= {r.min_labels} labels)"
        )
        (tp, fn), (fp, tn) = r.confusion
        lines.append(f"  human pass: judge pass {tp}, judge fail {fn}")
        lines.append(f"  human fail: judge pass {fp}, judge fail {tn}")
        for case_id, human, judge in r.disagreements[:disagreements]:
            lines.append(f"  disagree {case_id}: human {_pf(human)}, judge {_pf(judge)}")
        more = len(r.disagreements) - disagreements
        if more > 0:
            lines.append(f"  ... and {more} more disagreement(s)")
    return "\n".join(lines)


def _pf(value: bool) -> str:
    return "pass" if value else "fail"


def render_markdown(results: Sequence[CheckCalibration]) -> str:
    lines = [
        "| check | judge | prompts | labels | agreement | kappa | 95% interval | calibrated |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.check} | {r.model} | {r.prompt_version} | {r.labels} | {_num(r.agreement)} "
            f"| {_num(r.kappa)} | {_interval(r.interval)} | {'yes' if r.calibrated else 'no'} |"
        )
    return "\n".join(lines)

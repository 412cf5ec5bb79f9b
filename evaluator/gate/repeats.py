"""The gate with repeats and a quarantine: per-case pass rates judged by an exact test.

With ``--repeat N`` a case has a pass count out of N runs (a report without repeats counts
as one run). A case *regressed* only when its pass rate dropped by more than N runs can
tell from chance: a one-sided Fisher exact test per case, at the level Tarone's correction
gives for the cases that could reach it (so noise flags any case at all with chance at most
``alpha``). 5/5 -> 0/5 is p = 0.004; 5/5 -> 3/5 is p = 0.22, not a regression.

The hard rules judge, for a report with repeats, a summary of each case's mean over its runs
(:func:`summary_over_rounds`), not of its first round; the output says so.

Cases that passed some runs and failed others, in either report, are *flaky*: listed apart.
A gates file can leave named cases (a quarantine list) or every flaky case out of the hard
rules; the output always names what was left out::

    [quarantine]
    cases = ["zh-refund-arrival"]   # left out by name
    flaky = true                     # and every case flaky in either report's repeats, or
                                     # classed flaky by the history store
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from msgspec import structs

from evaluator.errors import ConfigError
from evaluator.exact import fisher_drop_min_p, fisher_drop_p, tarone_threshold
from evaluator.models import CaseRecord, CaseScores
from evaluator.repeat_summary import summarise_repeats
from evaluator.report import RunReport
from evaluator.summary import Summary, summarise

__all__ = [
    "ALPHA",
    "CaseRegression",
    "Quarantine",
    "RepeatVerdict",
    "flaky_ids",
    "judge_repeats",
    "leave_out",
    "parse_quarantine",
    "summary_over_rounds",
]

#: Chance, at most, that noise alone makes the gate call some case regressed.
ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class Quarantine:
    """What the gates file leaves out of the hard rules."""

    cases: tuple[str, ...] = ()
    flaky: bool = False
    #: cases the history store classes flaky (the daemon's window), left out with ``flaky``
    classed_flaky: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.cases) or self.flaky


def parse_quarantine(data: Mapping[str, object], source: str) -> Quarantine:
    """The ``[quarantine]`` table of a decoded gates file (absent: nothing left out); read
    with the rest of the file by :func:`evaluator.gate.rules.read_gates`.

    Raises:
        ConfigError: naming the file and the bad key.
    """
    table = data.get("quarantine")
    if table is None:
        return Quarantine()
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: quarantine: expected a table")
    for key in table:
        if key not in ("cases", "flaky"):
            raise ConfigError(f"{source}: quarantine.{key}: unknown key (known: cases, flaky)")
    cases = table.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, str) and c for c in cases):
        raise ConfigError(f"{source}: quarantine.cases: expected a list of case ids")
    flaky = table.get("flaky", False)
    if not isinstance(flaky, bool):
        raise ConfigError(f"{source}: quarantine.flaky: expected true or false")
    return Quarantine(tuple(dict.fromkeys(cases)), flaky)


@dataclass(frozen=True, slots=True)
class CaseRegression:
    """One case's pass counts on both sides and its exact p-value."""

    id: str
    baseline_passes: int
    baseline_runs: int
    candidate_passes: int
    candidate_runs: int
    p_value: float

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "baseline": f"{self.baseline_passes}/{self.baseline_runs}",
            "candidate": f"{self.candidate_passes}/{self.candidate_runs}",
            "p_value": self.p_value,
        }


@dataclass(frozen=True, slots=True)
class RepeatVerdict:
    """Per-case judgement with repeats, and what the quarantine left out."""

    baseline_runs: int
    candidate_runs: int
    alpha: float
    threshold: float
    regressed: tuple[CaseRegression, ...]
    flaky: tuple[str, ...]
    left_out: Mapping[str, str] = field(default_factory=dict)
    pass_hat_k: Mapping[int, float | None] = field(default_factory=dict)
    #: whether the rules judged each side's case means over its runs (False: its one run,
    #: or a report written before the means were kept)
    baseline_means: bool = False
    candidate_means: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "baseline_runs_per_case": self.baseline_runs,
            "candidate_runs_per_case": self.candidate_runs,
            "alpha": self.alpha,
            "threshold": self.threshold,
            "regressed": [r.to_dict() for r in self.regressed],
            "flaky": list(self.flaky),
            "left_out": dict(self.left_out),
            "candidate_pass_hat_k": {str(k): v for k, v in self.pass_hat_k.items()},
            "rules_judge_case_means": {
                "baseline": self.baseline_means,
                "candidate": self.candidate_means,
            },
        }


def _averaged(report: RunReport) -> bool:
    """Whether the report's repeats give each case's means over its runs."""
    repeats = report.repeats
    return repeats is not None and repeats.n > 1 and any(c.means for c in repeats.cases)


def summary_over_rounds(report: RunReport, cases: Sequence[CaseRecord]) -> Summary:
    """The summary of ``cases`` (of ``report``) with each scored case's quality scores
    replaced by their means over the report's runs: what the hard rules judge with repeats.

    A case that failed its first run stays failed (the error rate and latency are the first
    run's); a report without means (one run, or written before they were kept) gives the
    first run's summary.
    """
    if not _averaged(report):
        return report.summary if len(cases) == len(report.cases) else summarise(cases)
    assert report.repeats is not None
    means = {c.id: c.means for c in report.repeats.cases if c.means}
    # a mean stands where the scores hold the run's value (a flag's mean is a fraction:
    # the summary adds flags as 1.0 and 0.0, so it adds their means the same way)
    averaged = [
        structs.replace(r, outcome=structs.replace(r.outcome, **cast(dict[str, Any], means[r.id])))
        if isinstance(r.outcome, CaseScores) and r.id in means
        else r
        for r in cases
    ]
    return summarise(averaged)


def _counts(report: RunReport) -> tuple[int, dict[str, tuple[int, int]]]:
    repeats = report.repeats or summarise_repeats([report.cases])
    return repeats.n, {c.id: (c.passes, c.judged) for c in repeats.cases}


def flaky_ids(baseline: RunReport, candidate: RunReport) -> tuple[str, ...]:
    """Cases that both passed and failed within one report's repeats, either report."""
    found: dict[str, None] = {}
    for report in (baseline, candidate):
        if report.repeats is not None:
            found.update(dict.fromkeys(report.repeats.flaky_ids))
    return tuple(found)


def leave_out(
    baseline: RunReport, candidate: RunReport, quarantine: Quarantine
) -> tuple[RunReport, RunReport, dict[str, str]]:
    """Both reports without the quarantined (and, if asked, flaky) cases, summaries
    recomputed; and each left-out id with its reason."""
    reasons: dict[str, str] = dict.fromkeys(quarantine.cases, "quarantine")
    if quarantine.flaky:
        for cid in flaky_ids(baseline, candidate):
            reasons.setdefault(cid, "flaky")
        for cid in quarantine.classed_flaky:
            reasons.setdefault(cid, "flaky in history")
    if not reasons:
        return baseline, candidate, {}

    def without(report: RunReport) -> RunReport:
        kept = tuple(c for c in report.cases if c.id not in reasons)
        repeats = report.repeats
        if repeats is not None:
            repeats = replace(repeats, cases=tuple(c for c in repeats.cases if c.id not in reasons))
        return structs.replace(report, cases=kept, summary=summarise(kept), repeats=repeats)

    present = {c.id for c in baseline.cases} | {c.id for c in candidate.cases}
    listed = {cid: why for cid, why in reasons.items() if cid in present}
    return without(baseline), without(candidate), listed


def judge_repeats(
    baseline: RunReport,
    candidate: RunReport,
    left_out: Mapping[str, str],
    flaky: tuple[str, ...],
) -> RepeatVerdict:
    """Which shared cases regressed beyond what the repeats can tell apart.

    Args:
        baseline, candidate: the reports, left-out cases already removed.
        left_out: what :func:`leave_out` removed, and why.
        flaky: :func:`flaky_ids` of the reports before anything was left out.
    """
    nb, base = _counts(baseline)
    nc, cand = _counts(candidate)
    rows = [
        (cid, *base[cid], *cand[cid])
        for cid in cand
        if cid in base and base[cid][1] and cand[cid][1]
    ]
    threshold, _ = tarone_threshold(
        [fisher_drop_min_p(bp, bt, cp, ct) for _, bp, bt, cp, ct in rows], ALPHA
    )
    regressed = tuple(
        CaseRegression(cid, bp, bt, cp, ct, p)
        for cid, bp, bt, cp, ct in rows
        if (p := fisher_drop_p(bp, bt, cp, ct)) <= threshold
    )
    hats = {}
    if candidate.repeats is not None:
        hats = {k: candidate.repeats.pass_hat_k(k) for k in range(1, candidate.repeats.n + 1)}
    return RepeatVerdict(
        baseline_means=_averaged(baseline),
        candidate_means=_averaged(candidate),
        baseline_runs=nb,
        candidate_runs=nc,
        alpha=ALPHA,
        threshold=threshold,
        regressed=regressed,
        flaky=flaky,
        left_out=dict(left_out),
        pass_hat_k=hats,
    )

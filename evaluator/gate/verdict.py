"""The gate's verdict on a candidate report against a baseline: :func:`evaluate_gate`.

Pure: two reports and the rules in, a :class:`GateResult` out; no files, no network,
nothing printed. The CLI renders the result; the daemon calls it after each complete run
(with ``with_intervals=False`` it never imports numpy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evaluator.errors import ExitCode
from evaluator.gate.compare import Alignment, CaseDiff, align, diff_cases
from evaluator.gate.diagnosis import Finding, diagnose
from evaluator.gate.repeats import (
    Quarantine,
    RepeatVerdict,
    flaky_ids,
    judge_repeats,
    leave_out,
)
from evaluator.gate.rules import (
    DEFAULT_RULES,
    Rule,
    RuleResult,
    evaluate_rules,
    latency_limits,
)
from evaluator.gate.stats import Interval, PairedDifference, paired_differences, paired_intervals
from evaluator.judge.gating import JudgedGate
from evaluator.report import RunReport
from evaluator.summary import Summary

__all__ = ["GateResult", "Verdict", "evaluate_gate"]

#: what the gate decided: every rule passed, one failed, or a hard judged rule could not be
#: applied (nothing decided: the command's error)
Verdict = Literal["pass", "fail", "refused"]
_EXIT_CODES: Mapping[Verdict, int] = {
    "pass": ExitCode.OK,
    "fail": ExitCode.GATE_FAILED,
    "refused": ExitCode.ERROR,
}


@dataclass(frozen=True, slots=True)
class GateResult:
    """Everything the gate decided, and why.

    Example::

        result = evaluate_gate(read_report("baseline.json"), report, rules)
        if not result.passed:
            for r in result.failures:
                print(r.message)
    """

    #: the reports judged
    baseline: RunReport
    candidate: RunReport
    rules: tuple[RuleResult, ...]
    alignment: Alignment
    case_diff: CaseDiff
    diagnosis: tuple[Finding, ...]
    significance: bool = False
    intervals: Mapping[str, Interval] = field(default_factory=dict)
    #: per-case judgement with repeats, and the cases a quarantine left out (None: neither)
    repeats: RepeatVerdict | None = None
    #: the paired mean differences (always computed: exact and linear in cases)
    differences: Mapping[str, PairedDifference] = field(default_factory=dict)
    #: the gates file's judged rules on the reports' judge blocks (None: it has none)
    judged: JudgedGate | None = None

    @property
    def passed(self) -> bool:
        """Every applicable rule passed (the judged ones too), the candidate has every
        baseline case, and no case regressed beyond what the repeats can tell apart."""
        regressed = self.repeats is not None and bool(self.repeats.regressed)
        judged = self.judged is None or not (self.judged.failed or self.judged.refused)
        return (
            not self.alignment.missing_ids
            and all(r.passed for r in self.rules)
            and not regressed
            and judged
        )

    @property
    def refused(self) -> tuple[str, ...]:
        """Why a hard judged rule could not be applied (no calibration, another judge)."""
        return self.judged.refused if self.judged is not None else ()

    @property
    def verdict(self) -> Verdict:
        """``pass``, ``fail``, or ``refused``: what every output says and the exit code is."""
        if self.refused:
            return "refused"
        return "pass" if self.passed else "fail"

    @property
    def exit_code(self) -> int:
        """The process's exit code for :attr:`verdict`: 0, 2, or 1 when refused."""
        return _EXIT_CODES[self.verdict]

    @property
    def failures(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.rules if not r.passed)

    @property
    def missing_ids(self) -> tuple[str, ...]:
        """Baseline cases the candidate lacks (each fails the gate)."""
        return self.alignment.missing_ids

    @property
    def baseline_summary(self) -> Summary:
        """The summary the rules judged (recomputed over shared cases on a dataset change)."""
        return self.alignment.baseline_summary

    @property
    def candidate_summary(self) -> Summary:
        return self.alignment.candidate_summary


def _judged_reports(
    baseline: RunReport, candidate: RunReport, quarantine: Quarantine
) -> tuple[RunReport, RunReport, RepeatVerdict | None]:
    """The reports the rules judge (the quarantine's cases left out) and the per-case
    verdict of their repeats; without repeats or a quarantine, the reports as they are."""
    if baseline.repeats is None and candidate.repeats is None and not quarantine.active:
        return baseline, candidate, None
    flaky = tuple(dict.fromkeys((*flaky_ids(baseline, candidate), *quarantine.classed_flaky)))
    judged_baseline, judged_candidate, left_out = leave_out(baseline, candidate, quarantine)
    repeats = judge_repeats(judged_baseline, judged_candidate, left_out, flaky)
    return judged_baseline, judged_candidate, repeats


def evaluate_gate(
    baseline: RunReport,
    candidate: RunReport,
    rules: Sequence[Rule] = DEFAULT_RULES,
    *,
    allow_dataset_change: bool = False,
    significance: bool = False,
    with_intervals: bool = True,
    quarantine: Quarantine | None = None,
) -> GateResult:
    """Judge ``candidate`` against ``baseline``.

    Args:
        baseline: the approved report.
        candidate: the report to judge.
        rules: the gate rules (a :class:`evaluator.gate.rules.GatesFile`'s).
        allow_dataset_change: compare reports of different golden sets on their shared cases.
        significance: a drop rule fails only when its paired confidence interval lies
            entirely beyond the allowance (needs ``with_intervals``).
        with_intervals: compute the paired bootstrap intervals (numpy, 2,000 resamples);
            ``evaluator gate`` does only for ``--significance``, the daemon never. The
            paired mean differences are computed either way.
        quarantine: cases (by name, or every flaky one) left out of the hard rules; the
            result names them (``result.repeats.left_out``).

    Returns:
        The result; ``result.passed`` is the verdict.

    Raises:
        GateError: the reports are not comparable (golden set or K).
        ValueError: ``significance`` without ``with_intervals``.
    """
    if significance and not with_intervals:
        raise ValueError("significance=True needs with_intervals=True")
    judged_baseline, judged_candidate, repeats = _judged_reports(
        baseline, candidate, quarantine or Quarantine()
    )
    alignment = align(judged_baseline, judged_candidate, allow_dataset_change=allow_dataset_change)
    intervals: dict[str, Interval] = {}
    if with_intervals:
        intervals = paired_intervals(alignment.baseline_cases, alignment.candidate_cases)
    differences = paired_differences(alignment.baseline_cases, alignment.candidate_cases)
    growth, floor = latency_limits(rules)
    results = evaluate_rules(
        rules,
        alignment.baseline_summary,
        alignment.candidate_summary,
        intervals=intervals,
        significance=significance,
    )
    return GateResult(
        baseline=baseline,
        candidate=candidate,
        rules=results,
        alignment=alignment,
        case_diff=diff_cases(alignment),
        diagnosis=diagnose(
            alignment.baseline_summary,
            alignment.candidate_summary,
            intervals or differences,
            latency_growth=growth,
            latency_floor=floor,
        ),
        significance=significance,
        intervals=intervals,
        repeats=repeats,
        differences=differences,
    )

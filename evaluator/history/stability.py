"""Per-case stability over a window of recent runs: pass rates, flips and a class.

Pure functions: a case's outcomes (oldest first) in, a :class:`CaseStability` out.
The class reads the case's verdict (:attr:`CaseOutcome.passed`) in each run where it was
scored; runs where it failed with an error are left out (an outage is not a quality
verdict) and counted apart.

Newly failing means failing now and passing in the drift test's reference window: a case
that failed before the window, passed in its first runs and fails again (an earlier
incident, a degradation that happened to fix it, has ended) has flipped twice, and is
flaky rather than newly failing. So the runs before the window that the drift test reads
(``earlier``) are read too, for that class only.

=================  ==========================================================
class              the scored verdicts in the window
=================  ==========================================================
``stable_pass``    every one passed
``stable_fail``    every one failed
``newly_failing``  passed, then failed from some run on (one flip, to fail), and
                   failed in none of the earlier runs the drift test reads
``recovered``      failed, then passed from some run on (one flip, to pass)
``flaky``          two flips or more (the earlier runs included)
``insufficient``   fewer than :data:`MIN_RUNS` scored runs so far
=================  ==========================================================
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum

import msgspec

from evaluator.history.outcome import CaseOutcome

__all__ = [
    "MIN_RUNS",
    "CaseStability",
    "Stability",
    "case_stability",
    "class_counts",
    "classify",
    "stabilities",
]

#: Fewer scored runs than this say nothing about stability.
MIN_RUNS = 3


class Stability(StrEnum):
    STABLE_PASS = "stable_pass"
    STABLE_FAIL = "stable_fail"
    FLAKY = "flaky"
    NEWLY_FAILING = "newly_failing"
    RECOVERED = "recovered"
    INSUFFICIENT = "insufficient"


def _flips(verdicts: Sequence[bool]) -> int:
    return sum(1 for a, b in itertools.pairwise(verdicts) if a != b)


def classify(verdicts: Sequence[bool], min_runs: int = MIN_RUNS) -> Stability:
    """The class of a case from its scored verdicts, oldest first.

    Examples: ``[True] * 10`` is stable_pass; ``[True] * 9 + [False]`` newly_failing;
    ``[True, False] * 5`` flaky.
    """
    if len(verdicts) < min_runs:
        return Stability.INSUFFICIENT
    flips = _flips(verdicts)
    if flips == 0:
        return Stability.STABLE_PASS if verdicts[-1] else Stability.STABLE_FAIL
    if flips == 1:
        return Stability.RECOVERED if verdicts[-1] else Stability.NEWLY_FAILING
    return Stability.FLAKY


def _rate(values: Iterable[bool | None]) -> tuple[float | None, int]:
    seen = [v for v in values if v is not None]
    return (sum(seen) / len(seen) if seen else None), len(seen)


# gc=False, as the report's records (see evaluator.models): strings, numbers and tuples of
# those, no cycle. A daemon with 100 jobs of 1,000 cases holds 30,000 of each; tracked, they
# were most of what each full collection walked (20-28 ms with the event loop stopped).
class CaseStability(msgspec.Struct, frozen=True, gc=False):
    """One case over the window: its class, pass rates, flips and the run verdicts."""

    case_id: str
    stability: Stability
    runs: int
    scored_runs: int
    errors: int
    pass_rate: float | None
    answer_pass_rate: float | None
    hit_rate: float | None
    flips: int
    last: bool | None
    verdicts: tuple[bool | None, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.case_id,
            "class": self.stability.value,
            "runs": self.runs,
            "scored_runs": self.scored_runs,
            "errors": self.errors,
            "pass_rate": self.pass_rate,
            "answer_pass_rate": self.answer_pass_rate,
            "hit_rate": self.hit_rate,
            "flips": self.flips,
            "last": self.last,
            # oldest first; null: the case failed with an error in that run
            "verdicts": list(self.verdicts),
        }


def _class_of(scored: Sequence[bool], min_runs: int, earlier: Sequence[CaseOutcome]) -> Stability:
    """The window's class, except that a case newly failing which also failed in the drift
    test's runs before the window is flaky: back where it was, not new trouble."""
    stability = classify(scored, min_runs)
    if stability is Stability.NEWLY_FAILING and any(o.passed is False for o in earlier):
        return Stability.FLAKY
    return stability


def case_stability(
    case_id: str,
    window: Sequence[CaseOutcome],
    min_runs: int = MIN_RUNS,
    earlier: Sequence[CaseOutcome] = (),
) -> CaseStability:
    """Stability of one case over ``window`` (its outcomes, oldest first); ``earlier``: its
    outcomes in the drift test's runs before the window."""
    verdicts = tuple(o.passed for o in window)
    scored = [v for v in verdicts if v is not None]
    stability = _class_of(scored, min_runs, earlier)
    pass_rate, _ = _rate(scored)
    answer_rate, _ = _rate(o.answer for o in window)
    hit_rate, _ = _rate(o.hit for o in window)
    return CaseStability(
        case_id=case_id,
        stability=stability,
        runs=len(window),
        scored_runs=len(scored),
        errors=sum(1 for o in window if o.error_kind is not None),
        pass_rate=pass_rate,
        answer_pass_rate=answer_rate,
        hit_rate=hit_rate,
        flips=_flips(scored),
        last=scored[-1] if scored else None,
        verdicts=verdicts,
    )


def stabilities(
    windows: Mapping[str, Sequence[CaseOutcome]],
    min_runs: int = MIN_RUNS,
    earlier: Mapping[str, Sequence[CaseOutcome]] | None = None,
) -> list[CaseStability]:
    """Every case's stability, by case id (``earlier``: each case's outcomes in the drift
    test's runs before the window)."""
    before = earlier or {}
    return [
        case_stability(cid, w, min_runs, before.get(cid, ())) for cid, w in sorted(windows.items())
    ]


def class_counts(cases: Iterable[CaseStability]) -> dict[Stability, int]:
    """How many cases are in each class (every class present, zeros included)."""
    counts = dict.fromkeys(Stability, 0)
    for case in cases:
        counts[case.stability] += 1
    return counts

"""Stability classes over a window, on worked examples."""

from __future__ import annotations

import pytest

from evaluator.history.outcome import CaseOutcome
from evaluator.history.stability import Stability, case_stability, class_counts, classify

P, F = True, False


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([P] * 10, Stability.STABLE_PASS),
        ([F] * 10, Stability.STABLE_FAIL),
        ([P] * 9 + [F], Stability.NEWLY_FAILING),
        ([P] * 5 + [F] * 5, Stability.NEWLY_FAILING),
        ([F] * 7 + [P] * 3, Stability.RECOVERED),
        ([P, F] * 5, Stability.FLAKY),
        ([P, P, F, P, P, P, P, P, P, P], Stability.FLAKY),  # failed once, then passed again
        ([P, F], Stability.INSUFFICIENT),
        ([], Stability.INSUFFICIENT),
    ],
)
def test_classes(verdicts: list[bool], expected: Stability) -> None:
    """Each window of verdicts falls in its stability class."""
    assert classify(verdicts) is expected


def _outcome(
    i: int, answer: bool | None, hit: bool | None, error: str | None = None
) -> CaseOutcome:
    return CaseOutcome(f"r{i}", float(i), answer, hit, 1.0 if hit else 0.0, None, error)


def test_errors_are_neither_pass_nor_fail() -> None:
    """Failed runs are neither passes nor fails: they leave a case's class alone and are counted
    apart."""
    window = [_outcome(i, True, True) for i in range(8)] + [
        _outcome(8, None, None, "timeout"),
        _outcome(9, None, None, "timeout"),
    ]
    s = case_stability("c", window)
    assert s.stability is Stability.STABLE_PASS
    assert (s.runs, s.scored_runs, s.errors, s.pass_rate) == (10, 8, 2, 1.0)
    assert s.verdicts[-1] is None


def test_retrieval_only_case_is_judged_on_hit_and_rates_are_separate() -> None:
    """A case without an answer check is judged on its retrieval hit; the hit and answer rates are
    kept apart."""
    window = [_outcome(i, None, i % 2 == 0) for i in range(10)]
    s = case_stability("c", window)
    assert s.stability is Stability.FLAKY
    assert s.answer_pass_rate is None
    assert s.hit_rate == 0.5
    assert s.flips == 9


def test_answer_is_the_verdict_when_checked() -> None:
    """When the answer is checked it is the verdict, even while retrieval hits."""
    # retrieval always hits, the answer broke at the last two runs
    window = [_outcome(i, i < 8, True) for i in range(10)]
    s = case_stability("c", window)
    assert s.stability is Stability.NEWLY_FAILING
    assert (s.answer_pass_rate, s.hit_rate, s.last) == (0.8, 1.0, False)


def test_counts_include_every_class() -> None:
    """The class counts name every class, zero where no case is in it."""
    counts = class_counts([case_stability("a", [_outcome(i, True, True) for i in range(3)])])
    assert counts[Stability.STABLE_PASS] == 1
    assert set(counts) == set(Stability)
    assert sum(counts.values()) == 1


@pytest.mark.parametrize(
    ("earlier", "expected"),
    [
        ([], Stability.NEWLY_FAILING),
        ([P, P, P], Stability.NEWLY_FAILING),
        ([P, None, P], Stability.NEWLY_FAILING),  # an errored run is no verdict
        ([F, F, F], Stability.FLAKY),  # passed only during an earlier incident
        ([F, P, P], Stability.FLAKY),
    ],
)
def test_newly_failing_reads_the_drift_tests_earlier_runs(
    earlier: list[bool | None], expected: Stability
) -> None:
    """A window of passes then fails is newly failing only if the case failed in none of the
    drift test's runs before the window: else it is back where it was, and flaky."""
    window = [_outcome(i, v, v) for i, v in enumerate([P, P, F, F, F, F], start=len(earlier))]
    before = [
        _outcome(i, v, v, None if v is not None else "timeout") for i, v in enumerate(earlier)
    ]
    assert expected is case_stability("c", window, earlier=before).stability

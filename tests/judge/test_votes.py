"""Repeated verdicts decided by majority, and Krippendorff's alpha between the votes,
against a published worked example and an independent implementation."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import krippendorff
import numpy as np
import pytest
from hypothesis import given

from evaluator.judge.agreement import krippendorff_alpha, vote_figures
from evaluator.judge.record import CaseJudgement, CheckOutcome, Vote
from evaluator.judge.votes import decide, vote_category


def _vote(verdict: bool | None, sample: int = 0, member: str = "m") -> Vote:
    """A fact-support vote passing (True), failing (False) or failing to answer (None)."""
    if verdict is None:
        outcome = CheckOutcome("fact_support", "error", error_kind="judge_timeout", error="late")
    else:
        values = {"fact_recall": 1.0 if verdict else 0.0, "answer_correct": verdict}
        outcome = CheckOutcome("fact_support", "judged", values, reason=f"said {verdict}")
    return Vote(member, sample, outcome)


def _decided(*verdicts: bool | None) -> CheckOutcome:
    """The outcome the votes ``verdicts`` decide (sample i gives the i-th)."""
    return decide("fact_support", [_vote(v, i) for i, v in enumerate(verdicts)])


def test_one_vote_is_the_outcome_as_a_single_call_was() -> None:
    """A single vote is the outcome itself, with no votes kept."""
    vote = _vote(True)
    assert vote.outcome == decide("fact_support", [vote])


@pytest.mark.parametrize(
    ("verdicts", "status", "verdict"),
    [
        ((True, True, False), "judged", "pass"),
        ((False, True, False), "judged", "fail"),
        ((True, False), "uncertain", "uncertain"),
        ((True, None, False), "uncertain", "uncertain"),
        ((True, None, None), "error", "error"),
        ((None, None), "error", "error"),
        ((True, True, None), "judged", "pass"),
    ],
)
def test_the_strict_majority_of_every_vote_decides(
    verdicts: tuple[bool | None, ...], status: str, verdict: str
) -> None:
    """More than half of the votes asked decide; a split is uncertain; agreeing verdicts that
    the failed calls kept short of a majority are the failure."""
    outcome = _decided(*verdicts)
    assert (status, verdict) == (outcome.status, vote_category(outcome))
    assert len(verdicts) == len(outcome.votes)


def test_a_majority_takes_the_values_and_reason_of_its_first_vote() -> None:
    """The outcome of a 2-1 majority carries the first majority vote's values and reason."""
    outcome = _decided(False, True, True)
    assert ({"fact_recall": 1.0, "answer_correct": True}, "said True") == (
        dict(outcome.values),
        outcome.reason,
    )


def test_an_uncertain_outcome_is_neither_pass_nor_fail() -> None:
    """A split vote has no values: it is out of the judged averages and states no verdict."""
    outcome = _decided(True, False)
    assert ("uncertain", {}) == (outcome.status, dict(outcome.values))


def test_votes_skipped_by_the_budget_leave_a_skipped_outcome() -> None:
    """One verdict and two votes the budget skipped: skipped, not a verdict of one vote in three."""
    skipped = CheckOutcome("fact_support", "skipped")
    votes = [_vote(True, 0), Vote("m", 1, skipped), Vote("m", 2, skipped)]
    assert "skipped" == decide("fact_support", votes).status


def test_no_vote_is_an_error() -> None:
    """Deciding by no vote at all is a programming error, said so."""
    with pytest.raises(ValueError, match="no vote"):
        decide("fact_support", [])


def test_alpha_reproduces_krippendorffs_published_nominal_example() -> None:
    """Krippendorff (2011), four observers on twelve units with missing values: alpha 0.743."""
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = list(zip(*observers, strict=True))
    alpha = krippendorff_alpha(units)
    assert alpha is not None
    assert 0.743 == round(alpha, 3)


@given(
    st.lists(
        st.lists(st.sampled_from(["pass", "fail", "none", None]), min_size=3, max_size=3),
        min_size=1,
        max_size=30,
    )
)
def test_alpha_equals_the_krippendorff_package(units: list[list[str | None]]) -> None:
    """On any ratings of three raters (missing ones included), alpha equals the krippendorff
    package's nominal alpha, and is None exactly where that one is undefined."""
    codes = {"pass": 0.0, "fail": 1.0, "none": 2.0, None: np.nan}
    matrix = np.array([[codes[v] for v in unit] for unit in units]).T
    ours = krippendorff_alpha(units)
    pairable = [[v for v in u if v is not None] for u in units]
    values = {v for u in pairable if len(u) > 1 for v in u}
    if len(values) < 2:
        assert ours is None
        return
    theirs = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert ours is not None and math.isclose(theirs, ours, abs_tol=1e-9)


def test_alpha_is_undefined_without_a_pairable_unit_or_a_second_value() -> None:
    """One rating per unit, or every rating the same: nothing to measure disagreement by."""
    assert (None, None) == (
        krippendorff_alpha([["pass", None], ["fail"]]),
        krippendorff_alpha([["pass", "pass"], ["pass", "pass", "pass"]]),
    )


def test_vote_figures_count_uncertain_outcomes_per_check() -> None:
    """A run's figures per check: decided and uncertain outcomes, their ratio, and alpha."""
    cases = (
        CaseJudgement("a", "h", (_decided(True, True, True),)),
        CaseJudgement("b", "h", (_decided(True, False),)),
        CaseJudgement("c", "h", (_decided(False, False, True),)),
        CaseJudgement("d", "h", (CheckOutcome("refusal", "uncertain"),)),
    )
    figures = vote_figures(cases)
    fact = figures["fact_support"]
    assert (2, 1, 1 / 3) == (fact.decided, fact.uncertain, fact.uncertain_ratio)
    expected = krippendorff_alpha([["pass"] * 3, ["pass", "fail"], ["fail", "fail", "pass"]])
    assert expected == fact.alpha
    assert (0, 0, 0.0, None) == (
        figures["groundedness"].decided,
        figures["groundedness"].uncertain,
        figures["groundedness"].uncertain_ratio,
        figures["groundedness"].alpha,
    )

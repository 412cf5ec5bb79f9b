"""The exact tests against worked examples and against scipy (the reference implementation)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from evaluator.exact import (
    binomial_upper_tail,
    fisher_drop_min_p,
    fisher_drop_p,
    tarone_threshold,
)


def test_ten_passes_then_three_fails_is_one_in_286() -> None:
    """Fisher's one-sided p for ten passes then three fails is 1/286; one fail after ten passes can
    only reach 1/11."""
    assert fisher_drop_p(10, 10, 0, 3) == pytest.approx(1 / 286)
    # a single failed run after ten passes can never be told apart from noise: 1/11
    assert fisher_drop_p(10, 10, 0, 1) == pytest.approx(1 / 11)


def test_no_change_gives_one() -> None:
    """No change gives p 1, and a case that cannot reject has minimum p 1."""
    assert fisher_drop_p(10, 10, 3, 3) == 1.0
    assert fisher_drop_min_p(10, 10, 3, 3) == 1.0  # all passes: nothing could be significant
    assert fisher_drop_min_p(0, 10, 0, 3) == 1.0  # all fails: likewise


@given(
    st.integers(1, 15).flatmap(lambda bt: st.tuples(st.integers(0, bt), st.just(bt))),
    st.integers(1, 15).flatmap(lambda at: st.tuples(st.integers(0, at), st.just(at))),
)
def test_fisher_matches_scipy(before: tuple[int, int], after: tuple[int, int]) -> None:
    """The one-sided Fisher test equals scipy's on every small table."""
    (bp, bt), (ap, at) = before, after
    table = [[ap, at - ap], [bp, bt - bp]]
    expected = stats.fisher_exact(table, alternative="less").pvalue
    assert fisher_drop_p(bp, bt, ap, at) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert fisher_drop_min_p(bp, bt, ap, at) <= fisher_drop_p(bp, bt, ap, at) + 1e-12


@given(st.integers(0, 40).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_sign_test_matches_scipy(pair: tuple[int, int]) -> None:
    """The sign test's upper tail equals scipy's binomial test."""
    k, n = pair
    if n == 0:
        assert binomial_upper_tail(0, 0) == 1.0
        return
    expected = stats.binomtest(k, n, 0.5, alternative="greater").pvalue
    assert binomial_upper_tail(k, n) == pytest.approx(expected, rel=1e-9)


def test_tarone_ignores_cases_that_cannot_reject() -> None:
    """Tarone's threshold counts only the cases that could reach significance."""
    # 1,000 cases that never changed (min p 1) and one that can reach 1/286
    threshold, testable = tarone_threshold([1.0] * 1000 + [1 / 286], 0.05)
    assert (threshold, testable) == (0.05, 1)
    # two testable cases: Bonferroni over two
    assert tarone_threshold([0.001, 0.002, 0.5], 0.05) == (0.025, 2)
    assert tarone_threshold([], 0.05) == (0.05, 0)


def test_bad_counts_are_rejected() -> None:
    """Counts that cannot be (more passes than runs, no runs) are a ValueError."""
    with pytest.raises(ValueError):
        fisher_drop_p(3, 2, 0, 1)
    with pytest.raises(ValueError):
        fisher_drop_p(0, 0, 0, 1)


@pytest.mark.parametrize(("k", "n"), [(260, 500), (250, 500), (540, 1000), (1000, 1000), (3, 201)])
def test_sign_test_in_log_space_matches_scipy(k: int, n: int) -> None:
    """The sign test stays exact in log space for large counts, as scipy computes it."""
    expected = stats.binomtest(k, n, 0.5, alternative="greater").pvalue
    assert binomial_upper_tail(k, n) == pytest.approx(expected, rel=1e-9)

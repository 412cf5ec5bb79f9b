"""Error budget, burn rate and budget remaining of counted events, on worked examples."""

from __future__ import annotations

import pytest

from evaluator.slo.budget import budget_remaining, burn_rate, error_budget
from evaluator.slo.sli import Events


def test_the_budget_is_what_the_objective_leaves() -> None:
    """An objective of 0.99 leaves one event in a hundred."""
    assert 0.01 == pytest.approx(error_budget(0.99))


@pytest.mark.parametrize("objective", [0.0, 1.0, -0.5, 1.5])
def test_an_objective_lies_strictly_between_0_and_1(objective: float) -> None:
    """No budget (1) and no objective (0) are not objectives."""
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        error_budget(objective)


def test_burn_rate_is_the_error_ratio_over_the_budget() -> None:
    """3 bad of 100 against a 0.01 budget burns it three times as fast as it lasts."""
    assert 3.0 == pytest.approx(burn_rate(Events(good=97, bad=3), 0.99))


def test_budget_remaining_is_one_minus_the_burn_rate() -> None:
    """A quarter of the budget spent leaves three quarters; spent twice over, -1."""
    assert 0.75 == pytest.approx(budget_remaining(Events(good=399, bad=1), 0.99))
    assert -1.0 == pytest.approx(budget_remaining(Events(good=98, bad=2), 0.99))


def test_no_event_has_no_rate() -> None:
    """Without an event there is nothing to divide: None, never NaN."""
    assert (None, None) == (burn_rate(Events(), 0.9), budget_remaining(Events(), 0.9))

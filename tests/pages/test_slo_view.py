"""An SLO's line beside a job's state: its budget left and burn rate, in words and colour."""

from __future__ import annotations

import pytest

from evaluator.pages.slo_view import SloState, slo_view
from evaluator.slo.sli import Events


def _state(budget: Events, fast: Events) -> SloState:
    return SloState("answers", "answer_correct", 0.7, "1d", budget, fast, "2m", 2.167)


@pytest.mark.parametrize(
    ("budget", "fast", "state", "left", "burn"),
    [
        (Events(75, 25), Events(75, 25), "green", "16.7%", "0.83×"),
        (Events(70, 30), Events(60, 40), "amber", "0.0%", "1.33×"),
        (Events(60, 40), Events(60, 40), "red", "-33.3%", "1.33×"),
        (Events(90, 10), Events(20, 80), "red", "66.7%", "2.67×"),
        (Events(), Events(), "none", "no event yet", "–"),
    ],
    ids=["within-budget", "burning-faster-than-it-lasts", "overspent", "page-rate", "no-event"],
)
def test_budget_left_and_burn_rate_read_as_the_alerts_do(
    budget: Events, fast: Events, state: str, left: str, burn: str
) -> None:
    """Green within budget, amber above 1x, red overspent or at the page's rate."""
    view = slo_view(_state(budget, fast))
    assert (state, left, burn) == (view.state, view.budget_left, view.burn)


def test_the_exact_values_ride_along_for_tools() -> None:
    """The page carries the exact budget left and burn rate beside the rounded words."""
    view = slo_view(_state(Events(75, 25), Events(75, 25)))
    assert 1 - 0.25 / 0.30000000000000004 == float(view.budget_value)
    assert ("100 events", "2.167×", "2m") == (f"{view.events} events", view.page_factor,
                                              view.burn_window)  # fmt: skip

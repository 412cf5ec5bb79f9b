"""Error budget and burn rate of counted events, the same arithmetic the generated rules do.

An objective of 0.99 leaves an error budget of 0.01: one bad event in a hundred. The burn
rate is the error ratio over a window divided by that budget (1: the budget lasts exactly
the SLO window; 14.4: it is gone in a thirtieth of it), and the budget remaining over the
SLO window is 1 minus the burn rate over that window (below 0: overspent).
"""

from __future__ import annotations

from evaluator.slo.sli import Events

__all__ = ["budget_remaining", "burn_rate", "error_budget"]


def error_budget(objective: float) -> float:
    """The share of events that may be bad: ``1 - objective``."""
    if not 0.0 < objective < 1.0:
        raise ValueError(f"an objective lies strictly between 0 and 1, not {objective!r}")
    return 1.0 - objective


def burn_rate(events: Events, objective: float) -> float | None:
    """The error ratio of ``events`` over the error budget; None without an event."""
    if events.total == 0:
        return None
    return (events.bad / events.total) / error_budget(objective)


def budget_remaining(events: Events, objective: float) -> float | None:
    """The share of the error budget left after ``events`` (the SLO window's): 1 - burn
    rate, negative when overspent; None without an event."""
    rate = burn_rate(events, objective)
    return None if rate is None else 1.0 - rate

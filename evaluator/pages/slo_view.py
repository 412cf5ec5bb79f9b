"""An SLO beside a job's state on the status page: its budget left over its window and its
burn rate over its fastest page's long window, from the daemon's ledger of its events.

The numbers are the ones the generated rules record from the same events' counters
(``rag_eval:slo_error_budget_remaining:ratio`` and ``rag_eval:slo_burn_rate:ratio``): the
page carries the exact budget in ``data-budget-left`` so a test can hold the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.slo.budget import budget_remaining, burn_rate
from evaluator.slo.sli import Events

__all__ = ["SloState", "SloView", "slo_view"]


@dataclass(frozen=True, slots=True)
class SloState:
    """What the daemon knows of one SLO counting a job (every job of it together)."""

    name: str
    #: the SLI and its parameter in a few words (``latency <= 2.5s``)
    indicator: str
    objective: float
    window: str
    #: the events over the SLO window, and over the fastest page's long window
    budget: Events
    fast: Events
    fast_window: str
    #: the burn rate above which that page fires
    fast_factor: float


@dataclass(frozen=True, slots=True)
class SloView:
    name: str
    #: ``red`` (budget overspent, or burning at the page's rate), ``amber`` (burning faster
    #: than the window allows), ``green``; ``none`` before any event
    state: str
    budget_left: str
    #: the exact share left ("" before any event), for tests and tools
    budget_value: str
    burn: str
    burn_value: str
    burn_window: str
    page_factor: str
    indicator: str
    objective: str
    window: str
    events: str


def _state(left: float | None, burn: float | None, factor: float) -> str:
    if left is None:
        return "none"
    if left < 0 or (burn is not None and burn > factor):
        return "red"
    if burn is not None and burn > 1:
        return "amber"
    return "green"


def slo_view(state: SloState) -> SloView:
    """How one SLO reads beside the job's state."""
    left = budget_remaining(state.budget, state.objective)
    burn = burn_rate(state.fast, state.objective)
    return SloView(
        name=state.name,
        state=_state(left, burn, state.fast_factor),
        budget_left="no event yet" if left is None else f"{left:.1%}",
        budget_value="" if left is None else repr(left),
        burn="–" if burn is None else f"{burn:.2f}×",
        burn_value="" if burn is None else repr(burn),
        burn_window=state.fast_window,
        page_factor=f"{state.fast_factor:g}×",
        indicator=state.indicator,
        objective=f"{state.objective:g}",
        window=state.window,
        events=f"{state.budget.total:,}",
    )

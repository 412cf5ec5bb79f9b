"""The burn-rate plan: the workbook's windows and factors, scaled, widened and adapted to
one SLO and the jobs it counts, on worked examples and generated ones."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.slo.burn import (
    WORKBOOK,
    BurnPlan,
    BurnPlanError,
    plan_burn_alerts,
)

DAY = 86400


def _table(plan: BurnPlan) -> list[tuple[str, str, str, float]]:
    return [(a.severity, a.long, a.short, a.factor) for a in plan.alerts]


def test_a_month_with_a_frequent_job_is_the_workbook() -> None:
    """30 days, a run a minute: the workbook's table as it is, nothing to say."""
    plan = plan_burn_alerts(0.999, 30 * DAY, 60)
    assert [
        ("page", "1h", "5m", 14.4),
        ("page", "6h", "30m", 6.0),
        ("ticket", "1d", "2h", 3.0),
        ("ticket", "3d", "6h", 1.0),
    ] == _table(plan)
    assert ((), (), ()) == (plan.notes, plan.left_out, plan.alerts[0].notes)


def test_28_days_every_15_minutes_widens_the_5_minute_window() -> None:
    """28 days counts as a month; a 5 m window would hold no run of a 15 m job: 30 m."""
    plan = plan_burn_alerts(0.99, 28 * DAY, 900)
    assert ("page", "1h", "30m", 14.4) == _table(plan)[0]
    assert ("short window 5m widened to 30m: two runs of the job (every 15m)",) == (
        plan.alerts[0].notes
    )
    assert (1800, 3600, 7200, 6 * 3600, DAY, 3 * DAY) == plan.windows


def test_a_day_scales_the_windows_and_compresses_factors_that_cannot_fire() -> None:
    """The demo's SLO: 0.70 over a day, a run every 30 s. Windows a thirtieth of the
    workbook's (to whole minutes, at least two runs); 14.4 and 6 x 0.30 are above 1, so
    the factors are compressed, the largest to (1 + 1/0.30) / 2 = 2.1667, 6 to
    1 + 5 x 1.1667 / 13.4 = 1.4353, 3 to 1 + 2 x 1.1667 / 13.4 = 1.1741."""
    plan = plan_burn_alerts(0.70, DAY, 30)
    assert [
        ("page", "2m", "1m", 2.167),
        ("page", "12m", "1m", 1.435),
        ("ticket", "48m", "4m", 1.174),
        ("ticket", "2h24m", "12m", 1.0),
    ] == _table(plan)
    assert 2 == len(plan.notes)
    assert plan.notes[0].startswith("the workbook's windows are for 30 days: scaled by 1d / 30d")
    assert "14.4 and 6 x the budget is above 1 and could never fire" in plan.notes[1]
    assert "14.4 -> 2.167, 6 -> 1.435, 3 -> 1.174, 1 -> 1" in plan.notes[1]


def test_a_daily_job_leaves_out_the_page_that_would_need_the_whole_budget() -> None:
    """A run a day over 28 days: the 1h page widened to 2d would fire only after spending
    14.4 x 2 / 28 = 1.03 budgets; the 6x page (2d/2d, 0.43 of the budget) stays."""
    plan = plan_burn_alerts(0.99, 28 * DAY, DAY)
    assert [
        ("page", "2d", "2d", 6.0),
        ("ticket", "2d", "2d", 3.0),
        ("ticket", "3d", "2d", 1.0),
    ] == _table(plan)
    assert ("page 2d/2d at 14.4x: its long window spends 1.03 x the whole budget before it "
            "can fire",) == plan.left_out  # fmt: skip


def test_a_window_too_short_for_the_job_is_refused_with_what_would_do() -> None:
    """A week of a daily job cannot page: the 6x page needs 12 runs (12 days)."""
    with pytest.raises(BurnPlanError) as raised:
        plan_burn_alerts(0.99, 7 * DAY, DAY)
    assert (
        "7d cannot hold enough runs of the job (every 1d) to page: each page alert's long "
        "window, widened to two runs, would spend more than the whole error budget before it "
        "could fire; a window of at least 12 runs (12d) would do, or a job that runs more often"
    ) == str(raised.value)


@given(
    objective=st.floats(min_value=0.001, max_value=0.99999),
    window=st.integers(min_value=3600, max_value=366 * DAY),
    interval=st.floats(min_value=1, max_value=30 * DAY),
)
def test_every_alert_planned_can_fire_and_holds_two_runs(
    objective: float, window: int, interval: float
) -> None:
    """Whatever the SLO: each alert kept can fire (factor x budget < 1), each window holds
    two runs, the short window is no longer than the long one, each fires before the whole
    budget is spent, factors keep the workbook's order, and a page and a ticket are left;
    or the SLO is refused."""
    try:
        plan = plan_burn_alerts(objective, window, interval)
    except BurnPlanError:
        return
    budget = 1 - objective
    for alert in plan.alerts:
        assert alert.factor * budget < 1
        assert alert.factor >= 1
        assert alert.short_seconds <= alert.long_seconds
        assert alert.short_seconds >= 2 * interval
        assert alert.factor * alert.long_seconds / window <= 1
    factors = [a.factor for a in plan.alerts]
    assert factors == sorted(factors, reverse=True)
    assert {"page", "ticket"} == {a.severity for a in plan.alerts}
    assert len(plan.alerts) + len(plan.left_out) == len(WORKBOOK)

"""The multiwindow, multi-burn-rate alerts of an SLO, sized for a job that runs every few
minutes rather than on every request.

The SRE workbook (chapter 5) alerts on the burn rate of the error budget over two windows
at once: a long one that says the budget is really being spent, a short one that says it
still is (so the alert stops soon after the cause does). Its table, for a 30-day SLO:

========  ===========  ============  ======  ===========================
severity  long window  short window  factor  budget spent before it fires
========  ===========  ============  ======  ===========================
page      1h           5m            14.4    2%
page      6h           30m           6       5%
ticket    1d           2h            3       10%
ticket    3d           6h            1       10%
========  ===========  ============  ======  ===========================

:func:`plan_burn_alerts` adapts that table to one SLO and the jobs it counts:

1. **Windows scale with the SLO window.** An SLO of 27 to 33 days takes the workbook's
   windows as they are; another takes them times its window / 30 days, to whole minutes,
   so each alert still fires after the same share of the budget is spent.
2. **Windows hold two runs.** A golden set runs every few minutes: a window shorter than
   two runs of the job (its interval, plus jitter) sees one run or none, and its error
   ratio jumps from 0 to a run's whole ratio. Such a window is widened to two runs, and
   the plan says so.
3. **Factors that can never fire are adapted.** The error ratio cannot exceed 1, so a
   factor times the budget of 1 or more never fires (an objective of 0.70 leaves 0.30,
   and 14.4 x 0.30 = 4.32). Then the factors are compressed onto the burn rates the
   budget can reach: the largest to halfway between 1 and 1 / budget (every event bad),
   the others in proportion, 1 staying 1, so their order holds.
4. **Too few runs is refused.** A widened long window spends factor x window / SLO window
   of the budget before its alert can fire; above the whole budget, the alert could only
   tell of a budget already gone. Such an alert is left out (the plan says why), and an
   SLO left without a page or without a ticket is refused: its window cannot hold enough
   runs of the job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from evaluator.slo.budget import error_budget
from evaluator.slo.duration import format_duration

__all__ = [
    "WORKBOOK",
    "WORKBOOK_PERIOD_SECONDS",
    "BurnPlan",
    "BurnPlanError",
    "BurnWindow",
    "PlannedAlert",
    "Severity",
    "plan_burn_alerts",
]

Severity = Literal["page", "ticket"]

#: the SLO window the workbook's table is written for
WORKBOOK_PERIOD_SECONDS = 30 * 86400
#: SLO windows within this ratio of the workbook's take its windows unscaled (a month)
_MONTH = (0.9, 1.1)
#: runs every alert window holds at least
RUNS_PER_WINDOW = 2


@dataclass(frozen=True, slots=True)
class BurnWindow:
    """One row of the workbook's table."""

    severity: Severity
    long_seconds: int
    short_seconds: int
    factor: float


#: The SRE workbook's multiwindow, multi-burn-rate table (chapter 5, for a 30-day SLO).
WORKBOOK: tuple[BurnWindow, ...] = (
    BurnWindow("page", 3600, 300, 14.4),
    BurnWindow("page", 6 * 3600, 1800, 6.0),
    BurnWindow("ticket", 86400, 2 * 3600, 3.0),
    BurnWindow("ticket", 3 * 86400, 6 * 3600, 1.0),
)


class BurnPlanError(ValueError):
    """The SLO cannot get alerts that work: its window holds too few runs of its jobs."""


@dataclass(frozen=True, slots=True)
class PlannedAlert:
    """One window pair of an SLO's alerts: fires when the error ratio over both windows is
    above ``factor`` x the error budget. ``notes`` say how it differs from the workbook."""

    severity: Severity
    long_seconds: int
    short_seconds: int
    factor: float
    workbook: BurnWindow
    notes: tuple[str, ...] = ()

    @property
    def long(self) -> str:
        return format_duration(self.long_seconds)

    @property
    def short(self) -> str:
        return format_duration(self.short_seconds)


@dataclass(frozen=True, slots=True)
class BurnPlan:
    """An SLO's alerts: the window pairs kept, the ones left out and why, and the notes
    (scaled windows, adapted factors) every reader of the rules must see."""

    objective: float
    window_seconds: int
    run_interval_seconds: float
    alerts: tuple[PlannedAlert, ...]
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def budget(self) -> float:
        return error_budget(self.objective)

    @property
    def windows(self) -> tuple[int, ...]:
        """Every alert window, short and long, shortest first."""
        return tuple(sorted({w for a in self.alerts for w in (a.short_seconds, a.long_seconds)}))

    def alerts_of(self, severity: Severity) -> tuple[PlannedAlert, ...]:
        return tuple(a for a in self.alerts if a.severity == severity)

    def remarks(self) -> list[str]:
        """Every way the alerts differ from the workbook's, one line each, as `evaluator
        check` and `evaluator slo rules` print them."""
        return [
            *self.notes,
            *(f"{a.severity} {a.long}/{a.short}: {note}" for a in self.alerts for note in a.notes),
            *(f"left out: {why}" for why in self.left_out),
        ]


def _number(value: float) -> str:
    return f"{value:.10g}"


def _scale(window_seconds: int) -> float:
    """What the workbook's windows are multiplied by for an SLO of ``window_seconds``."""
    ratio = window_seconds / WORKBOOK_PERIOD_SECONDS
    return 1.0 if _MONTH[0] <= ratio <= _MONTH[1] else ratio


def _scaled(seconds: int, scale: float) -> int:
    """A workbook window times ``scale``, to whole minutes (a minute at least)."""
    if scale == 1.0:
        return seconds
    return max(60, round(seconds * scale / 60) * 60)


def _factors(budget: float) -> tuple[dict[float, float], tuple[str, ...]]:
    """Each workbook factor as the rules write it, and why it changed (if it did)."""
    top = max(w.factor for w in WORKBOOK)
    if top * budget < 1.0:
        return {w.factor: w.factor for w in WORKBOOK}, ()
    reachable = 1.0 / budget
    new_top = (1.0 + reachable) / 2.0
    factors = {
        w.factor: round(1.0 + (w.factor - 1.0) * (new_top - 1.0) / (top - 1.0), 3) for w in WORKBOOK
    }
    never = [w.factor for w in WORKBOOK if w.factor * budget >= 1.0]
    shown = ", ".join(f"{_number(f)} -> {_number(factors[f])}" for f in factors)
    note = (
        f"a budget of {_number(budget)} cannot burn faster than {reachable:.3g}x (every event "
        f"bad): {' and '.join(_number(f) for f in sorted(set(never), reverse=True))} x the "
        f"budget is above 1 and could never fire; the factors are compressed onto the burn "
        f"rates it can reach, the largest halfway to {reachable:.3g}x: {shown}"
    )
    return factors, (note,)


def _widened(seconds: int, least: int, name: str, interval: str) -> tuple[int, tuple[str, ...]]:
    if seconds >= least:
        return seconds, ()
    return least, (
        f"{name} window {format_duration(seconds)} widened to {format_duration(least)}: "
        f"two runs of the job (every {interval})",
    )


def _pair(row: BurnWindow, scale: float, least: int, factor: float, interval: str) -> PlannedAlert:
    long, widen_long = _widened(_scaled(row.long_seconds, scale), least, "long", interval)
    short, widen_short = _widened(_scaled(row.short_seconds, scale), least, "short", interval)
    notes = [*widen_long, *widen_short]
    if short >= long:
        short = long
        notes.append("the short window is the long one: two runs are all it can hold")
    return PlannedAlert(row.severity, long, short, factor, row, tuple(notes))


def plan_burn_alerts(
    objective: float, window_seconds: int, run_interval_seconds: float
) -> BurnPlan:
    """The alerts of an SLO with ``objective`` over ``window_seconds``, counting jobs that
    run at most ``run_interval_seconds`` apart (the longest of its jobs, jitter included).

    Raises:
        BurnPlanError: the window holds too few runs for a page or for a ticket, with the
            window or interval that would do.
        ValueError: an objective outside (0, 1), or a window or interval not above 0.
    """
    budget = error_budget(objective)
    if window_seconds <= 0 or not run_interval_seconds > 0:
        raise ValueError("an SLO window and a run interval are above 0")
    scale = _scale(window_seconds)
    interval = format_duration(max(1, math.ceil(run_interval_seconds)))
    least = math.ceil(RUNS_PER_WINDOW * run_interval_seconds)
    factors, notes = _factors(budget)
    if scale != 1.0:
        notes = (
            f"the workbook's windows are for 30 days: scaled by "
            f"{format_duration(window_seconds)} / 30d, to whole minutes",
            *notes,
        )
    kept: list[PlannedAlert] = []
    left_out: list[str] = []
    for row in WORKBOOK:
        alert = _pair(row, scale, least, factors[row.factor], interval)
        spent = alert.factor * alert.long_seconds / window_seconds
        if spent > 1.0:
            left_out.append(
                f"{row.severity} {alert.long}/{alert.short} at {_number(alert.factor)}x: "
                f"its long window spends {spent:.3g} x the whole budget before it can fire"
            )
            continue
        kept.append(alert)
    plan = BurnPlan(
        objective, window_seconds, run_interval_seconds, tuple(kept), tuple(left_out), notes
    )
    for severity in ("page", "ticket"):
        if not plan.alerts_of(severity):
            raise BurnPlanError(
                _too_few_runs(severity, factors, window_seconds, run_interval_seconds)
            )
    return plan


def _too_few_runs(
    severity: Severity, factors: dict[float, float], window_seconds: int, interval_seconds: float
) -> str:
    """Why no alert of ``severity`` is left, and the window that would keep one: a widened
    long window holds two runs, and spends factor x two runs of the SLO window's budget."""
    least = min(factors[w.factor] for w in WORKBOOK if w.severity == severity)
    runs = math.ceil(least * RUNS_PER_WINDOW)
    interval = format_duration(max(1, math.ceil(interval_seconds)))
    needed = format_duration(math.ceil(runs * interval_seconds))
    return (
        f"{format_duration(window_seconds)} cannot hold enough runs of the job (every "
        f"{interval}) to {severity}: each {severity} alert's long window, widened to two "
        f"runs, would spend more than the whole error budget before it could fire; a window "
        f"of at least {runs} runs ({needed}) would do, or a job that runs more often"
    )

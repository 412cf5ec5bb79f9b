"""The judged checks: one module each, and :data:`CHECKS`, the registry everything reads.

A check's module builds one :class:`~evaluator.judge.checks.base.JudgedCheck` holding all
of it: which cases it applies to, its rubric and verdict schema (the judge's prompt), the
data it sends, how a verdict becomes the case's values, the summary metrics averaging them,
its verdict as a human label states it, the deterministic check beside it, the question a
reviewer is asked, and its canary.

Adding a judged check is that module (``fact_support.py`` is a worked example) and its
entry in :data:`CHECKS`. Nothing else names a check: the judged pass, the report reader,
the labels, ``evaluator review``, calibration, judge drift, the canaries, the gate's
``[judged.METRIC]`` rules, the daemon's judged gauges and the case view all read the
registry through the functions below, at call time. Bump
:data:`evaluator.judge.prompts.PROMPT_VERSION` with it (a new prompt is a new judge to
calibrate); the reference service's demo judge answers only the checks it spells out.
"""

from __future__ import annotations

from evaluator.judge.checks import fact_support, groundedness, refusal
from evaluator.judge.checks.base import (
    Canary,
    CheckValues,
    JudgedCheck,
    JudgedMetric,
    Subject,
    Values,
)

__all__ = [
    "CHECKS",
    "Canary",
    "CheckValues",
    "JudgedCheck",
    "JudgedMetric",
    "Subject",
    "Values",
    "check",
    "check_names",
    "judged_checks",
    "judged_metric",
    "judged_metrics",
]

#: Every judged check, in report order. Read it through :func:`judged_checks`.
CHECKS: tuple[JudgedCheck, ...] = (fact_support.CHECK, groundedness.CHECK, refusal.CHECK)


def judged_checks() -> tuple[JudgedCheck, ...]:
    """Every registered check, in report order."""
    return CHECKS


def check_names() -> tuple[str, ...]:
    """The registered checks' names, in report order."""
    return tuple(c.name for c in CHECKS)


def check(name: str) -> JudgedCheck:
    """The registered check called ``name``.

    Raises:
        KeyError: no check of that name is registered.
    """
    for registered in CHECKS:
        if registered.name == name:
            return registered
    raise KeyError(name)


def judged_metrics() -> tuple[JudgedMetric, ...]:
    """Every judged summary metric, in report order (each check's, in check order)."""
    return tuple(m for c in CHECKS for m in c.metrics)


def judged_metric(name: str) -> JudgedMetric | None:
    """The judged metric called ``name`` (None: not a judged metric)."""
    return next((m for m in judged_metrics() if m.name == name), None)

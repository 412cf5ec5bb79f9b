"""Drift that is real: the latest runs against the window before them, case by case, paired.

The comparison pairs each case with itself. The *current* side is the latest ``recent`` runs
(the run just finished and the ones before it), the *reference* the ``window`` runs before
those. One run alone cannot be told apart from noise against ten earlier ones: a case that
passed 10 times and fails once has a Fisher p-value of 1/11, so a single run could never
be significant; three failed runs after ten passes give 1/286.

Binary checks (``answer``, ``hit``): per case, a one-sided Fisher exact test of the pass
counts (reference vs current); a case dropped when its p-value is below Tarone's corrected
level (:func:`~evaluator.exact.tarone_threshold`), so the chance that noise flags
any case at all stays at most ``alpha`` however many cases the golden set holds. The check
is significant when at least one case dropped.

Rank and per-case ratio metrics (``mrr``, ``ndcg_at_k``, ``citation_precision``): per case
the mean over each side; a one-sided sign test over the cases that moved (more cases down
than a fair coin would give).

The shift is the mean over paired cases of (current - reference): for a binary check, the
change of the pass rate in points of 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evaluator.exact import (
    binomial_upper_tail,
    fisher_drop_min_p,
    fisher_drop_p,
    tarone_threshold,
)
from evaluator.history.outcome import CaseOutcome
from evaluator.metrics import FLOAT_TOLERANCE

__all__ = [
    "BINARY_CHECKS",
    "DRIFT_CHECKS",
    "RANK_CHECKS",
    "CheckDrift",
    "Drift",
    "compute_drift",
]

Run = Mapping[str, CaseOutcome]

BINARY_CHECKS: Mapping[str, Callable[[CaseOutcome], bool | None]] = {
    "answer": lambda o: o.answer,
    "hit": lambda o: o.hit,
}
RANK_CHECKS: Mapping[str, Callable[[CaseOutcome], float | None]] = {
    "mrr": lambda o: o.mrr,
    "ndcg_at_k": lambda o: o.ndcg_at_k,
    "citation_precision": lambda o: o.citation_precision,
}
#: every figure drift is computed on, by name (the judged checks are judge.checks.CHECKS)
DRIFT_CHECKS: tuple[str, ...] = (*BINARY_CHECKS, *RANK_CHECKS)


@dataclass(frozen=True, slots=True)
class CheckDrift:
    """One check's shift between the reference and the current runs."""

    check: str
    test: Literal["fisher_exact", "sign_test"]
    pairs: int
    shift: float | None
    p_value: float | None
    threshold: float
    significant: bool
    dropped: tuple[str, ...] = ()
    rose: tuple[str, ...] = ()
    down: int = 0
    up: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "test": self.test,
            "pairs": self.pairs,
            "shift": self.shift,
            "p_value": self.p_value,
            "threshold": self.threshold,
            "significant": self.significant,
            "dropped": list(self.dropped),
            "rose": list(self.rose),
            "cases_down": self.down,
            "cases_up": self.up,
        }


@dataclass(frozen=True, slots=True)
class Drift:
    """Every check's shift for one run."""

    reference_runs: int
    current_runs: int
    alpha: float
    checks: Mapping[str, CheckDrift] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        return any(c.significant for c in self.checks.values())

    def to_dict(self) -> dict[str, object]:
        return {
            "reference_runs": self.reference_runs,
            "current_runs": self.current_runs,
            "alpha": self.alpha,
            "significant": self.significant,
            "checks": {name: c.to_dict() for name, c in self.checks.items()},
        }


#: one case's outcomes in the reference runs and in the current runs (None: not in that run)
Sides = tuple[list[CaseOutcome | None], list[CaseOutcome | None]]


def _counts(
    outcomes: Sequence[CaseOutcome | None], pick: Callable[[CaseOutcome], bool | None]
) -> tuple[int, int]:
    passes = total = 0
    for outcome in outcomes:
        value = pick(outcome) if outcome is not None else None
        if value is not None:
            total += 1
            passes += value
    return passes, total


#: one case's (id, reference passes, reference runs, current passes, current runs)
_CountRow = tuple[str, int, int, int, int]


def _count_rows(
    sides: Mapping[str, Sides], pick: Callable[[CaseOutcome], bool | None]
) -> list[_CountRow]:
    """Each case's pass counts on both sides, for the cases checked on both."""
    rows: list[_CountRow] = []
    for cid, (reference, current) in sides.items():
        bp, bt = _counts(reference, pick)
        ap, at = _counts(current, pick)
        if bt and at:
            rows.append((cid, bp, bt, ap, at))
    return rows


def _beyond_chance(
    rows: Sequence[_CountRow], alpha: float
) -> tuple[dict[str, float], float, tuple[str, ...]]:
    """Each case's one-sided Fisher p-value of a drop from the first side to the second,
    Tarone's level for ``alpha`` over the cases, and the cases at or below it."""
    p_values = {cid: fisher_drop_p(bp, bt, ap, at) for cid, bp, bt, ap, at in rows}
    threshold, _ = tarone_threshold(
        [fisher_drop_min_p(bp, bt, ap, at) for _, bp, bt, ap, at in rows], alpha
    )
    return p_values, threshold, tuple(cid for cid, p in p_values.items() if p <= threshold)


def _binary(
    check: str,
    pick: Callable[[CaseOutcome], bool | None],
    sides: Mapping[str, Sides],
    alpha: float,
) -> CheckDrift:
    rows = _count_rows(sides, pick)
    if not rows:
        return CheckDrift(check, "fisher_exact", 0, None, None, alpha, False)
    shift = sum(ap / at - bp / bt for _, bp, bt, ap, at in rows) / len(rows)
    # a case that passed (or failed) every time on both sides can move neither way: p = 1
    moving = [r for r in rows if 0 < r[1] + r[3] < r[2] + r[4]]
    drop_p, drop_threshold, dropped = _beyond_chance(moving, alpha)
    # a rise is a drop seen the other way round
    _, _, rose = _beyond_chance([(c, ap, at, bp, bt) for c, bp, bt, ap, at in moving], alpha)
    return CheckDrift(
        check,
        "fisher_exact",
        pairs=len(rows),
        shift=shift,
        p_value=min(drop_p.values(), default=1.0),
        threshold=drop_threshold,
        significant=bool(dropped),
        dropped=dropped,
        rose=rose,
        down=sum(1 for _, bp, bt, ap, at in rows if ap / at < bp / bt),
        up=sum(1 for _, bp, bt, ap, at in rows if ap / at > bp / bt),
    )


def _mean(
    outcomes: Sequence[CaseOutcome | None], pick: Callable[[CaseOutcome], float | None]
) -> float | None:
    values = [v for o in outcomes if o is not None and (v := pick(o)) is not None]
    return sum(values) / len(values) if values else None


def _mean_shifts(
    sides: Mapping[str, Sides], pick: Callable[[CaseOutcome], float | None]
) -> list[float]:
    """Each case's mean on the current side minus its mean on the reference side (cases
    with a value on both)."""
    diffs = []
    for reference, current in sides.values():
        before, after = _mean(reference, pick), _mean(current, pick)
        if before is not None and after is not None:
            diffs.append(after - before)
    return diffs


def _rank(
    check: str,
    pick: Callable[[CaseOutcome], float | None],
    sides: Mapping[str, Sides],
    alpha: float,
) -> CheckDrift:
    diffs = _mean_shifts(sides, pick)
    if not diffs:
        return CheckDrift(check, "sign_test", 0, None, None, alpha, False)
    # rank metrics are means of floats: a move within the tolerance is no move
    down = sum(1 for d in diffs if d < -FLOAT_TOLERANCE)
    up = sum(1 for d in diffs if d > FLOAT_TOLERANCE)
    p = binomial_upper_tail(down, down + up) if down + up else 1.0
    return CheckDrift(
        check,
        "sign_test",
        pairs=len(diffs),
        shift=sum(diffs) / len(diffs),
        p_value=p,
        threshold=alpha,
        significant=down > 0 and p <= alpha,
        down=down,
        up=up,
    )


def compute_drift(runs: Sequence[Run], recent: int, alpha: float) -> Drift | None:
    """The shift of the latest ``recent`` runs against the runs before them.

    Args:
        runs: complete runs, oldest first, each case id -> outcome; the reference window is
            every run but the last ``recent``.
        recent: how many of the latest runs form the current side.
        alpha: the chance, at most, that noise alone makes a check significant.

    Returns:
        None when there is no reference run yet.
    """
    if recent < 1:
        raise ValueError("recent must be at least 1")
    if len(runs) <= recent:
        return None
    reference, current = runs[:-recent], runs[-recent:]
    case_ids = sorted({cid for run in current for cid in run})
    # each case's outcomes side by side, looked up once for every check
    sides: dict[str, Sides] = {
        cid: ([run.get(cid) for run in reference], [run.get(cid) for run in current])
        for cid in case_ids
    }
    checks: dict[str, CheckDrift] = {}
    for name, pick in BINARY_CHECKS.items():
        checks[name] = _binary(name, pick, sides, alpha)
    for name, rank_pick in RANK_CHECKS.items():
        checks[name] = _rank(name, rank_pick, sides, alpha)
    return Drift(len(reference), len(current), alpha, checks)

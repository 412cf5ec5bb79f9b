"""Exact tests for small counts: Fisher's exact test, the sign test, Tarone's correction.

Counts here are tiny (a window of runs, a handful of repeats), so the tail probabilities are
summed exactly from binomial coefficients (``math.comb``, integer arithmetic until the final
division) instead of pulling scipy into the daemon; the tests check them against scipy.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, exp, fsum, lgamma, log

__all__ = [
    "binomial_upper_tail",
    "fisher_drop_min_p",
    "fisher_drop_p",
    "tarone_threshold",
]


def fisher_drop_p(before_pass: int, before_total: int, after_pass: int, after_total: int) -> float:
    """One-sided Fisher exact test that the *after* pass rate is lower than the *before* one.

    With the margins fixed, the after sample's pass count is hypergeometric under "same
    rate"; the p-value is the probability of as few passes as observed, or fewer.

    Example: 10/10 passes before, 0/3 after: ``fisher_drop_p(10, 10, 0, 3)`` = 1/286.
    """
    _check(before_pass, before_total, after_pass, after_total)
    passes = before_pass + after_pass
    total = before_total + after_total
    low = max(0, passes - before_total)  # the fewest passes the margins leave the after sample
    ways = sum(
        comb(passes, x) * comb(total - passes, after_total - x) for x in range(low, after_pass + 1)
    )
    return ways / comb(total, after_total)


def fisher_drop_min_p(
    before_pass: int, before_total: int, after_pass: int, after_total: int
) -> float:
    """The smallest p-value :func:`fisher_drop_p` could give with these margins.

    A case that passed every time on both sides has nothing that could ever be significant
    (min p = 1): Tarone's correction leaves such tests out of the multiplicity count.
    """
    _check(before_pass, before_total, after_pass, after_total)
    passes = before_pass + after_pass
    total = before_total + after_total
    low = max(0, passes - before_total)  # the fewest passes the margins leave the after sample
    return comb(passes, low) * comb(total - passes, after_total - low) / comb(total, after_total)


def binomial_upper_tail(successes: int, trials: int) -> float:
    """P(X >= successes) for X ~ Binomial(trials, 1/2): the one-sided sign test.

    Exact integers up to :data:`_EXACT_TRIALS` trials; beyond, the terms are summed in log
    space (``lgamma``), relative error about 1e-12, and thousands of cases cost microseconds
    instead of the milliseconds that thousand-digit integers take.
    """
    if not 0 <= successes <= trials:
        raise ValueError(f"successes {successes} outside 0..{trials}")
    if successes == 0:
        return 1.0
    if trials <= _EXACT_TRIALS:
        ways = sum(comb(trials, x) for x in range(successes, trials + 1))
        return ways / (1 << trials)
    log_total = lgamma(trials + 1) - trials * log(2)
    logs = [
        log_total - lgamma(x + 1) - lgamma(trials - x + 1) for x in range(successes, trials + 1)
    ]
    top = max(logs)
    return min(1.0, exp(top) * fsum(exp(v - top) for v in logs))


#: Above this many trials the sign test sums in log space.
_EXACT_TRIALS = 200


def tarone_threshold(min_p_values: Sequence[float], alpha: float) -> tuple[float, int]:
    """Tarone's (1990) Bonferroni threshold for discrete tests.

    Bonferroni over every case would be hopeless with thousands of cases, yet most cases
    cannot reject at all (they never changed). Tarone's method counts only the tests whose
    smallest attainable p-value is below the per-test level: the smallest ``k`` such that at
    most ``k`` tests can reach ``alpha / k``. Rejecting ``p <= alpha / k`` keeps the chance
    of any false rejection at most ``alpha``.

    Returns:
        ``(threshold, k)``; with no testable case the threshold is ``alpha`` and k 0.
    """
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")
    n = len(min_p_values)
    for k in range(1, n + 1):
        testable = sum(1 for p in min_p_values if p <= alpha / k)
        if testable <= k:
            return alpha / k, testable
    return alpha, 0  # no test at all


def _check(before_pass: int, before_total: int, after_pass: int, after_total: int) -> None:
    if not (0 <= before_pass <= before_total and 0 <= after_pass <= after_total):
        raise ValueError("pass counts must lie between 0 and their totals")
    if before_total == 0 or after_total == 0:
        raise ValueError("both samples need at least one observation")

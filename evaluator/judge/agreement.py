"""How far a judge's votes agree with each other: Krippendorff's alpha over the votes of
each check (samples of one judge, or the judges of a panel), and the share of the check's
outcomes the votes left ``uncertain``.

Alpha, not Fleiss' kappa: a vote that failed (a timeout, a malformed verdict) leaves its
item with fewer ratings than the others, and alpha takes missing ratings as they come
where Fleiss' kappa needs every item rated the same number of times. Nominal alpha from
the coincidence matrix (Krippendorff, *Computing Krippendorff's Alpha-Reliability*, 2011):
``1 - (n - 1) * D_o / D_e`` over the pairable values. Pure functions.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations

from evaluator.judge.checks import check_names
from evaluator.judge.record import CaseJudgement, CheckOutcome
from evaluator.judge.votes import vote_category

__all__ = ["VoteFigures", "krippendorff_alpha", "vote_figures"]

_JUDGED = frozenset(("pass", "fail", "none"))


def krippendorff_alpha(units: Iterable[Sequence[Hashable | None]]) -> float | None:
    """Nominal Krippendorff's alpha of ``units``, each the values its raters gave (None: a
    rating missing). Units with fewer than two values are not pairable and count for
    nothing. None when alpha is undefined: no pairable unit, or every value the same
    (no disagreement is expected, so none can be measured)."""
    coincidence = _coincidences(units)
    totals: dict[Hashable, float] = {}
    for (c, _), count in coincidence.items():
        totals[c] = totals.get(c, 0.0) + count
    n = sum(totals.values())
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if n <= 1 or expected == 0:
        return None
    observed = sum(count for (c, k), count in coincidence.items() if c != k)
    return 1 - (n - 1) * observed / expected


def _coincidences(
    units: Iterable[Sequence[Hashable | None]],
) -> dict[tuple[Hashable, Hashable], float]:
    """The coincidence matrix: each ordered pair of values within a unit, weighted
    1 / (m - 1) for a unit of m pairable values."""
    coincidence: dict[tuple[Hashable, Hashable], float] = {}
    for unit in units:
        values = [v for v in unit if v is not None]
        if len(values) < 2:
            continue
        weight = 1 / (len(values) - 1)
        for pair in permutations(values, 2):
            coincidence[pair] = coincidence.get(pair, 0.0) + weight
    return coincidence


@dataclass(frozen=True, slots=True)
class VoteFigures:
    """One check's figures over a run's votes."""

    check: str
    #: outcomes with a verdict (judged), and outcomes whose votes split
    decided: int
    uncertain: int
    #: Krippendorff's alpha between the votes (None: one vote each, or undefined)
    alpha: float | None

    @property
    def uncertain_ratio(self) -> float:
        """Share of the check's answered outcomes (judged or uncertain) left uncertain."""
        answered = self.decided + self.uncertain
        return self.uncertain / answered if answered else 0.0

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "decided": self.decided,
            "uncertain": self.uncertain,
            "uncertain_ratio": self.uncertain_ratio,
            "alpha": self.alpha,
        }


def _ratings(outcome: CheckOutcome) -> list[str | None]:
    """An outcome's votes as alpha's ratings: the verdict category, None for no verdict."""
    categories = (vote_category(v.outcome) for v in outcome.votes)
    return [c if c in _JUDGED else None for c in categories]


def vote_figures(cases: Iterable[CaseJudgement]) -> Mapping[str, VoteFigures]:
    """Each registered check's figures over ``cases``, derived from the outcomes (and their
    kept votes) alone, in registry order."""
    outcomes: dict[str, list[CheckOutcome]] = {name: [] for name in check_names()}
    for case in cases:
        for outcome in case.outcomes:
            outcomes.setdefault(outcome.check, []).append(outcome)
    return {name: _figures(name, found) for name, found in outcomes.items()}


def _figures(check: str, outcomes: Sequence[CheckOutcome]) -> VoteFigures:
    """One check's figures over its outcomes."""
    statuses = [o.status for o in outcomes]
    return VoteFigures(
        check,
        statuses.count("judged"),
        statuses.count("uncertain"),
        krippendorff_alpha(_ratings(o) for o in outcomes if o.votes),
    )

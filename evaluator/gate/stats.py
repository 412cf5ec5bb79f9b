"""Is a change real or noise? Paired bootstrap confidence intervals over cases matched by id.

For every quality metric, each case present (and in the metric's population) on both
sides contributes ``candidate - baseline``. The matched cases are resampled with
replacement :data:`RESAMPLES` times, the same resamples for every metric, and the
interval is the percentile interval of the resampled mean differences. The generator
has a fixed seed and the cases a fixed order (the baseline's), so the same two reports
always give the same intervals.

numpy is imported inside :func:`paired_intervals`, so importing this module (and the
gate, which the daemon calls after every run) stays cheap when no interval is wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# case_values is the registry's denominator rule, so a mean of per-case values is the
# summary's value by construction
from evaluator.metrics import (
    QUALITY_METRICS,
    Population,
    case_values,
    match,
    metric,
    paired_sum,
    split,
)
from evaluator.metrics import paired as paired_values
from evaluator.models import CaseRecord
from evaluator.report.columns import CaseColumns

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    _Matrix = npt.NDArray[np.float64]

__all__ = [
    "CONFIDENCE",
    "RESAMPLES",
    "SEED",
    "Interval",
    "PairedDifference",
    "case_values",
    "paired_differences",
    "paired_intervals",
]

#: Two-sided confidence level of every interval.
CONFIDENCE = 0.95
#: Bootstrap resamples; the percentile bounds are stable to about 0.002 at this count.
RESAMPLES = 2000
#: Fixed seed: the same inputs always give the same intervals.
SEED = 5252
#: Draws held at once (resamples per block x cases): bounds the bootstrap's memory to a few
#: 16 MB matrices whatever the case count. Blocking does not change the draws: the
#: generator fills them row by row either way.
_BLOCK_DRAWS = 2_000_000
#: Fewer matched cases than this give no interval.
MIN_PAIRS = 2


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """The mean of ``candidate - baseline`` over the cases of one metric matched by id.

    Exact and linear in cases; the gate always has it. Its confidence interval (the
    bootstrap) is computed only when asked for (:class:`Interval`).
    """

    metric: str
    pairs: int
    mean_difference: float


@dataclass(frozen=True, slots=True)
class Interval:
    """The paired difference ``candidate - baseline`` of one metric, with its interval."""

    metric: str
    pairs: int
    mean_difference: float
    low: float
    high: float
    confidence: float = CONFIDENCE

    @property
    def excludes_zero(self) -> bool:
        """Whether the change is distinguishable from noise at this confidence."""
        return self.low > 0 or self.high < 0


@dataclass(frozen=True, slots=True)
class _Paired:
    """One metric's matched cases: their ids and ``candidate - baseline``, baseline order."""

    ids: list[str]
    diffs: list[float]

    def mean(self) -> float:
        """The differences added in baseline order (the same float on every path)."""
        return sum(self.diffs) / len(self.diffs)


Cases = Sequence[CaseRecord] | CaseColumns


def _columns(cases: Cases) -> CaseColumns:
    return cases if isinstance(cases, CaseColumns) else CaseColumns.of_records(cases)


def _pools(
    columns: CaseColumns,
) -> tuple[dict[Population, Sequence[Any]], dict[Population, Sequence[str]]]:
    """The registry's populations of a report's scored cases: their scores, and their ids
    in the same order (each read once, in C)."""
    scores, ids, flags = columns.scored()
    return split(scores, flags), split(ids, flags)


def _matched(
    baseline: Cases, candidate: Cases, metrics: Sequence[str]
) -> tuple[list[str], dict[str, _Paired]]:
    """Baseline-ordered ids matched on any metric, and each metric's paired differences."""
    base = _columns(baseline)
    # each report's populations once, not once per metric (as case_values would)
    matching = match(_pools(base), _pools(_columns(candidate)))
    paired = {m: _Paired(*paired_values(metric(m), matching)) for m in metrics}
    matched: set[str] = set()
    for m in metrics:
        matched.update(paired[m].ids)
    ids = list(dict.fromkeys([i for i in base.ids if i in matched]))
    return ids, paired


def paired_differences(baseline: Cases, candidate: Cases) -> dict[str, PairedDifference]:
    """The paired mean difference of each quality metric with at least :data:`MIN_PAIRS` pairs.

    The same ``mean_difference`` as :func:`paired_intervals` gives, without resampling.
    """
    # only each metric's sum and count: no list of ids or differences (the intervals need
    # them), and no matched ids (fewer than MIN_PAIRS of them leave every metric with
    # fewer pairs than that)
    matching = match(_pools(_columns(baseline)), _pools(_columns(candidate)))
    out: dict[str, PairedDifference] = {}
    for m in QUALITY_METRICS:
        added, pairs = paired_sum(metric(m), matching)
        if pairs >= MIN_PAIRS:
            # the same float as _Paired.mean: the differences added in baseline order
            out[m] = PairedDifference(m, pairs, added / pairs)
    return out


def paired_intervals(
    baseline: Cases,
    candidate: Cases,
    metrics: Sequence[str] = QUALITY_METRICS,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Interval]:
    """Paired bootstrap intervals of ``candidate - baseline`` for each metric.

    Args:
        baseline: the baseline's cases (records or their columns); their order fixes the
            resampling order.
        candidate: the candidate's cases, matched to the baseline's by id.
        metrics: quality metrics to compute.
        resamples: bootstrap resamples.
        seed: generator seed.

    Returns:
        An :class:`Interval` per metric with at least :data:`MIN_PAIRS` matched cases.
    """
    ids, matched = _matched(baseline, candidate, metrics)
    if len(ids) < MIN_PAIRS:
        return {}
    diffs, mask = _difference_matrix(ids, matched, metrics)
    means = _resampled_means(diffs, mask, resamples, seed)
    return _intervals(means, mask, matched, metrics)


def _difference_matrix(
    ids: Sequence[str], matched: dict[str, _Paired], metrics: Sequence[str]
) -> tuple[_Matrix, _Matrix]:
    """``diffs[i, j]``: the difference of case i on metric j; ``mask`` marks the pairs that
    exist."""
    import numpy as np

    diffs = np.zeros((len(ids), len(metrics)))
    mask = np.zeros((len(ids), len(metrics)))
    row = {case_id: i for i, case_id in enumerate(ids)}
    for j, m in enumerate(metrics):
        metric_pairs = matched[m]
        for case_id, difference in zip(metric_pairs.ids, metric_pairs.diffs, strict=True):
            diffs[row[case_id], j] = difference
            mask[row[case_id], j] = 1.0
    return diffs, mask


def _resampled_means(diffs: _Matrix, mask: _Matrix, resamples: int, seed: int) -> _Matrix:
    """Each resample's mean difference per metric (NaN where it drew no pair of it), drawn
    in blocks of about :data:`_BLOCK_DRAWS` cases."""
    import numpy as np

    n, width = diffs.shape
    rng = np.random.default_rng(seed)
    sums = np.empty((resamples, width))
    counts = np.empty((resamples, width))
    block = max(1, _BLOCK_DRAWS // n)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        draws = rng.integers(0, n, size=(rows, n))
        # weights[r, i]: how often resample r drew case i, so one product gives every mean
        offsets = (np.arange(rows) * n)[:, None]
        weights = np.bincount((draws + offsets).ravel(), minlength=rows * n).reshape(rows, n)
        w = weights.astype(np.float64)
        sums[start : start + rows] = w @ diffs
        counts[start : start + rows] = w @ mask
    with np.errstate(invalid="ignore", divide="ignore"):
        means: _Matrix = sums / counts
    return means


def _intervals(
    means: _Matrix, mask: _Matrix, matched: dict[str, _Paired], metrics: Sequence[str]
) -> dict[str, Interval]:
    """The percentile interval of each metric with at least :data:`MIN_PAIRS` pairs."""
    import numpy as np

    tail = (1 - CONFIDENCE) / 2 * 100
    out: dict[str, Interval] = {}
    for j, m in enumerate(metrics):
        pairs = int(mask[:, j].sum())
        if pairs < MIN_PAIRS:
            continue
        column = means[:, j]
        column = column[~np.isnan(column)]
        if column.size == 0:
            continue
        low, high = np.percentile(column, [tail, 100 - tail])
        out[m] = Interval(
            metric=m,
            pairs=pairs,
            mean_difference=matched[m].mean(),
            low=float(low),
            high=float(high),
        )
    return out

"""A summary's metrics as table rows, against a baseline when there is one: the status
page's quality table and the HTML report's summary."""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.metrics import FLOAT_TOLERANCE, LOWER_IS_BETTER, METRICS
from evaluator.pages.formatting import fmt_diff, fmt_value
from evaluator.summary import QUALITY_METRICS, Summary

__all__ = ["SUMMARY_METRICS", "MetricRow", "metric_rows"]

#: quality rows on summaries: the ratios, then errors and latency
SUMMARY_METRICS: tuple[str, ...] = (*QUALITY_METRICS, "error_rate", "p50_seconds", "p95_seconds")


#: a ratio only some golden sets have (conversations): a row only when either side has it
_MEASURED_ONLY = frozenset(spec.name for spec in METRICS if spec.measured_only)


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric of a summary, against the baseline when there is one."""

    name: str
    value: str
    count: int | None
    baseline: str | None = None
    diff: str = ""
    #: moved the wrong way against the baseline
    worse: bool = False
    better: bool = False


def metric_rows(summary: Summary, baseline: Summary | None = None) -> list[MetricRow]:
    """Each of :data:`SUMMARY_METRICS` of ``summary``, beside ``baseline``'s when given."""
    rows = []
    for name in SUMMARY_METRICS:
        value = summary.get(name)
        before = None if baseline is None else baseline.get(name)
        if name in _MEASURED_ONLY and value is None and before is None:
            continue
        total = summary.totals.get(name)
        count = total.count if total is not None else None
        if name == "error_rate":
            count = summary.case_count
        if baseline is None:
            rows.append(MetricRow(name, fmt_value(name, value), count))
        else:
            rows.append(_compared_row(name, value, count, baseline.get(name)))
    return rows


def _compared_row(
    name: str, value: float | None, count: int | None, before: float | None
) -> MetricRow:
    """One metric beside the baseline's value, marked worse or better by which way it moved."""
    diff = None if value is None or before is None else value - before
    sign = -1 if name in LOWER_IS_BETTER else 1
    moved = 0.0 if diff is None or abs(diff) < FLOAT_TOLERANCE else diff * sign
    return MetricRow(
        name,
        fmt_value(name, value),
        count,
        baseline=fmt_value(name, before),
        diff=fmt_diff(name, diff),
        worse=moved < 0,
        better=moved > 0,
    )

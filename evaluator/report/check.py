"""What a report read back must satisfy beyond its schema's ranges (finite numbers, ratios
in 0..1, non-negative counts: enforced by the decoder, :mod:`evaluator.report.read`).

A report with cases has its summary derived from them, so it cannot disagree with them;
what remains to check is that its case ids are unique. A report without cases (a
summary-only report) is judged on its written summary, which must agree with itself: every
ratio equals its totals (``sum / count``, null when the count is 0), a total never exceeds
its count, the error rate equals ``error_count / case_count``, scored and failed cases add
up to all cases, P50 is at most P95.

Each check raises :class:`ReportError` naming the source and the first field that is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from evaluator.bounds import MAX_TURNS
from evaluator.errors import ReportError
from evaluator.metrics import FLOAT_TOLERANCE
from evaluator.models import turn_id
from evaluator.summary import QUALITY_METRICS, Summary

__all__ = ["check_ids", "check_summary", "check_turn", "close"]


def close(a: float, b: float) -> bool:
    """Equal up to float rounding (relative and absolute): a summary written by a different
    evaluator version may have added the same values in another order."""
    return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)


def _fail(source: str, field: str, why: str) -> ReportError:
    return ReportError(f"{source}: field {field!r} {why}")


def check_summary(
    source: str,
    where: str,
    summary: Summary,
    ratios: Mapping[str, float | None],
) -> None:
    """A summary agrees with itself: ``ratios`` are the ratio fields as written in the file.

    Raises:
        ReportError: naming ``source`` and the field (``where`` is its prefix).
    """
    _check_totals(source, where, summary)
    _check_ratios(source, where, summary, ratios)
    _check_counts(source, where, summary)
    _check_latency(source, where, summary)


def _check_totals(source: str, where: str, summary: Summary) -> None:
    """No total's sum above its count: a ratio cannot exceed 1."""
    for name, total in summary.totals.items():
        if total.sum > total.count * (1 + FLOAT_TOLERANCE) + FLOAT_TOLERANCE:
            raise _fail(
                source,
                f"{where}totals.{name}.sum",
                f"is {total.sum:g}, more than its count {total.count}: a ratio cannot exceed 1",
            )


def _check_ratios(
    source: str, where: str, summary: Summary, ratios: Mapping[str, float | None]
) -> None:
    """Each quality ratio as written is its totals' mean (both null, or close)."""
    for name in QUALITY_METRICS:
        written = ratios.get(name)
        found = summary.totals.get(name)
        expected = found.mean if found is not None else None
        if written is None and expected is None:
            continue
        if written is None or expected is None or not close(written, expected):
            shown = "null" if expected is None else f"{expected:g}"
            raise _fail(
                source,
                f"{where}{name}",
                f"is {'null' if written is None else f'{written:g}'} but its totals give {shown}",
            )


def _check_counts(source: str, where: str, summary: Summary) -> None:
    """The case counts add up: scored and errors to the cases, the error rate to their
    share, the errors by kind (when given) to the errors, no out-of-range count above the
    scored cases."""
    n = summary.case_count
    if summary.scored_count + summary.error_count != n:
        raise _fail(
            source,
            f"{where}scored_count",
            f"({summary.scored_count}) plus error_count ({summary.error_count}) "
            f"is not case_count ({n})",
        )
    _check_error_rate(source, where, summary)
    # left out (older or hand-made summaries) claims nothing; given, it must add up
    if summary.errors_by_kind and sum(summary.errors_by_kind.values()) != summary.error_count:
        raise _fail(
            source,
            f"{where}errors_by_kind",
            f"adds up to {sum(summary.errors_by_kind.values())}, "
            f"not error_count ({summary.error_count})",
        )
    for name, count in summary.out_of_range.items():
        if count > summary.scored_count:
            raise _fail(
                source,
                f"{where}out_of_range.{name}",
                f"({count}) is above scored_count ({summary.scored_count})",
            )


def _check_error_rate(source: str, where: str, summary: Summary) -> None:
    """The error rate is error_count / case_count (null without a case)."""
    n = summary.case_count
    rate = summary.error_rate
    expected = summary.error_count / n if n else None
    if (rate is None) != (expected is None) or (
        rate is not None and expected is not None and not close(rate, expected)
    ):
        raise _fail(
            source,
            f"{where}error_rate",
            f"is {rate} but error_count / case_count is {expected}",
        )


def _check_latency(source: str, where: str, summary: Summary) -> None:
    """The P50 latency is not above the P95."""
    p50, p95 = summary.p50_seconds, summary.p95_seconds
    if p50 is not None and p95 is not None and p50 > p95 * (1 + FLOAT_TOLERANCE):
        raise _fail(source, f"{where}p50_seconds", f"({p50:g}) is above p95_seconds ({p95:g})")


def check_ids(source: str, ids: Sequence[str]) -> None:
    """Case ids (in case order) are unique.

    Raises:
        ReportError: naming the first repeated id.
    """
    if len(set(ids)) == len(ids):
        return  # the common case, in C: no loop over the cases in Python
    seen: set[str] = set()
    for i, case_id in enumerate(ids):
        if case_id in seen:
            raise _fail(source, f"cases[{i}].id", f"repeats the case id {case_id!r}")
        seen.add(case_id)


def check_turn(
    source: str, index: int, case_id: str, conversation: str | None, turn: int | None
) -> None:
    """A conversation's turn names its conversation and position together, within the
    bounds, and its id is theirs (``conversation#turn``): the gate pairs turns by id.

    Raises:
        ReportError: naming the case's field that is wrong.
    """
    if conversation is None and turn is None:
        return
    where = f"cases[{index}]"
    if conversation is None or turn is None:
        missing = "conversation" if conversation is None else "turn"
        raise _fail(source, f"{where}.{missing}", "is missing: a turn names both")
    if not 1 <= turn <= MAX_TURNS:
        raise _fail(source, f"{where}.turn", f"is {turn}: a turn is 1 to {MAX_TURNS}")
    expected = turn_id(conversation, turn)
    if case_id != expected:
        raise _fail(source, f"{where}.id", f"is {case_id!r}, not its turn's id {expected!r}")

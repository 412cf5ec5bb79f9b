"""Is a report read back consistent with itself? The gate, the daemon's baseline and the
restore of ``latest.json`` only trust a report that passes these checks.

A report is one file anyone can edit: a summary copied from a better run onto cases that all
failed, an error rate of -Infinity or a recall of 10.0 must not decide a release. Ranges
(finite numbers, ratios in 0..1, non-negative counts) are enforced by the decoder's schema
(:mod:`evaluator.report`); here are the relations between fields:

- case ids are unique;
- every summary ratio equals its totals (``sum / count``, null when the count is 0), a total
  never exceeds its count, the error rate equals ``error_count / case_count``, scored and
  failed cases add up to all cases, P50 is at most P95;
- when the report holds cases: the header's counts match them, and the summary equals the one
  recomputed from them (:func:`evaluator.summary.summarise`), tag by tag.

Each check raises :class:`ReportError` naming the source and the first field that is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from evaluator.errors import ReportError
from evaluator.models import CaseRecord
from evaluator.summary import QUALITY_METRICS, Summary, summarise

__all__ = ["check_cases", "check_summary", "check_summary_matches", "close"]

#: Relative and absolute slack when comparing floats: a summary written by a different
#: evaluator version may have added the same values in another order.
_TOLERANCE = 1e-9


def close(a: float, b: float) -> bool:
    """Equal up to float rounding."""
    return math.isclose(a, b, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)


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
    for name, total in summary.totals.items():
        if total.sum > total.count * (1 + _TOLERANCE) + _TOLERANCE:
            raise _fail(
                source,
                f"{where}totals.{name}.sum",
                f"is {total.sum:g}, more than its count {total.count}: a ratio cannot exceed 1",
            )
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
    n = summary.case_count
    if summary.scored_count + summary.error_count != n:
        raise _fail(
            source,
            f"{where}scored_count",
            f"({summary.scored_count}) plus error_count ({summary.error_count}) "
            f"is not case_count ({n})",
        )
    rate = summary.error_rate
    expected_rate = summary.error_count / n if n else None
    if (rate is None) != (expected_rate is None) or (
        rate is not None and expected_rate is not None and not close(rate, expected_rate)
    ):
        raise _fail(
            source,
            f"{where}error_rate",
            f"is {rate} but error_count / case_count is {expected_rate}",
        )
    # left out (older or hand-made summaries) claims nothing; given, it must add up
    if summary.errors_by_kind and sum(summary.errors_by_kind.values()) != summary.error_count:
        raise _fail(
            source,
            f"{where}errors_by_kind",
            f"adds up to {sum(summary.errors_by_kind.values())}, "
            f"not error_count ({summary.error_count})",
        )
    p50, p95 = summary.p50_seconds, summary.p95_seconds
    if p50 is not None and p95 is not None and p50 > p95 * (1 + _TOLERANCE):
        raise _fail(source, f"{where}p50_seconds", f"({p50:g}) is above p95_seconds ({p95:g})")


def check_cases(source: str, cases: Sequence[CaseRecord]) -> None:
    """Case ids are unique.

    Raises:
        ReportError: naming the first repeated id.
    """
    ids = [case.case.id for case in cases]
    if len(set(ids)) == len(ids):
        return  # the common case, in C: no loop over the cases in Python
    seen: set[str] = set()
    for i, case_id in enumerate(ids):
        if case_id in seen:
            raise _fail(source, f"cases[{i}].id", f"repeats the case id {case_id!r}")
        seen.add(case_id)


def _differs(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return not close(a, b)


def _show(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


def _compare(source: str, where: str, written: Summary, recomputed: Summary) -> None:
    def mismatch(field: str, a: object, b: object) -> ReportError:
        return _fail(
            source,
            f"{where}{field}",
            f"is {_show(a)} but the cases give {_show(b)} (summary does not match the cases)",
        )

    for field in ("case_count", "scored_count", "error_count"):
        a, b = getattr(written, field), getattr(recomputed, field)
        if a != b:
            raise mismatch(field, a, b)
    for field in ("error_rate", "p50_seconds", "p95_seconds"):
        a, b = getattr(written, field), getattr(recomputed, field)
        if _differs(a, b):
            raise mismatch(field, a, b)
    for name in sorted(written.totals.keys() | recomputed.totals.keys()):
        wt, rt = written.totals.get(name), recomputed.totals.get(name)
        w_sum, w_count = (wt.sum, wt.count) if wt is not None else (0.0, 0)
        r_sum, r_count = (rt.sum, rt.count) if rt is not None else (0.0, 0)
        if w_count != r_count:
            raise mismatch(f"totals.{name}.count", w_count, r_count)
        if not close(w_sum, r_sum):
            raise mismatch(f"totals.{name}.sum", w_sum, r_sum)
    kinds, recomputed_kinds = dict(written.errors_by_kind), dict(recomputed.errors_by_kind)
    if kinds != recomputed_kinds:
        raise mismatch("errors_by_kind", kinds, recomputed_kinds)
    stages = written.stage_p95_seconds.keys() | recomputed.stage_p95_seconds.keys()
    for stage in sorted(stages):
        a, b = written.stage_p95_seconds.get(stage), recomputed.stage_p95_seconds.get(stage)
        if _differs(a, b):
            raise mismatch(f"stage_p95_seconds.{stage}", a, b)


def check_summary_matches(source: str, written: Summary, cases: Sequence[CaseRecord]) -> None:
    """The written summary is the one the cases give, tag by tag.

    Raises:
        ReportError: naming the first field that differs, with both values.
    """
    recomputed = summarise(cases)
    _compare(source, "summary.", written, recomputed)
    if not written.by_tag:
        return  # an old or hand-made summary without tags claims nothing per tag
    tags = written.by_tag.keys() | recomputed.by_tag.keys()
    for tag in sorted(tags):
        w, r = written.by_tag.get(tag), recomputed.by_tag.get(tag)
        if w is None or r is None:
            side = "the cases have no such tag" if r is None else "it is missing from the summary"
            raise _fail(source, f"summary.by_tag.{tag}", side)
        _compare(source, f"summary.by_tag.{tag}.", w, r)

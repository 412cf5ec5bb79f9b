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
  recomputed from them (as :func:`evaluator.summary.summarise` computes it), tag by tag.

Each check raises :class:`ReportError` naming the source and the first field that is wrong.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, count, repeat
from operator import attrgetter, eq, itemgetter, methodcaller, not_
from typing import Any

from evaluator.errors import ReportError
from evaluator.metrics import METRICS, split
from evaluator.metrics import total as metric_total
from evaluator.models import CaseError, CaseRecord
from evaluator.summary import QUALITY_METRICS, Summary, Total, nearest_rank, stage_p95

__all__ = [
    "CheckedColumns",
    "check_cases",
    "check_ids",
    "check_summary",
    "check_summary_columns",
    "check_summary_matches",
    "close",
]

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
    check_ids(source, [case.case.id for case in cases])


def check_ids(source: str, ids: Sequence[str]) -> None:
    """:func:`check_cases` of the cases' ids, in case order.

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


@dataclass(frozen=True, slots=True)
class CheckedColumns:
    """What the summary check recomputes a summary from: one list per quantity, in case
    order, read once from the records or from a report's decoded entries (no records
    need be built to check a report)."""

    #: each case's error kind, None for a scored case
    kinds: Sequence[str | None]
    #: each case's scores: anything with the CaseScores fields (read for scored cases only)
    scores: Sequence[Any]
    unanswerable: Sequence[bool]
    latency: Sequence[float]
    stages: Sequence[Mapping[str, float]]
    tags: Sequence[tuple[str, ...]]

    @classmethod
    def of_records(cls, records: Sequence[CaseRecord]) -> CheckedColumns:
        outcomes = list(map(_OUTCOME, records))
        return cls(
            kinds=[o.kind if isinstance(o, CaseError) else None for o in outcomes],
            scores=outcomes,
            unanswerable=list(map(_UNANSWERABLE, records)),
            latency=list(map(_LATENCY, records)),
            stages=list(map(_STAGES, records)),
            tags=list(map(_TAGS, records)),
        )

    def take(self, indices: Sequence[int]) -> CheckedColumns:
        """The columns of the cases at ``indices`` (at least one), in that order."""
        if len(indices) == 1:
            i = indices[0]

            def pick(column: Sequence[Any]) -> list[Any]:
                return [column[i]]

        else:
            getter = itemgetter(*indices)

            def pick(column: Sequence[Any]) -> list[Any]:
                return getter(column)  # type: ignore[no-any-return]

        return CheckedColumns(
            kinds=pick(self.kinds),
            scores=pick(self.scores),
            unanswerable=pick(self.unanswerable),
            latency=pick(self.latency),
            stages=pick(self.stages),
            tags=pick(self.tags),
        )


_OUTCOME = attrgetter("outcome")
_UNANSWERABLE = attrgetter("case.unanswerable")
_LATENCY = attrgetter("latency_seconds")
_STAGES = attrgetter("stage_seconds")
_TAGS = attrgetter("case.tags")
_KEYS = methodcaller("keys")
_QUALITY = tuple(spec for spec in METRICS if spec.quality)


def _recomputed(c: CheckedColumns) -> Summary:
    """The fields :func:`_compare` reads of the summary :func:`evaluator.summary.summarise`
    gives for these cases, computed as it computes them (the registry's populations and
    sums, the nearest-rank percentiles); the rest (delivery, loop lag) is left out."""
    scored_flags = [kind is None for kind in c.kinds]
    scored = list(compress(c.scores, scored_flags))
    kinds = [kind for kind in c.kinds if kind is not None]
    pools = split(scored, list(compress(c.unanswerable, scored_flags)))
    n = len(c.kinds)
    latencies = sorted(c.latency)
    return Summary(
        case_count=n,
        scored_count=len(scored),
        error_count=len(kinds),
        totals={spec.name: Total(*metric_total(spec, pools)) for spec in _QUALITY},
        error_rate=len(kinds) / n if n else None,
        p50_seconds=nearest_rank(latencies, 50),
        p95_seconds=nearest_rank(latencies, 95),
        stage_p95_seconds=_stage_p95(c.stages),
        errors_by_kind=dict(sorted(Counter(kinds).items())),
    )


#: up to this many distinct tag lists (or stage-name lists), each one's cases are found by a
#: pass in C
_FEW_LISTS = 8


def _stage_p95(stages: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """:func:`evaluator.summary.stage_p95` of the cases' timings (the same values; the
    check compares stages by name, so their order is not read), each stage's values read
    in C, one pass per stage over the cases of each distinct set of stage names (an
    endpoint reports the same few stages every time)."""
    if not stages:
        return {}
    # the usual report: the cases timed the same stages (compared as sets, in C), but
    # for the failed ones (none); a tuple of names is made only for the cases that differ
    # from the first
    first = stages[0].keys()
    like_first = list(map(eq, map(_KEYS, stages), repeat(first)))
    others = list(compress(stages, map(not_, like_first)))
    layouts = list(map(tuple, others))
    distinct = dict.fromkeys(layouts)
    if len(distinct) >= _FEW_LISTS:
        return stage_p95(stages)
    groups: list[tuple[Iterable[str], Iterable[Mapping[str, float]]]] = [
        (first, compress(stages, like_first) if others else stages)
    ]
    for names in distinct:
        group = compress(others, map(eq, layouts, repeat(names))) if len(distinct) > 1 else others
        groups.append((names, group))
    columns: dict[str, list[float]] = {}
    for stage_names, members in groups:
        if not stage_names:
            continue
        rows = members if isinstance(members, list) else list(members)
        for name in stage_names:
            columns.setdefault(name, []).extend(map(itemgetter(name), rows))
    return {
        name: p95
        for name, values in columns.items()
        if (p95 := nearest_rank(values, 95)) is not None
    }


def _tag_groups(tags: Sequence[tuple[str, ...]]) -> dict[str, list[int]]:
    """Each tag's cases (their positions, in case order), grouped as ``summarise`` groups
    them: by the cases' tag lists first (a golden set has few distinct ones)."""
    by_tags: dict[tuple[str, ...], list[int]] = {}
    distinct = dict.fromkeys(tags)
    if len(distinct) == 1:  # every case tagged alike (or none tagged)
        (case_tags,) = distinct
        if case_tags:
            by_tags[case_tags] = list(range(len(tags)))
    elif len(distinct) <= _FEW_LISTS:
        # the usual golden set: a pass in C per distinct tag list, not a Python loop
        for case_tags in distinct:
            if case_tags:
                by_tags[case_tags] = list(compress(count(), map(eq, tags, repeat(case_tags))))
    else:
        for i, case_tags in enumerate(tags):
            if case_tags:
                group = by_tags.get(case_tags)
                if group is None:
                    by_tags[case_tags] = [i]
                else:
                    group.append(i)
    parts: dict[str, list[list[int]]] = {}
    for case_tags, indices in by_tags.items():
        for t in dict.fromkeys(case_tags):
            parts.setdefault(t, []).append(indices)
    return {t: p[0] if len(p) == 1 else sorted(chain.from_iterable(p)) for t, p in parts.items()}


def check_summary_matches(source: str, written: Summary, cases: Sequence[CaseRecord]) -> None:
    """The written summary is the one the cases give, tag by tag.

    Raises:
        ReportError: naming the first field that differs, with both values.
    """
    check_summary_columns(source, written, CheckedColumns.of_records(cases))


def check_summary_columns(source: str, written: Summary, columns: CheckedColumns) -> None:
    """:func:`check_summary_matches` of the cases' columns.

    Raises:
        ReportError: naming the first field that differs, with both values.
    """
    whole = _recomputed(columns)
    _compare(source, "summary.", written, whole)
    if not written.by_tag:
        return  # an old or hand-made summary without tags claims nothing per tag
    groups = _tag_groups(columns.tags)
    n = len(columns.kinds)
    for tag in sorted(written.by_tag.keys() | groups.keys()):
        w, indices = written.by_tag.get(tag), groups.get(tag)
        if w is None or indices is None:
            side = "it is missing from the summary"
            if indices is None:
                side = "the cases have no such tag"
            raise _fail(source, f"summary.by_tag.{tag}", side)
        # a tag every case carries holds the run's cases in the run's order
        r = whole if len(indices) == n else _recomputed(columns.take(indices))
        _compare(source, f"summary.by_tag.{tag}.", w, r)

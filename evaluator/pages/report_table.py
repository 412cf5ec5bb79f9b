"""The HTML report's table of every case, with filters that work in a static file.

The file has no script (it is opened from disk or a CI artifact), so the filters are radio
inputs and CSS: each row carries one class per filter it passes (``is-failed``,
``tag-3``...), and the stylesheet hides the rows without the checked filter's class. Tags
come from the golden set: they are named by their index in classes and ids, never by their
text, so no tag can write CSS or break an attribute. A row's verdict is in the words of the
case view and the daemon's case table (:data:`evaluator.repeat_summary.VERDICT_WORDS`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from evaluator.bounds import clip
from evaluator.models import CaseRecord
from evaluator.pages.formatting import Redact
from evaluator.pages.worst import reasons
from evaluator.redaction import redact_registered
from evaluator.repeat_summary import VERDICT_PASSED, verdict_word

__all__ = [
    "CASE_TABLE_ROWS",
    "TAG_FILTERS",
    "Filter",
    "ReportCaseRow",
    "ReportCaseTable",
    "report_case_table",
]

#: rows of the table (a larger golden set is counted, and its JSON report has every case)
CASE_TABLE_ROWS = 10_000
#: tags with a filter of their own, in tag order; the rest are counted
TAG_FILTERS = 40
#: characters of a question in a row (the case's section has it whole)
QUESTION_SHOWN = 160


@dataclass(frozen=True, slots=True)
class Filter:
    #: the radio input's id and the class rows passing it carry (``f-`` dropped): ascii only
    key: str
    label: str
    count: int


@dataclass(frozen=True, slots=True)
class ReportCaseRow:
    index: int
    id: str
    #: the case's section in the report, when it has one
    href: str | None
    question: str
    tags: tuple[str, ...]
    #: the baseline's verdict of the case ("absent": not in the baseline; None: no baseline)
    baseline: str | None
    #: one of :data:`evaluator.repeat_summary.VERDICT_WORDS`
    verdict: str
    #: regressions (with a baseline) or the reasons the case went bad, in words
    what: str
    #: the filter keys the row passes, space-separated: its class attribute
    classes: str


@dataclass(frozen=True, slots=True)
class ReportCaseTable:
    rows: list[ReportCaseRow]
    total: int
    filters: list[Filter]
    tag_filters: list[Filter]
    #: tags without a filter (beyond :data:`TAG_FILTERS`)
    tags_more: int
    has_baseline: bool


def _tag_keys(tags: Sequence[str]) -> dict[str, str]:
    """The first :data:`TAG_FILTERS` tags' filter keys: named by index, never by their text
    (a tag from the golden set can write no CSS and break no attribute)."""
    return {t: f"tag-{i}" for i, t in enumerate(tags[:TAG_FILTERS])}


def _row_keys(
    record: CaseRecord,
    verdict: str,
    regressed: Mapping[str, Sequence[str]],
    improved: Collection[str],
    tag_key: Mapping[str, str],
) -> list[str]:
    """The filters a case passes: failed (its verdict is a fail), errored, regressed,
    improved, and its tags that have a filter."""
    keys = []
    if VERDICT_PASSED.get(verdict) is False:
        keys.append("failed")
    if verdict == "error":
        keys.append("errored")
    if record.id in regressed:
        keys.append("regressed")
    if record.id in improved:
        keys.append("improved")
    keys += [tag_key[t] for t in dict.fromkeys(record.case.tags) if t in tag_key]
    return keys


def _baseline_verdict(record: CaseRecord, baseline: Mapping[str, CaseRecord] | None) -> str | None:
    """The baseline's verdict of the case: "absent" when it lacks it, None without one."""
    if baseline is None:
        return None
    before = baseline.get(record.id)
    return verdict_word(before) if before is not None else "absent"


def _what(record: CaseRecord, regressed: Mapping[str, Sequence[str]]) -> Sequence[str]:
    """The gate's phrases of the case's regressions, else the reasons it counts as bad."""
    return regressed[record.id] if record.id in regressed else reasons(record)


def _filters(counts: Mapping[str, int], has_baseline: bool) -> list[Filter]:
    """The outcome filters with their counts (regressed and improved with a baseline)."""
    filters = [Filter("failed", "failed", counts.get("failed", 0))]
    filters.append(Filter("errored", "errored", counts.get("errored", 0)))
    if has_baseline:
        filters.append(Filter("regressed", "regressed", counts.get("regressed", 0)))
        filters.append(Filter("improved", "improved", counts.get("improved", 0)))
    return filters


def report_case_table(
    cases: Sequence[CaseRecord],
    *,
    href: Callable[[str], str | None],
    baseline: Mapping[str, CaseRecord] | None = None,
    regressed: Mapping[str, Sequence[str]] | None = None,
    improved: Collection[str] = (),
    redact: Redact = redact_registered,
) -> ReportCaseTable:
    """Every case (up to :data:`CASE_TABLE_ROWS`) with its verdict, its baseline's, and the
    filters: failed, errored, regressed (with a baseline), improved, and one per tag.

    ``regressed``: case id -> the gate's phrases of its regressions (every regressed case,
    not only those shown in detail); ``href``: a case's section, None when it has none.
    """
    regressed = regressed or {}
    improved = set(improved)
    tags = sorted({t for c in cases for t in c.case.tags})
    tag_key = _tag_keys(tags)
    verdicts = [verdict_word(record) for record in cases]
    keys = [
        _row_keys(record, verdict, regressed, improved, tag_key)
        for record, verdict in zip(cases, verdicts, strict=True)
    ]
    # every case is counted in the filters; the first CASE_TABLE_ROWS are drawn
    counts = Counter(key for row_keys in keys for key in row_keys)
    rows = [
        ReportCaseRow(
            index=index,
            id=redact(record.id),
            href=href(record.id),
            question=redact(clip(record.case.question, QUESTION_SHOWN)),
            tags=record.case.tags,
            baseline=_baseline_verdict(record, baseline),
            verdict=verdicts[index],
            what=redact(clip("; ".join(_what(record, regressed)), 300)),
            classes=" ".join(f"is-{k}" for k in keys[index]),
        )
        for index, record in enumerate(cases[:CASE_TABLE_ROWS])
    ]
    return _table(cases, rows, counts, tag_key, len(tags), baseline is not None)


def _table(
    cases: Sequence[CaseRecord],
    rows: list[ReportCaseRow],
    counts: Mapping[str, int],
    tag_key: Mapping[str, str],
    tag_count: int,
    has_baseline: bool,
) -> ReportCaseTable:
    """The table of ``rows`` with its filters and their counts."""
    return ReportCaseTable(
        rows=rows,
        total=len(cases),
        filters=_filters(counts, has_baseline),
        tag_filters=[Filter(key, tag, counts.get(key, 0)) for tag, key in tag_key.items()],
        tags_more=max(tag_count - TAG_FILTERS, 0),
        has_baseline=has_baseline,
    )

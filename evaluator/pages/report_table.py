"""The HTML report's table of every case, with filters that work in a static file.

The file has no script (it is opened from disk or a CI artifact), so the filters are radio
inputs and CSS: each row carries one class per filter it passes (``is-failed``,
``tag-3``...), and the stylesheet hides the rows without the checked filter's class. Tags
come from the golden set: they are named by their index in classes and ids, never by their
text, so no tag can write CSS or break an attribute.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from evaluator.bounds import clip
from evaluator.models import CaseRecord
from evaluator.pages.views import Redact
from evaluator.pages.worst import reasons
from evaluator.redaction import redact_registered
from evaluator.repeat_summary import verdicts

__all__ = [
    "CASE_TABLE_ROWS",
    "TAG_FILTERS",
    "CaseRow",
    "CaseTableView",
    "Filter",
    "case_table",
    "case_verdict",
]

#: rows of the table (a larger golden set is counted, and its JSON report has every case)
CASE_TABLE_ROWS = 10_000
#: tags with a filter of their own, in tag order; the rest are counted
TAG_FILTERS = 40
#: characters of a question in a row (the case's section has it whole)
QUESTION_SHOWN = 160


def case_verdict(record: CaseRecord) -> str:
    """``pass``, ``fail``, ``error`` or ``not judged``: the case's verdict as history and
    repeats take it (:func:`evaluator.repeat_summary.verdicts`: its answer check, else whether a
    relevant id reached the top K)."""
    if record.error is not None:
        return "error"
    answer, hit = verdicts(record)
    passed = answer if answer is not None else hit
    if passed is None:
        return "not judged"
    return "pass" if passed else "fail"


@dataclass(frozen=True, slots=True)
class Filter:
    #: the radio input's id and the class rows passing it carry (``f-`` dropped): ascii only
    key: str
    label: str
    count: int


@dataclass(frozen=True, slots=True)
class CaseRow:
    index: int
    id: str
    #: the case's section in the report, when it has one
    href: str | None
    question: str
    tags: tuple[str, ...]
    baseline: str | None
    verdict: str
    #: regressions (with a baseline) or the reasons the case went bad, in words
    what: str
    #: the filter keys the row passes, space-separated: its class attribute
    classes: str


@dataclass(frozen=True, slots=True)
class CaseTableView:
    rows: list[CaseRow]
    total: int
    filters: list[Filter]
    tag_filters: list[Filter]
    #: tags without a filter (beyond :data:`TAG_FILTERS`)
    tags_more: int
    has_baseline: bool


def case_table(
    cases: Sequence[CaseRecord],
    *,
    href: Callable[[str], str | None],
    baseline: Mapping[str, CaseRecord] | None = None,
    regressed: Mapping[str, Sequence[str]] | None = None,
    improved: Collection[str] = (),
    redact: Redact = redact_registered,
) -> CaseTableView:
    """Every case (up to :data:`CASE_TABLE_ROWS`) with its verdict, its baseline's, and the
    filters: failed, errored, regressed (with a baseline), improved, and one per tag.

    ``regressed``: case id -> the gate's phrases of its regressions (every regressed case,
    not only those shown in detail); ``href``: a case's section, None when it has none.
    """
    regressed = regressed or {}
    improved = set(improved)
    tags = sorted({t for c in cases for t in c.case.tags})
    tag_key = {t: f"tag-{i}" for i, t in enumerate(tags[:TAG_FILTERS])}
    counts: dict[str, int] = {}
    rows = []
    for index, record in enumerate(cases):
        verdict = case_verdict(record)
        keys = []
        if verdict == "fail":
            keys.append("failed")
        if verdict == "error":
            keys.append("errored")
        if record.id in regressed:
            keys.append("regressed")
        if record.id in improved:
            keys.append("improved")
        keys += [tag_key[t] for t in dict.fromkeys(record.case.tags) if t in tag_key]
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
        if index >= CASE_TABLE_ROWS:
            continue  # counted in the filters, not drawn
        before = baseline.get(record.id) if baseline is not None else None
        what = (
            "; ".join(regressed[record.id])
            if record.id in regressed
            else "; ".join(reasons(record))
        )
        rows.append(
            CaseRow(
                index=index,
                id=redact(record.id),
                href=href(record.id),
                question=redact(clip(record.case.question, QUESTION_SHOWN)),
                tags=record.case.tags,
                baseline=(
                    case_verdict(before)
                    if before is not None
                    else (None if baseline is None else "absent")
                ),
                verdict=verdict,
                what=redact(clip(what, 300)),
                classes=" ".join(f"is-{k}" for k in keys),
            )
        )
    filters = [Filter("failed", "failed", counts.get("failed", 0))]
    filters.append(Filter("errored", "errored", counts.get("errored", 0)))
    if baseline is not None:
        filters.append(Filter("regressed", "regressed", counts.get("regressed", 0)))
        filters.append(Filter("improved", "improved", counts.get("improved", 0)))
    return CaseTableView(
        rows=rows,
        total=len(cases),
        filters=filters,
        tag_filters=[Filter(key, tag, counts.get(key, 0)) for tag, key in tag_key.items()],
        tags_more=max(len(tags) - TAG_FILTERS, 0),
        has_baseline=baseline is not None,
    )

"""The case table of one job: every case of its last run, filtered, sorted and paged.

Two steps, both pure. :func:`case_table` turns a report (and what the daemon knows beside
it: each case's changes against the baseline, each case's stability class) into an
immutable :class:`CaseTable` of plain rows, once per published run; :func:`table_view`
then answers one request from it (filter, sort, one page), so a request costs a pass over
ready rows and the rendering of one page, whatever the golden set's size.

Query parameters come from a browser's address bar: :func:`parse_query` accepts only the
names and values listed here and raises :class:`~evaluator.errors.PageQueryError` naming
the parameter and what it accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from evaluator.border import printable
from evaluator.errors import PageQueryError
from evaluator.models import CaseError, CaseRecord
from evaluator.pages.formatting import Redact, fmt_seconds
from evaluator.repeat_summary import VERDICT_PASSED, VERDICT_WORDS, verdict_word
from evaluator.report import RunReport

__all__ = [
    "PAGE_SIZES",
    "SHOW",
    "SORTS",
    "STABILITY_BADGE",
    "STABILITY_LABELS",
    "CaseQuery",
    "CaseRow",
    "CaseTable",
    "CaseTableView",
    "TurnBadge",
    "case_table",
    "parse_query",
    "table_view",
]

#: what the ``show`` filter keeps, and how the page names it
SHOW: Mapping[str, str] = {
    "all": "all cases",
    "failed": "failed",
    "errored": "errored",
    "regressed": "regressed against the baseline",
    "newly_failing": "newly failing",
    "flaky": "flaky",
    "recovered": "recovered",
}
#: the columns a table sorts by
SORTS: Mapping[str, str] = {
    "id": "id",
    "verdict": "verdict",
    "rr": "RR",
    "recall": "recall",
    "latency": "latency",
    "stability": "stability",
}
ORDERS = ("asc", "desc")
#: rows per page: a bounded choice, never what a URL asks for
PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
#: characters of a text search (a case id or a phrase of a question is far shorter)
MAX_SEARCH_CHARS = 200
#: pages a URL may ask for: a number this long is no page
MAX_PAGE_DIGITS = 7
#: characters of a question and of the changes shown in a row (the case view has all)
QUESTION_SHOWN = 200
CHANGES_SHOWN = 300
#: the job's selection, read by the daemon before the table's own parameters
JOB_PARAMS = ("target", "dataset")

#: the stability classes (:class:`evaluator.history.stability.Stability` values) in words
STABILITY_LABELS: Mapping[str, str] = {
    "newly_failing": "newly failing",
    "flaky": "flaky",
    "stable_fail": "always failing",
    "recovered": "recovered",
    "insufficient": "too few runs",
    "stable_pass": "stable",
}
#: each class's badge colour (the base template's classes)
STABILITY_BADGE: Mapping[str, str] = {
    "newly_failing": "bad",
    "flaky": "warn",
    "stable_fail": "bad",
    "recovered": "ok",
    "insufficient": "na",
    "stable_pass": "ok",
}
#: worst first: the order of ``sort=stability``
_STABILITY_RANK = {name: i for i, name in enumerate(STABILITY_LABELS)}
#: worst first: the order of ``sort=verdict``
_VERDICT_RANK = {word: i for i, word in enumerate(VERDICT_WORDS)}


@dataclass(frozen=True, slots=True)
class CaseQuery:
    """One request's filter, sort and page (the defaults: every case by id, page 1)."""

    show: str = "all"
    tag: str = ""
    q: str = ""
    sort: str = "id"
    order: str = "asc"
    page: int = 1
    size: int = DEFAULT_PAGE_SIZE

    def params(self, **changes: object) -> dict[str, str]:
        """This query (with ``changes``) as URL parameters, defaults left out."""
        query = replace(self, **changes)  # type: ignore[arg-type]
        default = CaseQuery()
        return {
            name: str(getattr(query, name))
            for name in _PARAMS
            if getattr(query, name) != getattr(default, name)
        }


_PARAMS = ("show", "tag", "q", "sort", "order", "page", "size")


def _choice(name: str, value: str, allowed: Iterable[str]) -> str:
    allowed = list(allowed)
    if value not in allowed:
        raise PageQueryError(f"{name}: {_shown(value)} is not one of {', '.join(allowed)}")
    return value


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def _number(name: str, value: str) -> int:
    if not value.isascii() or not value.isdigit() or len(value) > MAX_PAGE_DIGITS:
        raise PageQueryError(f"{name}: {_shown(value)} is not a whole number from 1")
    number = int(value)
    if number < 1:
        raise PageQueryError(f"{name}: {number} is not a whole number from 1")
    return number


def _named(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The table's parameters by name (the job's skipped); an unknown or repeated name
    raises PageQueryError."""
    seen: dict[str, str] = {}
    for name, value in pairs:
        if name in JOB_PARAMS:
            continue
        if name not in _PARAMS:
            raise PageQueryError(f"unknown parameter {_shown(name)}: pass {', '.join(_PARAMS)}")
        if name in seen:
            raise PageQueryError(f"{name}: given more than once")
        seen[name] = value
    return seen


def _search(seen: Mapping[str, str]) -> str:
    """The text search, stripped: at most :data:`MAX_SEARCH_CHARS` printable characters."""
    text = seen.get("q", "").strip()
    if len(text) > MAX_SEARCH_CHARS:
        raise PageQueryError(f"q: at most {MAX_SEARCH_CHARS} characters")
    if printable(text) != text:
        # the search is echoed in the form: a control character has no business in it
        raise PageQueryError("q: holds a control character or a lone surrogate")
    return text


def parse_query(pairs: Iterable[tuple[str, str]]) -> CaseQuery:
    """The table's parameters from a URL's ``(name, value)`` pairs.

    An empty value is the default (what a form sends for a field left blank); the job's
    ``target`` and ``dataset`` are skipped. Raises PageQueryError for an unknown or repeated
    name, a value not in its list, a search over :data:`MAX_SEARCH_CHARS` characters or a
    page that is not a whole number from 1. Whether the page and tag exist is the table's to
    say (:func:`table_view`).
    """
    seen = _named(pairs)
    query = CaseQuery()
    changes: dict[str, object] = {}
    if show := seen.get("show"):
        changes["show"] = _choice("show", show, SHOW)
    if sort := seen.get("sort"):
        changes["sort"] = _choice("sort", sort, SORTS)
    if order := seen.get("order"):
        changes["order"] = _choice("order", order, ORDERS)
    if size := seen.get("size"):
        changes["size"] = int(_choice("size", size, (str(s) for s in PAGE_SIZES)))
    if page := seen.get("page"):
        changes["page"] = _number("page", page)
    if text := _search(seen):
        changes["q"] = text
    if tag := seen.get("tag"):
        changes["tag"] = tag  # checked against the job's tags by table_view
    return replace(query, **changes)  # type: ignore[arg-type]


# --- the snapshot: one per published run -------------------------------------------------


class CaseRow(NamedTuple):
    """One case of the last run as the table lists it (every string already redacted).

    A named tuple, not a frozen dataclass: as immutable, and built ten times faster, which
    a table of 10,000 cases rebuilt after every run notices."""

    id: str
    question: str
    tags: tuple[str, ...]
    verdict: str
    #: the case's verdict as history reads it (None: errored, or nothing to check)
    passed: bool | None
    error_kind: str | None
    rr: float | None
    recall: float | None
    latency: float
    #: its stability class (a Stability value), None without history
    stability: str | None
    #: its changes against the baseline when it regressed, regressions first
    changes: tuple[str, ...]
    #: id and question case-folded: what the text search reads
    folded: str
    #: a conversation's turn: each turn of its conversation as (id, verdict), in order
    turns: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CaseTable:
    """Every case of one job's last run, with the counts the filters would keep."""

    target: str
    dataset: str
    run_id: str
    rows: tuple[CaseRow, ...]
    tags: tuple[str, ...]
    #: regressions are known (a comparable baseline); else ``baseline_note`` says why not
    has_baseline: bool
    baseline_note: str
    #: stability classes are known (a history verdict)
    has_history: bool
    counts: Mapping[str, int] = field(default_factory=dict)


def _keeps(show: str) -> Callable[[CaseRow], bool]:
    return {
        "all": lambda r: True,
        "failed": lambda r: r.passed is False,
        "errored": lambda r: r.error_kind is not None,
        "regressed": lambda r: bool(r.changes),
        "newly_failing": lambda r: r.stability == "newly_failing",
        "flaky": lambda r: r.stability == "flaky",
        "recovered": lambda r: r.stability == "recovered",
    }[show]


def _case_row(
    record: CaseRecord,
    changes: tuple[str, ...],
    klass: str | None,
    redact: Redact,
    turns: tuple[tuple[str, str], ...] = (),
) -> CaseRow:
    """One case as the table lists it: its verdict (and whether that is a pass), error
    kind, RR, recall, latency, stability class and changes against the baseline."""
    scores = record.outcome
    verdict = verdict_word(record)
    case_id = redact(record.id)
    question = record.case.question[:QUESTION_SHOWN]
    rr = recall = None
    if not isinstance(scores, CaseError):
        rr, recall = scores.mrr, scores.recall_at_k
    return CaseRow(
        case_id,
        question,
        record.case.tags,
        verdict,
        VERDICT_PASSED[verdict],
        scores.kind if isinstance(scores, CaseError) else None,
        rr,
        recall,
        record.latency_seconds,
        klass,
        tuple(map(redact, changes)),
        f"{case_id}\n{question}".casefold(),
        turns,
    )


def _counts(rows: Sequence[CaseRow]) -> dict[str, int]:
    """How many rows each ``show`` filter keeps (as :func:`_keeps` does), in one pass."""
    counts = dict.fromkeys(SHOW, 0)
    counts["all"] = len(rows)
    for r in rows:
        counts["failed"] += r.passed is False
        counts["errored"] += r.error_kind is not None
        counts["regressed"] += bool(r.changes)
        if r.stability is not None and r.stability in _HISTORY_SHOWS:
            counts[r.stability] += 1
    return counts


def _conversation_turns(
    records: Sequence[CaseRecord], redact: Redact
) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each conversation's turns as (id, verdict), in turn order (none without any)."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    for record in records:
        place = record.case.turn
        if place is not None:
            found.setdefault(place.conversation, []).append(
                (place.position, redact(record.id), verdict_word(record))
            )
    return {
        conversation: tuple((turn, verdict) for _, turn, verdict in sorted(turns))
        for conversation, turns in found.items()
    }


def case_table(
    report: RunReport,
    *,
    regressed: Mapping[str, tuple[str, ...]] | None,
    stability: Mapping[str, str] | None,
    redact: Redact,
    baseline_note: str = "",
) -> CaseTable:
    """The table's rows of ``report``.

    ``regressed`` maps each case that regressed against the job's baseline to its changes
    (None: no comparable baseline, ``baseline_note`` says why); ``stability`` each case to
    its class (None: no history verdict yet).
    """
    changes = regressed or {}
    classes = stability or {}
    turns = _conversation_turns(report.cases, redact)
    rows = tuple(
        _case_row(
            record,
            changes.get(record.id, ()),
            classes.get(record.id),
            redact,
            turns.get(record.case.turn.conversation, ()) if record.case.turn else (),
        )
        for record in report.cases
    )
    return CaseTable(
        target=report.target,
        dataset=report.dataset,
        run_id=report.run_id,
        rows=rows,
        tags=tuple(sorted({t for record in report.cases for t in record.case.tags})),
        has_baseline=regressed is not None,
        baseline_note=baseline_note,
        has_history=stability is not None,
        counts=_counts(rows),
    )


# --- one request ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowView:
    id: str
    href: str
    question: str
    tags: tuple[str, ...]
    verdict: str
    error_kind: str | None
    rr: str
    recall: str
    latency: str
    stability: str | None
    stability_label: str
    stability_badge: str
    changes: str
    #: a conversation's turn: each turn of its conversation, one badge each
    turns: tuple[TurnBadge, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnBadge:
    """One turn of a row's conversation: its position, verdict and case view."""

    position: int
    verdict: str
    href: str
    #: the row's own turn
    current: bool


@dataclass(frozen=True, slots=True)
class FilterLink:
    show: str
    label: str
    count: int
    href: str
    active: bool
    #: where the count comes from, as ``data-*`` attributes (the figures test reads them)
    source: dict[str, str]


@dataclass(frozen=True, slots=True)
class ColumnHead:
    label: str
    href: str
    #: "asc" / "desc" when the table is sorted by it, else ""
    sorted: str


@dataclass(frozen=True, slots=True)
class CaseTableView:
    target: str
    dataset: str
    run_id: str
    query: CaseQuery
    rows: list[RowView]
    total: int
    matched: int
    first: int
    page: int
    pages: int
    filters: list[FilterLink]
    columns: dict[str, ColumnHead]
    tags: tuple[str, ...]
    shows: list[tuple[str, str]]
    sorts: list[tuple[str, str]]
    sizes: tuple[int, ...]
    prev_href: str | None
    next_href: str | None
    has_baseline: bool
    baseline_note: str
    has_history: bool


def _sorted(rows: list[CaseRow], sort: str, descending: bool) -> list[CaseRow]:
    """Rows by ``sort``; cases without a value (an errored case has no RR) come last either
    way; ties keep the report's order."""
    if sort == "id":
        return sorted(rows, key=lambda r: r.id, reverse=descending)
    keyed: dict[str, Callable[[CaseRow], float | None]] = {
        "rr": lambda r: r.rr,
        "recall": lambda r: r.recall,
        "latency": lambda r: r.latency,
        "verdict": lambda r: _VERDICT_RANK.get(r.verdict, len(_VERDICT_RANK)),
        "stability": lambda r: _STABILITY_RANK.get(r.stability) if r.stability else None,
    }
    key = keyed[sort]
    valued = [(v, r) for r in rows if (v := key(r)) is not None]
    valued.sort(key=lambda pair: pair[0], reverse=descending)
    return [r for _, r in valued] + [r for r in rows if key(r) is None]


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _check_tag(table: CaseTable, tag: str) -> None:
    """Refuse (PageQueryError) a tag the job's cases do not carry, naming the ones they do."""
    if tag and tag not in table.tags:
        known = ", ".join(table.tags) or "none"
        raise PageQueryError(f"tag: {_shown(tag)} is no tag of this job (its tags: {known})")


def _kept(table: CaseTable, query: CaseQuery) -> list[CaseRow]:
    """The rows ``query``'s filter, tag and text search keep, in the report's order; a tag
    the job has not raises PageQueryError."""
    _check_tag(table, query.tag)
    rows: Iterable[CaseRow] = table.rows
    if query.show != "all":
        rows = filter(_keeps(query.show), rows)
    if query.tag:
        rows = (r for r in rows if query.tag in r.tags)
    if query.q:
        needle = query.q.casefold()
        rows = (r for r in rows if needle in r.folded)
    return list(rows)


def _page_count(query: CaseQuery, kept: int) -> int:
    """Pages of ``kept`` rows (at least one); a page asked beyond them raises PageQueryError."""
    pages = max(1, -(-kept // query.size))
    if query.page > pages:
        raise PageQueryError(
            f"page: {query.page} is beyond the last page ({pages}) of {kept} cases"
        )
    return pages


def _column_heads(query: CaseQuery, link: Callable[..., str]) -> dict[str, ColumnHead]:
    """Each sortable column's head, linking to the table sorted by it (flipped when it is
    the sort already)."""
    columns = {}
    for name, label in SORTS.items():
        active = query.sort == name
        flipped = "desc" if active and query.order == "asc" else "asc"
        columns[name] = ColumnHead(
            label, link(sort=name, order=flipped, page=1), query.order if active else ""
        )
    return columns


def _row_view(r: CaseRow, case_href: Callable[[str], str]) -> RowView:
    """One row as the page writes it, linked to its case view."""
    return RowView(
        id=r.id,
        href=case_href(r.id),
        question=r.question,
        tags=r.tags,
        verdict=r.verdict,
        error_kind=r.error_kind,
        rr=_ratio(r.rr),
        recall=_ratio(r.recall),
        latency=fmt_seconds(r.latency),
        stability=r.stability,
        stability_label=STABILITY_LABELS.get(r.stability, "") if r.stability else "",
        stability_badge=STABILITY_BADGE.get(r.stability, "na") if r.stability else "na",
        changes="; ".join(r.changes)[:CHANGES_SHOWN],
        turns=tuple(
            TurnBadge(n, verdict, case_href(turn), turn == r.id)
            for n, (turn, verdict) in enumerate(r.turns, start=1)
        ),
    )


def _filter_links(table: CaseTable, query: CaseQuery, link: Callable[..., str]) -> list[FilterLink]:
    """The ``show`` filters with their counts; regressed only with a baseline, the history
    classes only with a history verdict."""
    return [
        FilterLink(
            show,
            label,
            table.counts.get(show, 0),
            link(show=show, page=1),
            query.show == show,
            dict(_SOURCES.get(show, {})),
        )
        for show, label in SHOW.items()
        if (show != "regressed" or table.has_baseline)
        and (show not in _HISTORY_SHOWS or table.has_history)
    ]


def table_view(
    table: CaseTable,
    query: CaseQuery,
    *,
    href: Callable[[dict[str, str]], str],
    case_href: Callable[[str], str],
) -> CaseTableView:
    """One page of ``table`` as ``query`` asks for it.

    ``href`` makes this page's URL from table parameters (the job's are its own to add);
    ``case_href`` a case's view. Raises PageQueryError for a tag the job has not or a page
    beyond the last.
    """
    kept = _kept(table, query)
    pages = _page_count(query, len(kept))
    ordered = _sorted(kept, query.sort, query.order == "desc")
    first = (query.page - 1) * query.size
    shown = ordered[first : first + query.size]

    def link(**changes: object) -> str:
        return href(query.params(**changes))

    return CaseTableView(
        target=table.target,
        dataset=table.dataset,
        run_id=table.run_id,
        query=query,
        rows=[_row_view(r, case_href) for r in shown],
        total=len(table.rows),
        matched=len(kept),
        first=first + 1 if shown else 0,
        page=query.page,
        pages=pages,
        filters=_filter_links(table, query, link),
        columns=_column_heads(query, link),
        tags=table.tags,
        shows=list(SHOW.items()),
        sorts=list(SORTS.items()),
        sizes=PAGE_SIZES,
        prev_href=link(page=query.page - 1) if query.page > 1 else None,
        next_href=link(page=query.page + 1) if query.page < pages else None,
        has_baseline=table.has_baseline,
        baseline_note=table.baseline_note,
        has_history=table.has_history,
    )


_HISTORY_SHOWS = frozenset({"newly_failing", "flaky", "recovered"})

#: what each count equals: a field of ``/reports/latest``, a series of ``/metrics`` (with
#: the job's labels), or a count of the report's cases (``data-count``); "regressed" is
#: the page's own comparison with the baseline, which neither exports
_SOURCES: Mapping[str, Mapping[str, str]] = {
    "all": {"data-report": "case_count"},
    "errored": {"data-report": "error_count"},
    "failed": {"data-count": "failed"},
    **{
        show: {"data-metric": "rag_eval_stability_cases", "data-labels": f"class={show}"}
        for show in ("newly_failing", "flaky", "recovered")
    },
}

"""The case table's query parsing, snapshot and page views (pure: no daemon, no browser)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from evaluator.errors import PageQueryError
from evaluator.models import Case, CaseError, CaseRecord, CaseScores
from evaluator.pages.cases import (
    MAX_SEARCH_CHARS,
    CaseQuery,
    CaseTable,
    case_table,
    parse_query,
    table_view,
)
from evaluator.pages.render import PageRenderer
from evaluator.redaction import Redactor
from evaluator.report import RunReport
from tests.support.records import report

SECRET = "tok-5e4d3c2b1a0f"


def _record(i: int, *, rr: float, answer: bool | None, tags: tuple[str, ...] = ()) -> CaseRecord:
    return CaseRecord(
        case=Case(
            id=f"c{i:02d}",
            question=f"question number {i}",
            relevance={f"d{i}": 1},
            expected_facts=(("fact",),),
            unanswerable=False,
            tags=tags,
        ),
        outcome=CaseScores(
            recall_at_k=1.0 if rr else 0.0,
            mrr=rr,
            ndcg_at_k=rr,
            citation_precision=1.0,
            citation_recall=1.0,
            citation_valid=True,
            answer_correct=answer,
            fact_recall=1.0,
            refused=False,
        ),
        ranked_ids=(f"d{i}",),
        answer="fact" if answer else "other",
        citations=(1,),
        latency_seconds=0.01 * (i + 1),
        stage_seconds={},
    )


def _errored(i: int) -> CaseRecord:
    good = _record(i, rr=1.0, answer=True)
    return CaseRecord(
        case=good.case,
        outcome=CaseError(kind="timeout", message=f"no answer in 10 s {SECRET}"),
        ranked_ids=(),
        answer=None,
        citations=(),
        latency_seconds=10.0,
        stage_seconds={},
    )


RECORDS = (
    _record(0, rr=1.0, answer=True, tags=("refund",)),
    _record(1, rr=0.5, answer=False, tags=("refund", "zh")),
    _record(2, rr=0.0, answer=False, tags=("zh",)),
    _errored(3),
    _record(4, rr=0.25, answer=True),
)
STABILITY = {"c00": "stable_pass", "c01": "newly_failing", "c02": "flaky", "c03": "recovered"}
REGRESSED = {"c01": ("answer correct → incorrect", f"new error {SECRET}")}


def _report() -> RunReport:
    return report(RECORDS, k=2, target="rag")


def _redact(text: str) -> str:
    return Redactor([SECRET]).redact_text(text)


def _table(**kw: object) -> CaseTable:
    args: dict[str, object] = {"regressed": REGRESSED, "stability": STABILITY}
    args.update(kw)
    return case_table(_report(), redact=_redact, **args)  # type: ignore[arg-type]


def _view(table: CaseTable, **params: str):  # type: ignore[no-untyped-def]
    return table_view(
        table,
        parse_query(params.items()),
        href=lambda p: "/case-table?" + urlencode(p),
        case_href=lambda case_id: f"/case?id={case_id}",
    )


def _ids(table: CaseTable, **params: str) -> list[str]:
    return [r.id for r in _view(table, **params).rows]


class TestQuery:
    def test_defaults_and_blank_fields(self) -> None:
        """Blank form fields are the defaults, and only values other than the defaults go into
        links."""
        # a form sends every field, blank ones empty: those are the defaults
        blank = [("target", "t"), ("dataset", "d"), ("show", ""), ("tag", ""), ("q", " ")]
        assert CaseQuery() == parse_query(blank)
        assert {} == CaseQuery().params()
        assert {"show": "failed", "page": "2"} == CaseQuery(show="failed", page=2).params()

    @pytest.mark.parametrize(
        ("pairs", "message"),
        [
            ([("show", "broken")], "show: 'broken' is not one of all, failed, errored"),
            ([("sort", "x")], "sort: 'x' is not one of id, verdict, rr, recall"),
            ([("order", "up")], "order: 'up' is not one of asc, desc"),
            ([("size", "1000")], "size: '1000' is not one of 25, 50, 100, 200"),
            ([("page", "0")], "page: 0 is not a whole number from 1"),
            ([("page", "-1")], "page: '-1' is not a whole number from 1"),
            ([("page", "١")], "page: '١' is not a whole number from 1"),
            ([("page", "9" * 40)], "is not a whole number from 1"),
            ([("bogus", "1")], "unknown parameter 'bogus': pass show, tag, q, sort"),
            ([("show", "failed"), ("show", "flaky")], "show: given more than once"),
            ([("q", "x" * (MAX_SEARCH_CHARS + 1))], f"q: at most {MAX_SEARCH_CHARS} characters"),
        ],
    )
    def test_bad_values_are_refused_naming_the_parameter(
        self, pairs: list[tuple[str, str]], message: str
    ) -> None:
        """A bad query value is refused with a message naming the parameter."""
        with pytest.raises(PageQueryError) as caught:
            parse_query(pairs)
        assert message in str(caught.value)


class TestSnapshot:
    def test_counts_and_rows(self) -> None:
        """The table counts the cases of each filter and lists its tags, an errored case's row
        showing its error kind."""
        table = _table()

        assert {
            "all": 5,
            "failed": 2,
            "errored": 1,
            "regressed": 1,
            "newly_failing": 1,
            "flaky": 1,
            "recovered": 1,
        } == dict(table.counts)
        assert ("refund", "zh") == table.tags
        errored = table.rows[3]
        assert (None, None, "timeout", "error") == (
            errored.rr,
            errored.passed,
            errored.error_kind,
            errored.verdict,
        )

    def test_changes_are_redacted(self) -> None:
        """A row's changes against the baseline are redacted."""
        (row,) = [r for r in _table().rows if r.changes]
        assert ("answer correct → incorrect", "new error ***") == row.changes

    def test_without_baseline_or_history(self) -> None:
        """Without a baseline or case history only the filters that need neither are offered."""
        table = _table(regressed=None, stability=None, baseline_note="no baseline configured")
        view = _view(table)

        assert not table.has_baseline and not table.has_history
        shown = [f.show for f in view.filters]
        assert ["all", "failed", "errored"] == shown
        assert {None} == {r.stability for r in view.rows}


class TestFilters:
    def test_each_filter_keeps_its_cases(self) -> None:
        """Each filter keeps exactly the cases of its class."""
        table = _table()
        assert ["c01", "c02"] == _ids(table, show="failed")
        assert ["c03"] == _ids(table, show="errored")
        assert ["c01"] == _ids(table, show="regressed")
        assert ["c01"] == _ids(table, show="newly_failing")
        assert ["c02"] == _ids(table, show="flaky")
        assert ["c03"] == _ids(table, show="recovered")

    def test_tag_and_text_search_combine_with_a_filter(self) -> None:
        """A tag and a case-insensitive text search of id and question narrow a filter."""
        table = _table()
        assert ["c00", "c01"] == _ids(table, tag="refund")
        assert ["c01"] == _ids(table, tag="refund", show="failed")
        assert ["c04"] == _ids(table, q="NUMBER 4")
        assert ["c02"] == _ids(table, q="c02")
        assert [] == _ids(table, q="nothing like it")

    def test_an_unknown_tag_is_refused_naming_the_known_ones(self) -> None:
        """A tag the job does not have is refused naming the tags it has."""
        known = r"tag: 'nope' is no tag of this job \(its tags: refund, zh\)"
        with pytest.raises(PageQueryError, match=known):
            _view(_table(), tag="nope")


class TestSortAndPages:
    def test_sort_by_a_column_missing_values_last(self) -> None:
        """Sorting by a column puts the cases without a value last, in either order."""
        table = _table()
        assert ["c02", "c04", "c01", "c00", "c03"] == _ids(table, sort="rr")
        assert ["c00", "c01", "c04", "c02", "c03"] == _ids(table, sort="rr", order="desc")
        assert ["c04", "c03", "c02", "c01", "c00"] == _ids(table, order="desc")
        assert ["c03", "c01", "c02", "c00", "c04"] == _ids(table, sort="verdict")
        # worst class first; a case without a class last
        assert ["c01", "c02", "c03", "c00", "c04"] == _ids(table, sort="stability")

    def test_pages_and_their_links(self) -> None:
        """Rows are paged with previous and next links, and a column's link sorts from the first
        page."""
        records = tuple(_record(i, rr=1.0, answer=True) for i in range(60))
        made = report(records, k=2, target="rag")
        table = case_table(made, regressed=None, stability=None, redact=_redact)
        first, last = _view(table, size="25"), _view(table, size="25", page="3")

        assert (25, 1, 3, None) == (len(first.rows), first.first, first.pages, first.prev_href)
        assert "/case-table?page=2&size=25" == first.next_href
        assert (10, 51, None) == (len(last.rows), last.first, last.next_href)
        assert "/case-table?page=2&size=25" == last.prev_href
        # a column's link sorts by it from the first page; the sorted one flips its order
        assert "/case-table?sort=rr&size=25" == last.columns["rr"].href
        assert "/case-table?order=desc&size=25" == last.columns["id"].href
        with pytest.raises(PageQueryError, match=r"page: 4 is beyond the last page \(3\) of 60"):
            _view(table, size="25", page="4")

    def test_an_empty_result_is_one_page(self) -> None:
        """A search that matches nothing is one empty page."""
        view = _view(_table(), q="nothing like it")
        assert (0, 1, 0) == (view.matched, view.pages, view.first)


def test_the_page_escapes_and_redacts_what_it_shows() -> None:
    """The case table page escapes the target's text and masks secrets in it."""
    records = (
        CaseRecord(
            case=Case(
                id="<b>x</b>",
                question=f"<script>alert(1)</script> {SECRET}",
                relevance={"d": 1},
                expected_facts=(),
                unanswerable=False,
                tags=("<i>t</i>",),
            ),
            outcome=CaseError(kind="http_5xx", message="boom"),
            ranked_ids=(),
            answer=None,
            citations=(),
            latency_seconds=0.5,
            stage_seconds={},
        ),
    )
    made = report(records, k=2, target="rag")
    table = case_table(made, regressed=None, stability=None, redact=_redact)
    html = PageRenderer(_redact).case_table(_view(table), run_age="now")

    assert "<script>" not in html and "<b>x</b>" not in html and "<i>t</i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; ***" in html
    assert SECRET not in html
    assert 'data-case-id="&lt;b&gt;x&lt;/b&gt;"' in html

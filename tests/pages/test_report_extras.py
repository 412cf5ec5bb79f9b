"""The HTML report's by-tag table, worst reasons, baseline diffs and filterable case table:
worked examples of the view models, and the static page they render to."""

from __future__ import annotations

import re

from evaluator.gate import GateResult, evaluate_gate
from evaluator.gate.compare import record_moves
from evaluator.pages.render import PageRenderer
from evaluator.pages.report import report_view
from evaluator.pages.report_extras import report_extras, tag_rows
from evaluator.pages.report_table import TAG_FILTERS, report_case_table
from evaluator.report import RunReport
from evaluator.summary import summarise
from tests.support.records import record, replace, report

BASELINE = [
    record("a", tags=("zh", "refund"), ranked=("d1", "d2"), answer="3-5个工作日 fact"),
    record("b", tags=("zh",)),
    record("c", tags=("en",), error="timeout"),
    record("d", tags=("en",), correct=False, recall=0.0, rr=0.0, ranked=("x",)),
]
CANDIDATE = [
    record(
        "a",
        tags=("zh", "refund"),
        correct=False,
        recall=0.0,
        rr=0.5,
        ranked=("d2", "d1"),
        answer="七个工作日 nope",
    ),
    record("b", tags=("zh",)),
    record("c", tags=("en",), error="timeout"),
    record("d", tags=("en",)),
]


def _gate() -> tuple[GateResult, RunReport]:
    base, cand = report(BASELINE), report(CANDIDATE, run_id="run-2")
    return evaluate_gate(base, cand, with_intervals=False), cand


class TestCaseTable:
    def test_rows_carry_the_classes_of_the_filters_they_pass(self) -> None:
        """Each row of the report's case table carries the classes of the filters and tags it
        passes."""
        table = report_case_table(
            CANDIDATE,
            href=lambda i: "#case-0" if i == "a" else None,
            baseline={c.id: c for c in BASELINE},
            regressed={"a": ("answer correct → incorrect",)},
            improved={"d"},
        )

        # tags by index in sorted order: en, refund, zh
        assert [("tag-0", "en", 2), ("tag-1", "refund", 1), ("tag-2", "zh", 2)] == [
            (f.key, f.label, f.count) for f in table.tag_filters
        ]
        assert [("failed", 1), ("errored", 1), ("regressed", 1), ("improved", 1)] == [
            (f.key, f.count) for f in table.filters
        ]
        rows = {r.id: r for r in table.rows}
        assert "is-failed is-regressed is-tag-2 is-tag-1" == rows["a"].classes
        assert ("correct", "incorrect", "#case-0") == (
            rows["a"].baseline,
            rows["a"].verdict,
            rows["a"].href,
        )
        assert "answer correct → incorrect" == rows["a"].what
        assert ("is-tag-2", None) == (rows["b"].classes, rows["b"].href)
        assert ("is-errored is-tag-0", "the call failed (timeout)") == (
            rows["c"].classes,
            rows["c"].what,
        )
        assert ("incorrect", "correct", "is-improved is-tag-0") == (
            rows["d"].baseline,
            rows["d"].verdict,
            rows["d"].classes,
        )

    def test_without_a_baseline_there_is_no_regressed_filter(self) -> None:
        """Without a baseline there is no regressed filter and no baseline column."""
        table = report_case_table(CANDIDATE, href=lambda _: None)

        assert ["failed", "errored"] == [f.key for f in table.filters]
        assert {None} == {r.baseline for r in table.rows}

    def test_tags_are_named_by_index_and_bounded(self) -> None:
        """A tag is text from the golden set: it never reaches a class or an id, and only the
        first TAG_FILTERS get a filter (the rest are counted)."""
        cases = [record(f"c{i}", tags=(f'"><style>{i:03}',)) for i in range(TAG_FILTERS + 5)]
        table = report_case_table(cases, href=lambda _: None)

        assert (TAG_FILTERS, 5) == (len(table.tag_filters), table.tags_more)
        assert all(re.fullmatch(r"tag-\d+", f.key) for f in table.tag_filters)
        assert all(re.fullmatch(r"[a-z0-9 -]*", r.classes) for r in table.rows)


class TestTagRows:
    def test_baseline_beside_candidate_with_the_direction(self) -> None:
        """Each tag's metrics show the baseline beside the candidate with the difference and
        whether it is worse or better."""
        rows = {t.tag: t for t in tag_rows(summarise(CANDIDATE), summarise(BASELINE))}

        en = {c.label: (c.baseline, c.value, c.diff, c.worse, c.better) for c in rows["en"].cells}
        # d became right: en's accuracy 0 -> 1 (one scored case), recall 0 -> 1
        assert ("0.00", "1.00", "+1.00", False, True) == en["accuracy"]
        assert ("0.00", "1.00", "+1.00", False, True) == en["recall"]
        assert ("0.50", "0.50", "+0.00", False, False) == en["errors"]
        zh = {c.label: (c.baseline, c.value, c.diff, c.worse) for c in rows["zh"].cells}
        assert ("1.00", "0.50", "-0.50", True) == zh["recall"]
        assert (2, 2) == (rows["zh"].baseline_cases, rows["zh"].cases)

    def test_a_higher_error_ratio_is_worse(self) -> None:
        """A higher error ratio of a tag is worse."""
        before = summarise([record("a", tags=("t",))])
        after = summarise([record("a", tags=("t",), error="timeout")])
        errors = next(c for c in tag_rows(after, before)[0].cells if c.label == "errors")

        assert ("0.00", "1.00", True) == (errors.baseline, errors.value, errors.worse)

    def test_without_a_baseline(self) -> None:
        """Without a baseline a tag's cells have no baseline and no difference."""
        rows = tag_rows(summarise(CANDIDATE))

        assert {None} == {c.baseline for t in rows for c in t.cells}
        assert {""} == {c.diff for t in rows for c in t.cells}


class TestReportExtras:
    def test_a_gate_report(self) -> None:
        """A gate report has the regressed cases' diffs and the worst cases first with their
        reasons in words."""
        gate, cand = _gate()
        view = report_view(cand, source="c.json", gate=gate)
        x = report_extras(view, cand, gate=gate)

        assert ["a"] == list(x.diffs)
        assert x.diffs["a"].regressed and x.diffs["a"].baseline_run == "run-1"
        # worst first: the error, then a's wrong answer; each with its reasons in words
        assert [("c", "#row-2"), ("a", "#case-0")] == [(w.id, w.href) for w in x.worst]
        assert ("the call failed (timeout)",) == x.worst[0].reasons
        assert "answer incorrect" in x.worst[1].reasons
        assert ["en", "refund", "zh"] == [t.tag for t in x.tags]
        assert {"regressed": 1, "improved": 1} == {
            f.key: f.count for f in x.table.filters if f.key in ("regressed", "improved")
        }

    def test_the_page_has_both_sides_the_tags_and_the_filters(self) -> None:
        """The gate's HTML report shows a regressed case's baseline diff, the tag table, the
        worst reasons and the filters."""
        gate, cand = _gate()
        view = report_view(cand, source="c.json", gate=gate)
        html = PageRenderer().report(view, report_extras(view, cand, gate=gate))

        case = html[html.index('id="case-0"') :]
        assert case.index('class="baseline-diff"') < case.index("<h3>Question</h3>")
        assert '<del class="removed">3-5</del>' in html and '<ins class="added">七</ins>' in html
        assert 'data-mark="moved"' in html
        assert '<table class="by-tag">' in html and 'data-tag="refund"' in html
        assert '<ol class="worst-reasons">' in html
        for key in ("all", "failed", "errored", "regressed", "improved", "tag-0", "tag-2"):
            assert f'<input type="radio" name="case-filter" id="f-{key}"' in html
        assert "#f-regressed:checked ~ table.case-table tbody tr:not(.is-regressed)" in html
        assert "<script" not in html

    def test_a_run_report_lists_the_worst_with_reasons_and_no_diff(self) -> None:
        """A run report lists the worst cases with reasons and shows no baseline diff."""
        cand = report(CANDIDATE)
        view = report_view(cand, source="c.json")
        x = report_extras(view, cand)
        html = PageRenderer().report(view, x)

        assert ({}, False) == (x.diffs, x.table.has_baseline)
        assert [w.id for w in x.worst] == [c.id for c in view.worst]
        assert "the call failed (timeout)" in html and 'class="baseline-diff"' not in html


def test_record_moves_is_the_case_diffs_phrases() -> None:
    """One case's moves are what the gate's case diff lists for it."""
    before, after = BASELINE[0], CANDIDATE[0]
    worse, _ = record_moves(before, after)
    gate, _ = _gate()

    assert worse == gate.case_diff.regressed[0].changes
    assert ((), ()) == record_moves(before, before)
    assert ((), ("answer incorrect → correct", "recall 0.00 → 1.00", "RR 0.00 → 1.00")) == (
        record_moves(BASELINE[3], CANDIDATE[3])[0],
        record_moves(BASELINE[3], CANDIDATE[3])[1][:3],
    )
    assert (("new error timeout: timeout talking to the target",), ()) == record_moves(
        before, replace(before, outcome=BASELINE[2].outcome)
    )

"""One verdict vocabulary: the case view, the daemon's case table and the HTML report's case
table say the same words for the same case (docs/status-page.md), with the same colour."""

from __future__ import annotations

import re

import pytest

from evaluator.models import CaseRecord
from evaluator.pages.case import case_view
from evaluator.pages.cases import CaseQuery, case_table, table_view
from evaluator.pages.render import PageRenderer
from evaluator.pages.report import report_view
from evaluator.pages.report_extras import report_extras
from evaluator.pages.report_table import report_case_table
from evaluator.repeat_summary import VERDICT_PASSED, VERDICT_WORDS, verdict_word
from tests.support.records import record, report

#: one case of each verdict, and the word every table and view must say for it
CASES: list[tuple[str, CaseRecord]] = [
    ("correct", record("answered-right")),
    ("incorrect", record("answered-wrong", correct=False)),
    # retrieval-only: no answer mapped, so no answer check; retrieval decides
    ("relevant retrieved", record("retrieval-hit", correct=None, answer=None)),
    ("relevant missed", record("retrieval-miss", correct=None, answer=None, recall=0.0, rr=0.0)),
    # an unanswerable case without a refusal check, and ids not mapped: nothing to decide
    ("not checked", record("unanswerable", correct=None, unanswerable=True)),
    ("not checked", record("ids-unmapped", correct=None, answer=None, recall=None, rr=None)),
    ("error", record("timed-out", error="timeout")),
]


@pytest.mark.parametrize(("word", "case"), CASES, ids=[c.id for _, c in CASES])
def test_a_case_has_one_verdict_word(word: str, case: CaseRecord) -> None:
    """The answer check decides, else retrieval, else nothing is checked; a failed call is an
    error."""
    assert word == verdict_word(case)


def test_every_word_says_whether_the_case_passed() -> None:
    """Each word of the vocabulary maps to a pass, a fail or neither (an error is neither)."""
    assert set(VERDICT_WORDS) == set(VERDICT_PASSED)
    assert {"correct", "relevant retrieved"} == {w for w, p in VERDICT_PASSED.items() if p}
    assert {"incorrect", "relevant missed"} == {w for w, p in VERDICT_PASSED.items() if p is False}


def _badges(html: str, selector_class: str) -> dict[str, tuple[str, str]]:
    """case id -> (badge classes, word) of each row of a rendered table."""
    out = {}
    for row in re.findall(r"<tr[^>]*>.*?</tr>", html, flags=re.S):
        found = re.search(r'data-(?:case-)?id="([^"]+)"', row)
        badge = re.search(rf'<span class="badge ({selector_class}[^"]*)">([^<]+)</span>', row)
        if found and badge:
            out[found.group(1)] = (badge.group(1).split()[-1], badge.group(2))
    return out


def test_both_case_tables_and_the_case_view_say_the_same_word_in_the_same_colour() -> None:
    """A retrieval-only case was "pass" in the HTML report's table and "not scored" in the
    case view; now every case reads the same in the daemon's table, the report's table and
    its case section."""
    cases = [c for _, c in CASES]
    run = report(cases)
    renderer = PageRenderer()

    daemon = table_view(
        case_table(run, regressed=None, stability=None, redact=str),
        CaseQuery(),
        href=lambda params: "/case-table",
        case_href=lambda case_id: f"/case?id={case_id}",
    )
    daemon_html = renderer.case_table(daemon, run_age="")
    view = report_view(run, source="run.json", worst=len(cases))
    report_html = renderer.report(view, report_extras(view, run, worst=len(cases)))
    static = report_case_table(cases, href=lambda _: None)

    words = {c.id: w for w, c in CASES}
    assert words == {r.id: r.verdict for r in daemon.rows}
    assert words == {r.id: r.verdict for r in static.rows}
    assert words == {c.id: case_view(c, k=5).verdict for c in cases}
    colours = {"correct": "ok", "relevant retrieved": "ok", "incorrect": "bad"}
    colours |= {"relevant missed": "bad", "error": "bad", "not checked": "na"}
    expected = {c.id: (colours[w], w) for w, c in CASES}
    assert expected == _badges(daemon_html, "verdict-")
    assert expected == _badges(report_html.split('class="case-table"', 1)[1], "")
    sections = dict(
        re.findall(r'<h2><span class="id">([^<]+)</span> <span class="badge (\w+)">', report_html)
    )
    worst = {c.id: colours[w] for w, c in CASES if c.id in sections}
    assert worst and worst == sections

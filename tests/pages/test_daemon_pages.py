"""The daemon's status page and case view, driven in a real headless Chromium."""

from __future__ import annotations

from urllib.parse import urlencode

import httpx
import pytest

from tests.pages.conftest import SECRET, RunningDaemon, Tab

pytestmark = pytest.mark.e2e


def _case_url(daemon: RunningDaemon, target: str, dataset: str, case_id: str) -> str:
    return f"{daemon.url}/case?" + urlencode({"target": target, "dataset": dataset, "id": case_id})


def test_the_status_page_shows_every_job_with_its_last_run(daemon: RunningDaemon, tab: Tab) -> None:
    """In Chromium, the live daemon's status page shows each of its jobs with its last run."""
    page = tab.page
    response = page.goto(daemon.url + "/")

    assert response is not None and 200 == response.status
    sections = page.locator("section.job")
    assert 3 == sections.count()
    headings = [sections.nth(i).locator("h2 .job-name").inner_text() for i in range(3)]
    assert ["reference / rag_cases", "reference / example", "hostile / hostile"] == headings
    rag = sections.nth(0)
    assert "complete" in rag.locator("dl.kv .badge").first.inner_text()
    # healthy: nothing changed (no gate, no history verdict, a complete run), said in words:
    # without a baseline the words do not claim one
    assert "green" == rag.get_attribute("data-state")
    assert "green" == rag.locator("h2 .badge").inner_text()
    assert "no change in history (no baseline configured)" == rag.locator("p.reason").inner_text()
    assert "138 · 138 scored · 0 failed" in rag.locator("dl.kv").inner_text()
    # one trend line per main metric, drawn as inline SVG
    assert rag.locator(".trend svg polyline").count() >= 4
    # the planted mislabel is listed by the label audit, linked to its case view
    suspect = rag.locator("ul.suspect-labels li")
    assert 1 == suspect.count()
    assert (
        "zh-refund-arrival-mislabelled: suspect label: '七天' is in none of the relevant evidence"
        == suspect.inner_text()
    )
    assert rag.locator("ol.worst li").count() == 5
    assert [] == tab.errors


def test_the_status_page_works_without_javascript(daemon: RunningDaemon, tab_no_js: Tab) -> None:
    """With JavaScript off, the status page shows every job and its links open the case view."""
    page = tab_no_js.page
    page.goto(daemon.url + "/")

    assert 3 == page.locator("section.job").count()
    page.locator("ul.suspect-labels a").first.click()
    assert "/case?" in page.url
    assert "zh-refund-arrival-mislabelled" in page.locator("h2").first.inner_text()
    assert [] == tab_no_js.errors


def test_the_case_view_of_a_failing_case_highlights_the_right_facts(
    daemon: RunningDaemon, tab: Tab
) -> None:
    """zh-refund-deadline: the answer lacks '七天'; the relevant text holds it, marked."""
    page = tab.page
    page.goto(_case_url(daemon, "reference", "rag_cases", "zh-refund-deadline"))

    assert "incorrect" in page.locator("h2 .badge").first.inner_text()
    assert ["'七天' (or '7天') — missing"] == page.locator("ol.expected li").all_inner_texts()
    assert 0 == page.locator(".answer mark").count()
    assert (
        "missing from the answer: '七天' (or '7天')" == page.locator(".missing-facts").inner_text()
    )
    relevant = page.locator("ol.ranking li.relevant")
    assert 1 == relevant.count()
    assert "refund-policy-zh-1" == relevant.locator(".id").inner_text()
    marks = [m.removesuffix("1") for m in relevant.locator("mark").all_inner_texts()]
    assert ["七天", "7天", "7天"] == marks
    # nothing else is marked relevant, and no other text holds the fact
    assert 0 == page.locator("ol.ranking li:not(.relevant) mark").count()
    assert page.locator("table.citations").count() == 1
    assert "latency (measured)" in page.locator("table.stages").inner_text()
    assert [] == tab.errors


def test_a_found_fact_is_highlighted_in_the_answer(daemon: RunningDaemon, tab: Tab) -> None:
    """The case view marks a found expected fact where the answer writes it."""
    page = tab.page
    page.goto(_case_url(daemon, "reference", "rag_cases", "zh-refund-alipay"))

    assert "correct" == page.locator("h2 .badge").first.inner_text()
    assert ["24小时"] == [
        m.removesuffix("1") for m in page.locator(".answer mark").all_inner_texts()
    ]
    assert ["'24小时' — found"] == page.locator("ol.expected li").all_inner_texts()
    assert [] == tab.errors


def test_endpoint_html_is_shown_as_text_and_secrets_are_masked(
    daemon: RunningDaemon, tab: Tab
) -> None:
    """An answer, an id, a text and a stage name full of markup stay text; no script runs."""
    page = tab.page
    page.goto(_case_url(daemon, "hostile", "hostile", "hostile-1"))
    html = page.content()

    assert "hostile-1 · hostile / hostile" == page.title()
    assert 0 == page.locator("script").count() == page.locator("main img").count()
    answer = page.locator(".answer").inner_text()
    assert "<script>document.title='pwned'</script>" in answer
    assert "<img src=x onerror=\"document.title='pwned'\">" in answer
    assert "<b>doc-1</b>" == page.locator("ol.ranking li.relevant .id").inner_text()
    # stage names are sanitised by the runner ('<i>stage</i>' -> 'i_stage_i'): no markup left
    assert 0 == page.locator("table.stages i").count()
    assert SECRET not in html and "token ***" in answer
    assert [] == tab.errors
    page.goto(daemon.url + "/")
    assert SECRET not in page.content() and "pwned" not in page.title()
    assert [] == tab.errors


def test_pages_forbid_scripts_and_unknown_cases_are_404(daemon: RunningDaemon) -> None:
    """The pages' policy allows nothing by default (no scripts); an unknown case is a 404 saying
    so, and /case without parameters a 400."""
    with httpx.Client(base_url=daemon.url, timeout=5) as http:
        page = http.get("/")
        missing = http.get(
            "/case", params={"target": "reference", "dataset": "rag_cases", "id": "nope"}
        )
        bare = http.get("/case")

    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "text/html; charset=utf-8" == page.headers["content-type"]
    assert (404, 400) == (missing.status_code, bare.status_code)
    assert "no such case in the last run" in missing.text
    assert "<h1>Not found</h1>" in missing.text


def test_case_query_parameters_are_validated_with_clear_400s(daemon: RunningDaemon) -> None:
    """The case view answers 400 with a message naming the parameter to a query it cannot
    serve."""
    with httpx.Client(base_url=daemon.url, timeout=5) as http:
        no_job = http.get("/case", params={"id": "zh-refund-deadline"})
        long_id = http.get(
            "/case", params={"target": "reference", "dataset": "rag_cases", "id": "x" * 1001}
        )

    assert (400, 400) == (no_job.status_code, long_id.status_code)
    assert "pass ?target=..&amp;dataset=.. (the daemon runs 3 jobs)" in no_job.text
    assert "id: at most 1000 characters" in long_id.text
    assert "<h1>Bad request</h1>" in long_id.text


def test_the_status_page_links_each_job_to_its_case_table(
    daemon: RunningDaemon, tab_no_js: Tab
) -> None:
    """Each job's section links its case table; the hostile job's is escaped and masked."""
    page = tab_no_js.page
    page.goto(daemon.url + "/")
    links = page.locator("section.job a.case-table")
    assert ["all 138 cases", "all 8 cases", "all 2 cases"] == links.all_inner_texts()
    links.nth(2).click()
    assert "Cases of hostile / hostile" == page.locator("h1").inner_text()
    assert ["hostile-1", "hostile-2"] == page.locator("table.cases a.id").all_inner_texts()
    assert "<script>alert(2)</script>?" in page.locator("table.cases").inner_text()
    assert 0 == page.locator("script").count()
    assert SECRET not in page.content()
    assert [] == tab_no_js.errors


def test_the_case_table_names_its_job_and_refuses_what_it_cannot_serve(
    daemon: RunningDaemon,
) -> None:
    """The case table answers 400 or 404 with a message to a missing or unknown job, a bad tag,
    a repeated or oversized parameter."""
    with httpx.Client(base_url=daemon.url, timeout=5) as http:
        several = http.get("/case-table")
        unknown = http.get("/case-table", params={"target": "reference", "dataset": "nope"})
        bad_tag = http.get(
            "/case-table", params={"target": "reference", "dataset": "rag_cases", "tag": "x"}
        )
        repeated = http.get("/case-table?target=reference&dataset=rag_cases&sort=rr&sort=id")
        huge = http.get("/case-table", params={"target": "reference", "q": "x" * 1001})

    assert (400, 404, 400, 400, 400) == tuple(
        r.status_code for r in (several, unknown, bad_tag, repeated, huge)
    )
    assert "pass ?target=..&amp;dataset=.. (the daemon runs 3 jobs)" in several.text
    assert "no such job" in unknown.text and "<h1>Not found</h1>" in unknown.text
    assert "tag: &#39;x&#39; is no tag of this job (its tags: account, company, " in bad_tag.text
    assert "sort: given more than once" in repeated.text
    assert "at most 20 parameters of at most 1000 characters" in huge.text
    assert "form-action 'self'" in several.headers["content-security-policy"]

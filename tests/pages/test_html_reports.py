"""``--html`` reports of run, gate and report, opened from disk in a real headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from evaluator.models import CaseRecord
from evaluator.repeat_summary import verdicts
from evaluator.report import read_report
from tests.pages.conftest import SECRET, Tab
from tests.pages.stack import EVALUATOR, REPO, clean_env
from tests.support.loopback import LoopbackServer
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

GOLDEN = REPO / "evals" / "rag_cases.jsonl"


def _evaluator(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALUATOR, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=clean_env(**(env or {})),
    )


@pytest.fixture(scope="module")
def gate_reports(
    reference_server: ReferenceServer, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A baseline run and a candidate run with the reranker switched to noise."""
    folder = tmp_path_factory.mktemp("gate")
    url = reference_server.url + "/rag"
    try:
        reference_server.failure_modes.set([])
        base = _evaluator(
            "run",
            "--dataset",
            str(GOLDEN),
            "--target-url",
            url,
            "--output",
            "baseline.json",
            cwd=folder,
        )
        assert 0 == base.returncode, base.stderr
        reference_server.failure_modes.set(["rerank_degraded"])
        cand = _evaluator(
            "run",
            "--dataset",
            str(GOLDEN),
            "--target-url",
            url,
            "--output",
            "candidate.json",
            cwd=folder,
        )
        assert 0 == cand.returncode, cand.stderr
    finally:
        reference_server.failure_modes.set([])
    return folder


def test_the_html_report_of_a_failing_gate_shows_failing_rules_and_the_worst_case(
    gate_reports: Path, tab: Tab
) -> None:
    """A failing gate's --html report shows its failing rules and the worst case (Chromium)."""
    result = _evaluator(
        "gate",
        "--baseline",
        "baseline.json",
        "--candidate",
        "candidate.json",
        "--html",
        "gate.html",
        "--worst",
        "3",
        cwd=gate_reports,
    )
    assert 2 == result.returncode, result.stderr
    failing = re.findall(r"^FAIL (\w+):", result.stdout, re.M)
    worst = re.search(r"^regressed, worst first:\n  ([\w-]+):", result.stdout, re.M)
    assert failing and worst is not None

    page = tab.page
    page.goto((gate_reports / "gate.html").as_uri())

    assert page.locator("h1").inner_text().startswith("FAIL gate FAILED:")
    rules = page.locator("tr.rule")
    shown_failing = [
        rules.nth(i).locator("td").nth(1).inner_text().split(":")[0]
        for i in range(rules.count())
        if rules.nth(i).locator(".badge").inner_text() == "FAIL"
    ]
    assert failing == shown_failing
    assert worst.group(1) == page.locator("ol.regressed li a").first.inner_text()
    # the worst case comes with its evidence: its ranking and texts, relevant ids marked
    href = page.locator("ol.regressed li a").first.get_attribute("href")
    assert href is not None
    case = page.locator(f"#{href[1:]}")
    assert case.locator("ol.ranking li").count() >= 1
    assert case.locator("ol.ranking li.relevant").count() >= 1
    assert case.locator(".evidence").count() >= 1
    assert (
        "suspect label: '七天' is in none of the relevant evidence"
        in page.locator("ul.suspect-labels").inner_text()
    )
    assert 0 == page.locator("script, link, img").count()
    assert [] == tab.errors


def test_evaluator_report_writes_the_same_html_with_exit_0(gate_reports: Path, tab: Tab) -> None:
    """`evaluator report` of a failing pair writes the gate's HTML report and exits 0."""
    result = _evaluator(
        "report",
        "candidate.json",
        "--baseline",
        "baseline.json",
        "--html",
        "report.html",
        cwd=gate_reports,
    )

    assert 0 == result.returncode, result.stderr
    assert "html: report.html" in result.stdout
    tab.page.goto((gate_reports / "report.html").as_uri())
    assert tab.page.locator("h1").inner_text().startswith("FAIL gate FAILED:")
    assert [] == tab.errors


def test_run_html_shows_a_script_answer_as_text_without_the_secret(
    hostile: LoopbackServer, tmp_path: Path, tab: Tab
) -> None:
    """A service answering with markup and script: `run --html` shows it as text, runs nothing and
    masks the secret."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"id": "x", "question": "q", "relevant_ids": ["<b>doc-1</b>"], '
        '"expected_facts": ["七天"]}\n',
        "utf-8",
    )
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'[[targets]]\nname = "hostile"\nurl = "{hostile.url}"\n'
        '[targets.request.headers]\nAuthorization = "Bearer ${PAGES_TOKEN}"\n'
        f'[[jobs]]\ntarget = "hostile"\ndataset = "{golden}"\n',
        "utf-8",
    )
    result = _evaluator(
        "run",
        "--config",
        str(config),
        "--output",
        "run.json",
        "--html",
        "run.html",
        cwd=tmp_path,
        env={"PAGES_TOKEN": SECRET},
    )
    assert 0 == result.returncode, result.stderr

    html = (tmp_path / "run.html").read_text("utf-8")
    tab.page.goto((tmp_path / "run.html").as_uri())
    assert "pwned" not in tab.page.title()
    assert 0 == tab.page.locator("script").count()
    assert "<script>document.title='pwned'</script>" in tab.page.locator(".answer").inner_text()
    assert SECRET not in html
    assert [] == tab.errors


def _by_tag(text: str) -> dict[str, tuple[int, dict[str, str]]]:
    """The terminal's "by tag:" lines: tag -> (cases, {label: value})."""
    lines = text.split("\nby tag:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    out = {}
    for line in lines:
        tag, count, rest = re.fullmatch(r"  (\S+)\s+(\d+) cases  (.*)", line).groups()  # type: ignore[union-attr]
        out[tag] = (int(count), dict(re.findall(r"(\w+) (\d\.\d\d)", rest)))
    return out


def _said(record: CaseRecord) -> str:
    """A case's verdict in the words of docs/status-page.md: its answer check, else
    whether a relevant id reached the top K, else nothing checked."""
    answer, hit = verdicts(record)
    if record.scores is None:
        return "error"
    if answer is not None:
        return "correct" if answer else "incorrect"
    if hit is not None:
        return "relevant retrieved" if hit else "relevant missed"
    return "not checked"


def _failed(record: CaseRecord) -> bool:
    """The case's verdict is a fail: its answer check, else retrieval."""
    answer, hit = verdicts(record)
    return (answer if answer is not None else hit) is False


def test_the_gate_html_puts_the_baseline_beside_the_candidate_with_the_texts_by_tag_numbers(
    gate_reports: Path, tab: Tab
) -> None:
    """Each regressed case shows the baseline's ranking, answer and citations beside the
    candidate's, differences marked; the by-tag table's numbers are the terminal's."""
    gate = _evaluator(
        "gate", "--baseline", "baseline.json", "--candidate", "candidate.json",
        "--html", "side.html", "--worst", "5", cwd=gate_reports,
    )  # fmt: skip
    assert 2 == gate.returncode, gate.stderr
    texts = {
        side: _evaluator("report", f"{side}.json", cwd=gate_reports)
        for side in ("baseline", "candidate")
    }
    assert all(0 == t.returncode for t in texts.values())
    baseline_tags, candidate_tags = (_by_tag(texts[s].stdout) for s in ("baseline", "candidate"))
    reports = {s: read_report(gate_reports / f"{s}.json") for s in ("baseline", "candidate")}
    cases = {s: {c.id: c for c in r.cases} for s, r in reports.items()}

    page = tab.page
    page.goto((gate_reports / "side.html").as_uri())

    # by tag: every tag of the terminal's output, each cell its number on both sides
    rows = page.locator("table.by-tag tbody tr")
    shown = [rows.nth(i).get_attribute("data-tag") for i in range(rows.count())]
    assert list(candidate_tags) == shown
    for i, tag in enumerate(shown):
        assert tag is not None
        count, values = candidate_tags[tag]
        assert str(count) == rows.nth(i).locator("td").nth(1).inner_text()
        for label, value in values.items():
            cell = rows.nth(i).locator(f'td[data-label="{label}"]')
            assert value == cell.locator(".now").inner_text()
            assert baseline_tags[tag][1][label] == cell.locator(".was").inner_text()

    # the regressed cases, worst first, each with its two sides
    regressed = page.locator("ol.regressed li a")
    assert regressed.count() == 5
    marked = 0
    for i in range(regressed.count()):
        case_id = regressed.nth(i).inner_text()
        href = regressed.nth(i).get_attribute("href")
        assert href is not None
        diff = page.locator(f"{href} .baseline-diff")
        before, after = cases["baseline"][case_id], cases["candidate"][case_id]
        ranking = diff.locator("table.ranking-diff tbody tr")
        columns = [
            [
                ranking.nth(r).locator("td").nth(col).get_attribute("data-id")
                for r in range(ranking.count())
            ]
            for col in (1, 2)
        ]
        assert list(before.ranked_ids[:20]) == [i for i in columns[0] if i is not None]
        assert list(after.ranked_ids[:20]) == [i for i in columns[1] if i is not None]
        # an id is marked "only" exactly when the other ranking lacks it
        for col, other in ((1, after), (2, before)):
            for r in range(ranking.count()):
                cell = ranking.nth(r).locator("td").nth(col)
                doc_id = cell.get_attribute("data-id")
                if doc_id is None:
                    continue
                only = "only" == cell.get_attribute("data-mark")
                assert only == (doc_id not in other.ranked_ids), (case_id, doc_id)
        assert (before.answer or "") == diff.locator(".answer-diff.baseline").inner_text()
        assert (after.answer or "") == diff.locator(".answer-diff.candidate").inner_text()
        verdicts = diff.locator("table.side-scores tbody tr").first.locator("td")
        assert ["verdict", _said(before), _said(after)] == verdicts.all_inner_texts()
        assert diff.locator("table.citation-diff, p.muted").count() >= 1
        marked += diff.locator("[data-mark=only], [data-mark=moved], del, ins").count()
    # the reranker's noise moved documents: the marks are there to be seen
    assert marked > 0
    assert 0 == page.locator("script, link, img").count()
    assert [] == tab.errors


def test_the_case_table_filters_work_without_javascript(gate_reports: Path, tab_no_js: Tab) -> None:
    """The static report's filters are CSS: clicking one (no script runs) leaves exactly the
    rows it names visible."""
    gate = _evaluator(
        "gate", "--baseline", "baseline.json", "--candidate", "candidate.json",
        "--html", "table.html", "--format", "json", cwd=gate_reports,
    )  # fmt: skip
    assert 2 == gate.returncode, gate.stderr
    result = json.loads(gate.stdout)
    regressed = {c["id"] for c in result["cases"]["regressed"]}
    candidate = read_report(gate_reports / "candidate.json")
    every = [c.id for c in candidate.cases]
    zh = [c.id for c in candidate.cases if "zh" in c.case.tags]
    failed = [c.id for c in candidate.cases if _failed(c)]
    assert regressed and zh and failed

    page = tab_no_js.page
    page.goto((gate_reports / "table.html").as_uri())

    def visible() -> list[str | None]:
        rows = page.locator("table.case-table tbody tr:visible")
        return [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]

    assert every == visible()
    page.locator('label[for="f-regressed"]').click()
    assert sorted(regressed) == sorted(i for i in visible() if i is not None)
    assert f"regressed {len(regressed)}" == page.locator('label[for="f-regressed"]').inner_text()
    page.locator("label.tag-filter", has_text=re.compile(r"^tag zh \d+$")).click()
    assert zh == visible()
    page.locator('label[for="f-failed"]').click()
    assert failed == visible()
    page.locator('label[for="f-all"]').click()
    assert every == visible()
    assert [] == tab_no_js.errors

"""``--html`` reports of run, gate and report, opened from disk in a real headless Chromium."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

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

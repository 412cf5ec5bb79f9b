"""The judge's panel, live: ``evaluator serve`` judging the reference golden set with the
reference service's demo judge, its case view showing each check's verdict, reason,
unsupported claims and the shipped human label; the same panel in ``evaluator report
--html``; both driven in a real headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import Locator

from evaluator.judge.labels import Label, append_label
from evaluator.judge.record import answer_hash
from tests.pages.conftest import HOSTILE_GOLDEN, SECRET, RunningDaemon, Tab
from tests.pages.stack import EVALUATOR, REPO, clean_env, serving, wait_for
from tests.support.loopback import LoopbackServer
from tests.support.ports import free_port
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

SHIPPED_LABELS = REPO / "evals" / "labels" / "rag_cases.jsonl"


def _config(folder: Path, port: int, reference: str, hostile: str, labels: Path) -> Path:
    golden = folder / "hostile.jsonl"
    golden.write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in HOSTILE_GOLDEN), "utf-8"
    )
    config = folder / "evaluator.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / "reports"}"
log_format = "json"
[judge]
url = "{reference}/v1/chat/completions"
model = "reference-demo-judge"
drift_labels = "{labels}"
[[targets]]
name = "reference"
url = "{reference}/rag"
[[targets]]
name = "hostile"
url = "{hostile}"
[targets.request.headers]
Authorization = "Bearer ${{PAGES_TOKEN}}"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
interval_seconds = 3600
[[jobs]]
target = "hostile"
dataset = "{golden}"
interval_seconds = 3600
""",
        "utf-8",
    )
    return config


@pytest.fixture(scope="module")
def judged_daemon(
    reference_server: ReferenceServer, hostile: LoopbackServer
) -> Iterator[RunningDaemon]:
    """A daemon judging both jobs with the demo judge; its labels a copy of the shipped ones
    (a test appends to it)."""
    reference_server.failure_modes.set([])
    folder = Path(tempfile.mkdtemp(prefix="evaluator-judge-pages-"))
    labels = folder / "labels.jsonl"
    shutil.copyfile(SHIPPED_LABELS, labels)
    port = free_port()
    config = _config(folder, port, reference_server.url, hostile.url, labels)
    url = f"http://127.0.0.1:{port}"
    log = folder / "serve.log"
    try:
        with serving(
            [EVALUATOR, "serve", "--config", str(config)],
            cwd=folder,
            env=clean_env(PAGES_TOKEN=SECRET),
            log=log,
        ) as process:
            paths = [
                "/reports/latest?target=reference&dataset=rag_cases",
                "/reports/latest?target=hostile&dataset=hostile",
            ]
            wait_for(url, paths, process, log)
            yield RunningDaemon(url, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _case(daemon: RunningDaemon, case_id: str, target: str = "reference") -> str:
    dataset = "rag_cases" if target == "reference" else "hostile"
    return f"{daemon.url}/case?" + urlencode({"target": target, "dataset": dataset, "id": case_id})


def _row(tab: Tab, check: str) -> Locator:
    return tab.page.locator(f'.judge-panel tr.judge-check[data-check="{check}"]')


def test_the_case_view_shows_where_the_judge_and_the_human_disagree(
    judged_daemon: RunningDaemon, tab: Tab
) -> None:
    """zh-return-pickup-fee quotes the large-appliance fee as the general one: the demo judge
    (token overlap) calls it grounded, the shipped human label does not, and the page says so."""
    response = tab.page.goto(_case(judged_daemon, "zh-return-pickup-fee"))
    assert response is not None and 200 == response.status
    panel = tab.page.locator(".judge-panel")
    assert "reference-demo-judge · prompts judge-prompts-2" in panel.locator("h3").inner_text()
    facts, grounded = _row(tab, "fact_support"), _row(tab, "groundedness")
    assert "fail" == facts.locator(".judge-verdict").inner_text()
    assert "fail" == facts.locator(".human-label .badge").first.inner_text()
    assert "the judge agrees" in facts.locator(".human-label").inner_text()
    assert "pass" == grounded.locator(".judge-verdict").inner_text()
    assert "2 of 2 sentences in the evidence" in grounded.locator(".judge-reason").inner_text()
    human = grounded.locator(".human-label")
    assert "fail" == human.locator(".badge").first.inner_text()
    assert "the judge disagrees" == human.locator(".label-disagrees").inner_text()
    assert "large-appliance" in human.locator(".label-note").inner_text()
    assert "judge-helper-2" in human.inner_text()
    assert str(judged_daemon.folder / "labels.jsonl") in panel.inner_text()
    # no calibration was stored in this daemon's reports folder
    assert "uncalibrated" in panel.inner_text()
    assert [] == tab.errors


def test_the_unsupported_claims_are_listed(judged_daemon: RunningDaemon, tab: Tab) -> None:
    """en-locker quotes its evidence word for word; the demo judge counts the citation
    marker as an unsupported sentence: listed as the claim it found unsupported."""
    tab.page.goto(_case(judged_daemon, "en-locker"))
    grounded = _row(tab, "groundedness")
    assert "fail" == grounded.locator(".judge-verdict").inner_text()
    assert "faithfulness 0.50" in grounded.inner_text()
    assert ["[1]"] == grounded.locator(".unsupported-claims li").all_inner_texts()
    assert "pass" == grounded.locator(".human-label .badge").first.inner_text()


def test_a_refusal_is_judged_and_labelled(judged_daemon: RunningDaemon, tab: Tab) -> None:
    """An unanswerable case's page shows only the refusal check, its verdict and values, and the
    human label agreeing."""
    tab.page.goto(_case(judged_daemon, "en-un-ceo"))
    rows = tab.page.locator(".judge-panel tr.judge-check")
    assert ["refusal"] == [rows.nth(i).get_attribute("data-check") for i in range(rows.count())]
    refusal = _row(tab, "refusal")
    assert "fail" == refusal.locator(".judge-verdict").inner_text()
    assert "refused no" in refusal.inner_text()
    assert "the judge agrees" in refusal.locator(".human-label").inner_text()


def test_a_label_given_while_the_daemon_runs_shows_on_the_next_view(
    judged_daemon: RunningDaemon, tab: Tab
) -> None:
    """A refusal of an answerable case makes no claim: no groundedness verdict and no
    shipped label; a reviewer's label appended to the file shows without a restart."""
    labels = judged_daemon.folder / "labels.jsonl"
    tab.page.goto(_case(judged_daemon, "en-promo-emails"))
    grounded = _row(tab, "groundedness")
    assert "no verdict" == grounded.locator(".judge-verdict").inner_text()
    assert "not labelled" == grounded.locator(".human-label").inner_text()
    answer = "There is not enough evidence to answer this question."
    append_label(
        labels,
        Label("en-promo-emails", answer_hash(answer), "groundedness", False, "bo",
              "2026-12-03T10:00:00Z", "claims the evidence lacks what it says"),
    )  # fmt: skip
    tab.page.goto(_case(judged_daemon, "en-promo-emails"))
    human = _row(tab, "groundedness").locator(".human-label")
    assert "fail" == human.locator(".badge").first.inner_text()
    assert "bo, 2026-12-03T10:00:00Z" in human.inner_text()
    assert 0 == human.locator(".label-disagrees").count()  # no judge verdict to disagree with


def test_a_hostile_answer_quoted_by_the_judge_is_masked_and_inert(
    judged_daemon: RunningDaemon, tab: Tab
) -> None:
    """The demo judge quotes the hostile answer's sentences as unsupported claims: the page
    shows them as text, with the target's secret masked."""
    response = httpx.get(_case(judged_daemon, "hostile-1", "hostile"), timeout=10)
    assert 200 == response.status_code and SECRET not in response.text
    tab.page.goto(_case(judged_daemon, "hostile-1", "hostile"))
    assert "pwned" not in tab.page.title() and 0 == tab.page.locator("script").count()
    claims = _row(tab, "groundedness").locator(".unsupported-claims li").all_inner_texts()
    assert any("<script>" in c for c in claims)
    assert not any(SECRET in c for c in claims)
    assert "not labelled" in _row(tab, "fact_support").locator(".human-label").inner_text()
    assert [] == tab.errors


def test_the_html_report_shows_the_panel_with_the_configured_labels(
    judged_daemon: RunningDaemon, tab: Tab, tmp_path: Path
) -> None:
    """``evaluator report --html`` of the daemon's judged report: the worst cases carry the
    judge's panel, with the labels of the judge's drift_labels setting."""
    latest = httpx.get(
        f"{judged_daemon.url}/reports/latest?target=reference&dataset=rag_cases", timeout=10
    )
    report = tmp_path / "judged.json"
    report.write_bytes(latest.content)
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'[judge]\nurl = "http://127.0.0.1:9/v1/chat/completions"\nmodel = "m"\n'
        f'drift_labels = "{SHIPPED_LABELS}"\n'
        '[[targets]]\nname = "reference"\nurl = "http://127.0.0.1:9/rag"\n'
    )

    def html(*extra: str) -> str:
        out = tmp_path / "report.html"
        done = subprocess.run(
            [EVALUATOR, "report", str(report), "--html", str(out), "--worst", "40", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=clean_env(),
        )
        assert 0 == done.returncode, done.stderr
        return out.as_uri()

    tab.page.goto(html("--config", str(config)))
    panels = tab.page.locator(".case .judge-panel")
    assert panels.count() == tab.page.locator(".case").count() >= 10
    heading = tab.page.locator("h2 .id", has_text="zh-return-pickup-fee")
    pickup = tab.page.locator(".case", has=heading)
    grounded = pickup.locator('tr.judge-check[data-check="groundedness"]')
    assert "pass" == grounded.locator(".judge-verdict").inner_text()
    assert "the judge disagrees" in grounded.locator(".human-label").inner_text()
    assert str(SHIPPED_LABELS) in panels.first.inner_text()
    assert [] == tab.errors
    # without a labels file configured the verdicts stand alone, and the page says so
    plain = tmp_path / "plain.toml"
    plain.write_text('[[targets]]\nname = "reference"\nurl = "http://127.0.0.1:9/rag"\n')
    tab.page.goto(html("--config", str(plain)))
    first = tab.page.locator(".case .judge-panel").first
    assert first.locator(".judge-check").count() >= 1
    assert "no labels file configured" in first.inner_text()

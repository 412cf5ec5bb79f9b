"""Conversations in the pages, in Chromium: the case view of a turn shows its whole
conversation (each turn's question, answer and verdict, the baseline's run of each turn
beside it when the job has a baseline), and the case table gives each turn's row a badge per
turn of its conversation.

A first daemon's healthy run of evals/conversations.jsonl against the reference service is
saved as the baseline; a second daemon runs it with ``history_ignored`` on, so the
follow-ups regress while the first turns hold.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from evaluator.repeat_summary import verdict_word
from evaluator.report import read_report
from tests.pages.conftest import Tab
from tests.pages.stack import EVALUATOR, REPO, clean_env, serving, wait_for
from tests.support.ports import free_port
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

LATEST = "/reports/latest?target=reference&dataset=conversations"
CONVERSATION = "zh-service-beijing"


def _config(folder: Path, port: int, url: str, extra: str = "") -> Path:
    """A daemon running the conversational golden set once against the reference service."""
    config = folder / f"evaluator-{port}.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / f"reports-{port}"}"
log_format = "json"
[[targets]]
name = "reference"
url = "{url}/rag"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "conversations.jsonl"}"
interval_seconds = 3600
{extra}
""",
        "utf-8",
    )
    return config


def test_a_turn_shows_its_conversation_beside_the_baseline(
    reference_server: ReferenceServer, tab: Tab, tmp_path: Path
) -> None:
    """The regressed second turn's view lists both turns in order, itself marked, each with
    the baseline's verdict beside the candidate's; its case-table row has a badge per turn."""
    try:
        reference_server.failure_modes.set([])
        port = free_port()
        first = f"http://127.0.0.1:{port}"
        log = tmp_path / "first.log"
        config = _config(tmp_path, port, reference_server.url)
        with serving([EVALUATOR, "serve", "--config", str(config)], cwd=tmp_path,
                     env=clean_env(), log=log) as process:  # fmt: skip
            wait_for(first, [LATEST], process, log)
            baseline_path = tmp_path / "baseline.json"
            baseline_path.write_bytes(httpx.get(first + LATEST, timeout=10).content)
        reference_server.failure_modes.set(["history_ignored"])
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        config = _config(tmp_path, port, reference_server.url, f'baseline = "{baseline_path}"')
        log = tmp_path / "serve.log"
        with serving([EVALUATOR, "serve", "--config", str(config)], cwd=tmp_path,
                     env=clean_env(), log=log) as process:  # fmt: skip
            wait_for(url, [LATEST], process, log)
            (tmp_path / "candidate.json").write_bytes(httpx.get(url + LATEST, timeout=10).content)
            baseline = {c.id: c for c in read_report(baseline_path).cases}
            candidate = {c.id: c for c in read_report(tmp_path / "candidate.json").cases}
            turns = [f"{CONVERSATION}#1", f"{CONVERSATION}#2"]

            page = tab.page
            page.goto(f"{url}/case?id={quote(turns[1])}")
            shown = page.locator(".conversation ol.turns > li")
            assert 2 == shown.count()
            assert ([candidate[t].case.question for t in turns], ["1", "2"], "current") == (
                [shown.nth(i).locator(".question").inner_text().split(" ", 1)[1] for i in range(2)],
                [shown.nth(i).get_attribute("data-turn") for i in range(2)],
                (shown.nth(1).get_attribute("class") or "").split()[-1],
            )
            sides = [shown.nth(i).locator(".turn-side .badge").all_inner_texts() for i in range(2)]
            assert [[verdict_word(baseline[t]), verdict_word(candidate[t])] for t in turns] == sides
            assert ["correct", "incorrect"] == sides[1]
            # turn 1 links to its own view; the second daemon's table badges each turn
            assert f"id={turns[0].replace('#', '%23')}" in (
                shown.nth(0).locator("a.turn-link").get_attribute("href") or ""
            )
            page.goto(f"{url}/case-table?target=reference&dataset=conversations&q={CONVERSATION}")
            row = page.locator(f'tr[data-case-id="{turns[1]}"]')
            badges = row.locator(".turn-badges a.turn")
            assert (["1", "2"], [verdict_word(candidate[t]) for t in turns]) == (
                badges.all_inner_texts(),
                [(badges.nth(i).get_attribute("title") or "").split(": ")[1] for i in range(2)],
            )
            assert [] == tab.errors
    finally:
        reference_server.failure_modes.set([])

"""Runbook links resolve out of the box: the daemon serves deploy/RUNBOOK.md (shipped in the
package) at /runbook, every shipped alert's ``runbook_url`` is that page at the daemon's
default address with the alert's section as anchor, and no rule file links a placeholder
host (example.com)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from evaluator.commands.slo_rules import DEFAULT_RUNBOOK_BASE
from evaluator.pages.runbook import RUNBOOK_SOURCE, anchor
from tests.support.prometheus import DaemonProcess

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
RULE_FILES = sorted((DEPLOY / "prometheus" / "rules").glob("*.yml"))


def _alerts() -> list[tuple[str, str]]:
    """(alert, runbook_url) of every alert of the shipped rule files."""
    return [
        (rule["alert"], rule["annotations"]["runbook_url"])
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text("utf-8"))["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


class _Ids(HTMLParser):
    """Every ``id`` of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


def test_the_package_ships_the_runbook() -> None:
    """The runbook the daemon serves is deploy/RUNBOOK.md."""
    assert (DEPLOY / "RUNBOOK.md").read_text("utf-8") == RUNBOOK_SOURCE.read_text("utf-8"), (
        "evaluator/pages/data/RUNBOOK.md must be a copy of deploy/RUNBOOK.md: "
        "cp deploy/RUNBOOK.md evaluator/pages/data/"
    )


def test_every_shipped_link_is_the_daemons_runbook_page() -> None:
    """Each alert links the daemon's /runbook at its default address, its section as the
    anchor; nothing under deploy/ links the placeholder host of before."""
    assert "http://127.0.0.1:9464/runbook" == DEFAULT_RUNBOOK_BASE
    for alert, url in _alerts():
        assert f"{DEFAULT_RUNBOOK_BASE}#{alert.lower()}" == url
    placeholders = [
        str(p.relative_to(REPO))
        for p in DEPLOY.rglob("*")
        if p.is_file()
        and p.suffix in (".yml", ".yaml", ".md", ".json", ".toml", ".py")
        and "example.com" in p.read_text("utf-8", errors="replace")
    ]
    assert [] == placeholders


@pytest.mark.e2e
def test_the_daemon_serves_every_linked_section(tmp_path: Path) -> None:
    """A real daemon, its pages behind a token: /runbook answers without the token, as a page
    holding a section for every alert under the anchor its link names."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "c", "question": "q", "relevant_ids": ["a"]}) + "\n")
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp_path / "reports"}"\nlog_format = "json"\n\n'
        f'[server]\ntoken = "s3cret-token"\n\n'
        f'[[targets]]\nname = "t"\nurl = "http://127.0.0.1:9/rag"\n\n'
        f'[[jobs]]\ntarget = "t"\ndataset = "{golden}"\ninterval_seconds = 3600\n'
        f"run_at_start = false\n",
        encoding="utf-8",
    )
    daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path).start()
    try:
        daemon.wait_ready()
        page = httpx.get(f"{daemon.url}{urlsplit(DEFAULT_RUNBOOK_BASE).path}", timeout=10)
        status = httpx.get(f"{daemon.url}/", timeout=10).status_code
    finally:
        daemon.stop()
    assert (200, 401) == (page.status_code, status)
    assert page.headers["content-type"].startswith("text/html")
    ids = _Ids()
    ids.feed(page.text)
    missing = [alert for alert, _ in _alerts() if anchor(alert) not in ids.ids]
    assert [] == missing
    assert re.search(r'<h2 id="ragevalgatefailing">RagEvalGateFailing</h2>', page.text)

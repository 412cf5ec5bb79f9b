"""Fixtures for the page tests: a real headless Chromium (Debian's), a daemon subprocess
running the reference service's golden sets plus a hostile endpoint, and saved reports."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from tests.pages.stack import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    EVALUATOR,
    REPO,
    clean_env,
    serving,
    wait_for,
)
from tests.reference.conftest import reference_server  # noqa: F401  (a session fixture)
from tests.support.loopback import LoopbackServer, Reply
from tests.support.ports import free_port
from tests.support.reference import ReferenceServer

__all__ = ["EVALUATOR", "REPO", "SECRET", "RunningDaemon", "Tab"]

#: the hostile endpoint's bearer token: it echoes it into answers, the pages must mask it
SECRET = "s3cr3t-pages-token-1f9a7c"
SCRIPT_ANSWER = (
    "<script>document.title='pwned'</script>退款 3-5个工作日 到账 "
    f"(token {SECRET}) <img src=x onerror=\"document.title='pwned'\">"
)


@dataclass
class Tab:
    """A browser page that records console errors and uncaught page errors."""

    page: Page
    errors: list[str] = field(default_factory=list)


# module scope, not session: while sync Playwright runs, its event loop occupies this
# thread and every later test's asyncio.run() would fail
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


def _tab(browser: Browser, *, javascript: bool) -> Iterator[Tab]:
    context = browser.new_context(
        java_script_enabled=javascript, viewport={"width": 1200, "height": 900}
    )
    page = context.new_page()
    tab = Tab(page)
    page.on("console", lambda m: tab.errors.append(m.text) if _is_error(m) else None)
    page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()


def _is_error(message: ConsoleMessage) -> bool:
    return message.type == "error"


@pytest.fixture
def tab(browser: Browser) -> Iterator[Tab]:
    """A tab with JavaScript on: a script that got through would run (and be caught)."""
    yield from _tab(browser, javascript=True)


@pytest.fixture
def tab_no_js(browser: Browser) -> Iterator[Tab]:
    yield from _tab(browser, javascript=False)


def _hostile_reply(request: dict[str, Any]) -> Reply:
    return Reply(
        body={
            "answer": SCRIPT_ANSWER,
            "retrieved": [
                {
                    "id": "<b>doc-1</b>",
                    "text": f"</div><script>alert(1)</script> 3-5个工作日 {SECRET}",
                },
                {"id": "doc-2", "text": "nothing here"},
            ],
            "citations": [1, 7],
            "timings": {"<i>stage</i>": 0.01},
        }
    )


@pytest.fixture(scope="session")
def hostile() -> Iterator[LoopbackServer]:
    with LoopbackServer(_hostile_reply) as server:
        yield server


@dataclass
class RunningDaemon:
    url: str
    folder: Path


HOSTILE_GOLDEN = [
    {
        "id": "hostile-1",
        "question": "退款多久到账？",
        "relevant_ids": ["<b>doc-1</b>"],
        "expected_facts": ["3-5个工作日"],
    },
    {
        "id": "hostile-2",
        "question": "<script>alert(2)</script>?",
        "relevant_ids": ["doc-2"],
        "expected_facts": ["七天"],
    },
]


@pytest.fixture(scope="session")
def daemon(
    reference_server: ReferenceServer,  # noqa: F811
    hostile: LoopbackServer,
) -> Iterator[RunningDaemon]:
    """``evaluator serve`` with two reference jobs and one hostile job, first runs done."""
    reference_server.failure_modes.set([])
    folder = Path(tempfile.mkdtemp(prefix="evaluator-pages-"))
    golden = folder / "hostile.jsonl"
    golden.write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in HOSTILE_GOLDEN), "utf-8"
    )
    port = free_port()
    config = folder / "evaluator.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / "reports"}"
log_format = "json"
[[targets]]
name = "reference"
url = "{reference_server.url}/rag"
[[targets]]
name = "hostile"
url = "{hostile.url}"
[targets.request.headers]
Authorization = "Bearer ${{PAGES_TOKEN}}"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
interval_seconds = 3600
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "example.jsonl"}"
interval_seconds = 3600
[[jobs]]
target = "hostile"
dataset = "{golden}"
interval_seconds = 3600
""",
        "utf-8",
    )
    url = f"http://127.0.0.1:{port}"
    jobs = [("reference", "rag_cases"), ("reference", "example"), ("hostile", "hostile")]
    log = folder / "serve.log"
    try:
        with serving(
            [EVALUATOR, "serve", "--config", str(config)],
            cwd=folder,
            env=clean_env(PAGES_TOKEN=SECRET),
            log=log,
        ) as process:
            wait_for(
                url,
                [f"/reports/latest?target={t}&dataset={d}" for t, d in jobs],
                process,
                log,
            )
            yield RunningDaemon(url, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

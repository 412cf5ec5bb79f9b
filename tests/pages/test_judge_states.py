"""A live daemon's status page when its judge is untrusted, in Chromium: a lenient judge (it
passes specific-but-wrong answers) and a compromised one (an injection canary talked it
round) each turn the job amber, and the reason is rendered, visible, in words.

The daemon runs as a subprocess (sync Playwright holds this thread's event loop), judging a
loopback target's runs with a loopback judge in the mode under test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.judge.test_cli_judge import _CASES, _REPLIES
from tests.pages.conftest import Tab
from tests.pages.stack import EVALUATOR, clean_env, serving, wait_for
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e

#: the amber badge's colours (base.html.j2: --warnbg, --warn), as Chromium computes them
AMBER = ("rgb(255, 248, 197)", "rgb(154, 103, 0)")


def _config(folder: Path, port: int, rag: str, judge: str) -> Path:
    """A daemon judging one job of the two-case golden set, every run, with ``judge``."""
    golden = folder / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(c) for c in _CASES) + "\n", "utf-8")
    config = folder / "evaluator.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / "reports"}"
log_format = "json"
[[targets]]
name = "loop"
url = "{rag}"
[[jobs]]
target = "loop"
dataset = "{golden}"
interval_seconds = 3600
[judge]
url = "{judge}"
model = "m"
""",
        "utf-8",
    )
    return config


def _amber(tab: Tab, url: str, seconds: float = 60.0) -> None:
    """Reload until the job's section is amber: the judge works after the run is published
    (bounded, not timed)."""
    deadline = time.monotonic() + seconds
    while True:
        tab.page.goto(url + "/")
        state = tab.page.locator("section.job").first.get_attribute("data-state")
        if state == "amber":
            return
        assert time.monotonic() < deadline, f"still {state}, want amber"
        time.sleep(0.5)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        (
            "lenient",
            "judge: lenient (the judge accepted 2 of 4 wrong-answer canaries, above 0.25)",
        ),
        ("injectable", "judge: compromised (a canary answer was judged supported)"),
    ],
    ids=["lenient", "compromised"],
)
def test_an_untrusted_judge_turns_the_page_amber_with_its_reason_visible(
    tab: Tab, tmp_path: Path, mode: str, reason: str
) -> None:
    """In a real browser the job's badge is amber (its colours as computed), and the reason
    the judge is untrusted is the job's visible headline."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge(mode) as judge:
        config = _config(tmp_path, port, rag.url, judge.url)
        with serving([EVALUATOR, "serve", "--config", str(config)], cwd=tmp_path,
                     env=clean_env(), log=log) as process:  # fmt: skip
            wait_for(url, ["/reports/latest?target=loop&dataset=golden"], process, log)
            _amber(tab, url)
            section = tab.page.locator("section.job").first
            badge = section.locator("h2 .badge")
            headline = section.locator("p.reason")
            colours = badge.evaluate(
                "b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).color]"
            )
            assert ("amber", True, AMBER) == (
                badge.inner_text(),
                badge.is_visible(),
                tuple(colours),
            )
            assert (reason, True) == (headline.inner_text(), headline.is_visible())
    assert [] == tab.errors

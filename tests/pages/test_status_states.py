"""A live daemon's status page through healthy -> degraded -> recovered, in Chromium.

The reference service's failure modes (its admin endpoint's state) degrade the reranker; the
job gates every run against a baseline recorded from a healthy run, so the page must turn
red with the failing rule in words, then green again once the mode is off.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from evaluator.history.store import HistoryStore
from evaluator.report import read_report
from tests.pages.conftest import Tab
from tests.pages.stack import EVALUATOR, REPO, clean_env, serving, wait_for
from tests.support.ports import free_port
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

GATES = """
[rules.mrr]
max_drop = 0.02
"""


def _config(folder: Path, port: int, url: str, extra: str) -> Path:
    config = folder / f"evaluator-{port}.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / f"reports-{port}"}"
log_format = "json"
gates_file = "{folder / "gates.toml"}"
[[targets]]
name = "reference"
url = "{url}/rag"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
{extra}
""",
        "utf-8",
    )
    return config


def _baseline(folder: Path, url: str) -> Path:
    """A healthy run of a first daemon, saved as the approved baseline."""
    port = free_port()
    config = _config(folder, port, url, "interval_seconds = 3600")
    latest = "/reports/latest?target=reference&dataset=rag_cases"
    log = folder / "baseline.log"
    with serving([EVALUATOR, "serve", "--config", str(config)], cwd=folder, env=clean_env(),
                 log=log) as process:  # fmt: skip
        wait_for(f"http://127.0.0.1:{port}", [latest], process, log)
        body = httpx.get(f"http://127.0.0.1:{port}{latest}", timeout=10).content
    path = folder / "baseline.json"
    path.write_bytes(body)
    return path


def _state(tab: Tab, url: str, want: str, seconds: float = 90.0) -> None:
    """Reload until the job's section is ``want`` (runs every 2 s; bounded, not timed)."""
    deadline = time.monotonic() + seconds
    while True:
        tab.page.goto(url + "/")
        state = tab.page.locator("section.job").first.get_attribute("data-state")
        if state == want:
            return
        assert time.monotonic() < deadline, f"still {state}, want {want}"
        time.sleep(1.0)


def _window_runs(url: str) -> int:
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith("rag_eval_history_window_runs{"):
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


def _until_window(url: str, runs: int, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while _window_runs(url) < runs:
        assert time.monotonic() < deadline, f"fewer than {runs} runs in the history window"
        time.sleep(0.5)


def _trend_lines(tab: Tab, metric: str) -> dict[str, list[str]]:
    """The lines drawn on a metric's trend chart: kind -> their values (or runs)."""
    chart = tab.page.locator(f'section.job figure.trend[data-metric="{metric}"]').first
    out: dict[str, list[str]] = {}
    for kind in ("baseline", "gate", "alert"):
        lines = chart.locator(f"line.limit-{kind}")
        out[kind] = [lines.nth(i).get_attribute("data-value") or "" for i in range(lines.count())]
    began = chart.locator("line.marker-began")
    out["began"] = [began.nth(i).get_attribute("data-run") or "" for i in range(began.count())]
    out["ticks"] = chart.locator("text.tick-label").all_text_contents()
    return out


def _first_run_below(reports: Path, floor: float) -> str:
    """The oldest complete run of the latest streak with MRR below ``floor``, from history."""
    store = HistoryStore.open_readonly(reports)
    assert store is not None
    complete = [r for r in store.runs("reference", "rag_cases") if r.outcome == "complete"]
    streak = []
    for run in complete:  # newest first
        mrr = run.metrics["mrr"]
        if mrr is None or mrr >= floor:
            break
        streak.append(run.run_id)
    assert streak, "no run below the gate's line"
    return streak[-1]


def test_healthy_degraded_recovered(
    reference_server: ReferenceServer, tab: Tab, tmp_path: Path
) -> None:
    """In a real browser the status page goes green, then red when the reference service
    degrades, then green again once it recovers."""
    reference_server.failure_modes.set([])
    (tmp_path / "gates.toml").write_text(GATES, "utf-8")
    baseline = _baseline(tmp_path, reference_server.url)
    port = free_port()
    config = _config(
        tmp_path, port, reference_server.url, f'interval_seconds = 2\nbaseline = "{baseline}"'
    )
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    try:
        with serving([EVALUATOR, "serve", "--config", str(config)], cwd=tmp_path,
                     env=clean_env(), log=log) as process:  # fmt: skip
            wait_for(url, ["/reports/latest?target=reference&dataset=rag_cases"], process, log)
            section = tab.page.locator("section.job").first

            _state(tab, url, "green")
            assert "green" == section.locator("h2 .badge").inner_text()
            # the trend lines: the baseline's MRR, the gate's floor 0.02 below it, the error
            # ratio alert's threshold, run times on the axis; nothing began
            mrr = read_report(baseline).summary.get("mrr")
            assert mrr is not None
            lines = _trend_lines(tab, "mrr")
            assert [f"{mrr:.4f}"] == lines["baseline"]
            assert [f"{mrr - 0.02:.4f}"] == lines["gate"]
            assert ["0.0500"] == _trend_lines(tab, "error_rate")["alert"]
            assert lines["ticks"] and all(":" in t for t in lines["ticks"])
            assert 0 == section.locator("p.began").count()
            assert (
                "no change against the baseline or history"
                == section.locator("p.reason").inner_text()
            )

            reference_server.failure_modes.set(["rerank_degraded"])
            _state(tab, url, "red")
            assert "red" == section.locator("h2 .badge").inner_text()
            # beside the failing rule, where to look: the gate's decision table, as
            # `evaluator gate` prints it (recall unchanged, MRR down: the reranker)
            reason = section.locator("p.reason").inner_text()
            assert reason.startswith(
                "gate against the baseline fails: mrr.max_drop; where to look:"
            )
            assert "look at fusion or rerank" in reason
            # since when, in words, linked to its mark on the charts: the first run below
            # the gate's line, as history recorded it
            began = section.locator("p.began")
            first = _first_run_below(tmp_path / f"reports-{port}", mrr - 0.02)
            assert first == began.locator("a.id").inner_text()
            assert "mrr below the gate's limit (may drop at most 0.02)" in began.inner_text()
            assert [first] == _trend_lines(tab, "mrr")["began"]
            began.locator("a.id").click()
            assert tab.page.url.endswith("#job-0-trends")

            reference_server.failure_modes.set([])
            _state(tab, url, "green")
            assert (
                "no change against the baseline or history"
                == section.locator("p.reason").inner_text()
            )
            assert 0 == section.locator("p.began").count()
            assert [] == tab.errors
    finally:
        reference_server.failure_modes.set([])

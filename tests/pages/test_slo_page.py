"""Each SLO's budget left and burn rate beside the job's state on the status page, in
Chromium, equal to what a real Prometheus computes from the same counters.

``evaluator serve`` runs the bundled golden set against the reference service every 3 s
(the first run 3 s after the start, so Prometheus sees the counters at zero: it counts what
it sees them go up by) with an SLO on answer correctness (0.7 over a day); after two
healthy runs the service's answers degrade (74.6% right, then 23%). Prometheus scrapes the
daemon every second and loads the SLO's rules as ``evaluator slo rules`` writes them. The
page's budget is read from its ledger of runs, Prometheus's from the counters: when the
page shows N events, at the scrape where the counters add up to N, the two must be the
same number.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.pages.conftest import Tab
from tests.pages.stack import EVALUATOR, REPO, clean_env, serving, wait_for
from tests.support.ports import free_port
from tests.support.prometheus import PrometheusServer, require_binary
from tests.support.reference import ReferenceServer

pytestmark = [pytest.mark.e2e, pytest.mark.prometheus]

OBJECTIVE = 0.7
EVENTS = 'rag_eval_slo_events_total{slo="answers"%s}'
BAD, GOOD = EVENTS % ',outcome="bad"', EVENTS % ',outcome="good"'


def _config(folder: Path, port: int, url: str) -> Path:
    config = folder / "evaluator.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / "reports"}"
log_format = "json"
[[targets]]
name = "reference"
url = "{url}/rag"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
interval_seconds = 3
run_at_start = false
[[slos]]
name = "answers"
job = "reference"
sli = "answer_correct"
objective = {OBJECTIVE}
window = "1d"
""",
        "utf-8",
    )
    return config


def _counts(url: str) -> tuple[float, float]:
    """(good, bad) of the SLO on the daemon's /metrics now."""
    text = httpx.get(f"{url}/metrics", timeout=5).text
    found = dict(re.findall(r'rag_eval_slo_events_total\{[^}]*outcome="(\w+)"[^}]*\} (\S+)', text))
    return float(found["good"]), float(found["bad"])


@pytest.fixture(scope="module")
def stack(
    reference_server: ReferenceServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, PrometheusServer]]:
    """The daemon with its SLO, the reference service degrading after two runs, and a
    Prometheus scraping the daemon with the SLO's generated rules."""
    require_binary("prometheus")
    folder = tmp_path_factory.mktemp("slo-page")
    reference_server.failure_modes.set([])
    port = free_port()
    config = _config(folder, port, reference_server.url)
    rules = folder / "slo.yml"
    subprocess.run(
        [EVALUATOR, "slo", "rules", "--config", str(config), "--output", str(rules)],
        cwd=folder, env=clean_env(), check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    log = folder / "serve.log"
    prom = PrometheusServer(
        [f"127.0.0.1:{port}"], workdir=folder / "prom", job_name="rag-evaluator",
        rule_files=[rules],
    ).start()  # fmt: skip
    try:
        # Prometheus counts what it sees the counters go up by: it must scrape them at zero,
        # so its target is up (scraped, failing) before the daemon starts, whose first run
        # ends 3 s after its start
        prom.wait_for('up{job="rag-evaluator"}', lambda r: bool(r), timeout=30)
        with serving(
            [EVALUATOR, "serve", "--config", str(config)], cwd=folder, env=clean_env(), log=log
        ) as process:
            wait_for(url, ["/healthz"], process, log)
            prom.wait_for(f"{GOOD} == 0", lambda r: bool(r), timeout=20)
            _runs(url, reference_server)
            yield url, prom
    finally:
        reference_server.failure_modes.set([])
        prom.stop()


def _runs(url: str, reference: ReferenceServer) -> None:
    """Two healthy runs, then two with ``answer_degraded``."""
    deadline = time.monotonic() + 120
    while sum(_counts(url)) < 2 * 134:  # two runs of 134 answer checks
        assert time.monotonic() < deadline, "two runs did not end within two minutes"
        time.sleep(0.2)
    reference.failure_modes.set(["answer_degraded"])
    while _counts(url)[1] < 2 * 34 + 2 * 103:  # then two degraded runs
        assert time.monotonic() < deadline, "no degraded runs within two minutes"
        time.sleep(0.2)


def _page_slo(tab: Tab, url: str) -> dict[str, str]:
    """The page's SLO line of the job: its data attributes and text."""
    tab.page.goto(url + "/")
    line = tab.page.locator('section.job dd.slo[data-slo="answers"]')
    return {
        "budget": line.get_attribute("data-budget-left") or "",
        "burn": line.get_attribute("data-burn") or "",
        "state": line.get_attribute("data-state") or "",
        "text": line.inner_text(),
    }


def _prometheus_budget(prom: PrometheusServer, good: float, bad: float) -> float:
    """Prometheus's budget left over the day at the scrape where the counters were
    (good, bad): bad over all events' increase, over the budget, from 1."""
    series = prom.api("/api/v1/query", query=f"{EVENTS % ''}[10m]")["result"]
    samples = {s["metric"]["outcome"]: dict(s["values"]) for s in series}
    (at,) = [
        t
        for t, v in samples["good"].items()
        if float(v) == good and float(samples["bad"].get(t, "nan")) == bad
    ][:1]
    bad_increase = f"sum(increase({BAD}[1d]))"
    all_increase = f"sum(increase({EVENTS % ''}[1d]))"
    expr = f"1 - ({bad_increase} / {all_increase}) / {1 - OBJECTIVE}"
    (value,) = prom.api("/api/v1/query", query=expr, time=str(at))["result"]
    return float(value["value"][1])


def test_the_pages_budget_is_what_prometheus_computes_from_the_counters(
    stack: tuple[str, PrometheusServer], tab: Tab
) -> None:
    """The page's budget left equals Prometheus's over the same counters, to 1e-9, and
    reads as that share; degraded answers overspend it: the line is red."""
    url, prom = stack
    for _ in range(20):  # the page and /metrics read between two runs
        before = _counts(url)
        shown = _page_slo(tab, url)
        if _counts(url) == before:
            break
    good, bad = before
    assert f"{int(good + bad):,} events" in shown["text"]
    prom.wait_for(
        f"{GOOD} == {good}", lambda r: bool(r), timeout=30
    )  # Prometheus scraped the counters as the page read them
    expected = _prometheus_budget(prom, good, bad)
    assert expected == pytest.approx(float(shown["budget"]), abs=1e-9)
    assert f"budget left {expected:.1%}" in shown["text"]
    assert expected < 0 and "red" == shown["state"]
    assert [] == tab.errors


def test_the_burn_rate_is_over_the_fastest_pages_window(
    stack: tuple[str, PrometheusServer], tab: Tab
) -> None:
    """The burn rate beside it is over the fastest page's long window (a day's windows: 2m),
    with the rate that page fires above: every run so far is within it, so it is the
    budget's burn, 1 minus the budget left."""
    url, _ = stack
    shown = _page_slo(tab, url)
    assert "over 2m (pages above 2.167×)" in shown["text"]
    assert "answer_correct, objective 0.7 over 1d" in shown["text"]
    assert 1 - float(shown["budget"]) == pytest.approx(float(shown["burn"]), abs=1e-9)

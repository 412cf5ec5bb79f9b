"""A live daemon's case view of a regressed case shows the baseline's run of it beside the
candidate's, in Chromium.

A first daemon's healthy run is saved as the approved baseline; a second daemon, with the
reference service's reranker degraded, runs the golden set against it. The case view of a
case that regressed shows both rankings, both answers and both citation lists, read here from
the two reports; a case that did not move shows no baseline.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from evaluator.gate.compare import record_moves
from evaluator.models import CaseRecord
from evaluator.report import read_report
from evaluator.scoring.citation import resolve_citation
from tests.pages.conftest import Tab
from tests.pages.stack import EVALUATOR, REPO, clean_env, serving, wait_for
from tests.support.ports import free_port
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

LATEST = "/reports/latest?target=reference&dataset=rag_cases"


def _config(folder: Path, port: int, url: str, extra: str = "") -> Path:
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
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
interval_seconds = 3600
{extra}
""",
        "utf-8",
    )
    return config


def _first_report(folder: Path, config: Path, into: Path) -> Path:
    """Serve ``config`` until its first run's report is published; save it to ``into``."""
    port = int(config.stem.rsplit("-", 1)[1])
    url = f"http://127.0.0.1:{port}"
    log = folder / f"{config.stem}.log"
    with serving([EVALUATOR, "serve", "--config", str(config)], cwd=folder, env=clean_env(),
                 log=log) as process:  # fmt: skip
        wait_for(url, [LATEST], process, log)
        into.write_bytes(httpx.get(url + LATEST, timeout=10).content)
    return into


def _ids(cells: list[str | None]) -> list[str]:
    return [c for c in cells if c is not None]


def test_the_case_view_of_a_regressed_case_shows_both_sides(
    reference_server: ReferenceServer, tab: Tab, tmp_path: Path
) -> None:
    """The case view of a case that regressed against the baseline shows the baseline's run
    beside the candidate's, the changes marked."""
    try:
        reference_server.failure_modes.set([])
        baseline_path = _first_report(
            tmp_path,
            _config(tmp_path, free_port(), reference_server.url),
            tmp_path / "baseline.json",
        )
        reference_server.failure_modes.set(["rerank_degraded"])
        port = free_port()
        config = _config(tmp_path, port, reference_server.url, f'baseline = "{baseline_path}"')
        url = f"http://127.0.0.1:{port}"
        log = tmp_path / "serve.log"
        with serving([EVALUATOR, "serve", "--config", str(config)], cwd=tmp_path,
                     env=clean_env(), log=log) as process:  # fmt: skip
            wait_for(url, [LATEST], process, log)
            (tmp_path / "candidate.json").write_bytes(httpx.get(url + LATEST, timeout=10).content)
            baseline = {c.id: c for c in read_report(baseline_path).cases}
            candidate = read_report(tmp_path / "candidate.json")
            moves = {c.id: record_moves(baseline[c.id], c) for c in candidate.cases}
            regressed = [c for c in candidate.cases if moves[c.id][0]]
            still = [c for c in candidate.cases if moves[c.id] == ((), ())]
            assert regressed and still

            page = tab.page
            for case in regressed[:3]:
                before: CaseRecord = baseline[case.id]
                page.goto(f"{url}/case?id={case.id}")
                diff = page.locator(".baseline-diff")
                assert 1 == diff.count()
                # the gate's phrases, regressions first (as its case diff lists them)
                assert f"regressed: {'; '.join(moves[case.id][0] + moves[case.id][1])}" == (
                    page.locator("p.changes").inner_text()
                )
                assert read_report(baseline_path).run_id in diff.locator("h3").inner_text()
                rows = diff.locator("table.ranking-diff tbody tr")
                columns = [
                    _ids([rows.nth(r).locator("td").nth(col).get_attribute("data-id")
                          for r in range(rows.count())])
                    for col in (1, 2)
                ]  # fmt: skip
                assert [list(before.ranked_ids[:20]), list(case.ranked_ids[:20])] == columns
                assert (before.answer or "") == diff.locator(".answer-diff.baseline").inner_text()
                assert (case.answer or "") == diff.locator(".answer-diff.candidate").inner_text()
                # every citation of both runs is listed, on the side(s) that made it
                cited = diff.locator("table.citation-diff tbody tr")
                shown = [
                    (*cited.nth(r).locator("td").all_inner_texts()[:2],
                     cited.nth(r).get_attribute("data-change"))
                    for r in range(cited.count())
                ]  # fmt: skip
                for c in case.citations:
                    label = f"[{c}]" if isinstance(c, int) else c
                    assert any(s[0] == label and s[2] in ("kept", "added") for s in shown)
                for c in before.citations:
                    target = resolve_citation(c, before.ranked_ids)
                    if target is not None:
                        assert any(s[1] == target and s[2] in ("kept", "removed") for s in shown)
            # a case that did not move has no baseline beside it
            page.goto(f"{url}/case?id={still[0].id}")
            assert 0 == page.locator(".baseline-diff").count()
            assert 0 == page.locator("p.changes").count()
            assert [] == tab.errors
    finally:
        reference_server.failure_modes.set([])

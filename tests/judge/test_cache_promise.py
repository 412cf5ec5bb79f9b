"""The verdict cache keeps its promise and no more (issue 38.7): a verdict is reused only for
the same judge, url as well as model; the rows no judged pass of the history's ``keep_runs``
used, or older than its ``max_age_days``, are pruned; a row planted outside that promise is no
hit, and one inside it is read as outside input."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import FILENAME, VerdictStore
from evaluator.report import RunReport, write_report
from tests.judge.reports import golden, record, report
from tests.support.judges import LoopbackJudge

DAY = 86400.0


def _pass(judge: LoopbackJudge, store: VerdictStore, source: RunReport | None = None) -> JudgedRun:
    """One judged pass of ``source`` (default the golden report) by ``judge`` through ``store``."""
    config = JudgeConfig(url=judge.url, model="same-name")

    async def go() -> JudgedRun:
        async with JudgePanel(config) as panel:
            return await judge_report(source or golden(), panel, cache=store)

    return asyncio.run(go())


def _rows(folder: Path) -> list[tuple[str, str, float, int]]:
    with sqlite3.connect(folder / FILENAME) as db:
        return list(db.execute("SELECT key, verdict, stored_at, used_pass FROM judge_verdicts"))


@pytest.mark.e2e
def test_a_judge_at_another_url_with_the_same_model_name_is_not_served_the_first_ones_verdicts(
    tmp_path: Path,
) -> None:
    """Two endpoints serving a model called the same (the audit's reproduction): the second
    asks for every verdict, none is a cache hit, and its verdicts are its own."""
    with LoopbackJudge("fooled") as first, LoopbackJudge() as second:
        fooled = _pass(first, VerdictStore(tmp_path))
        honest = _pass(second, VerdictStore(tmp_path))
    assert 0 == honest.usage.cache_hits
    assert 15 == honest.usage.calls
    assert fooled.metrics != honest.metrics
    assert not any(o.cached for c in honest.cases for o in c.outcomes)


@pytest.mark.e2e
def test_one_store_kept_across_passes_serves_each_from_the_last(tmp_path: Path) -> None:
    """A daemon's job keeps its store from run to run: the second pass through the same
    store is served from the first's verdicts (each pass reads its own number)."""
    store = VerdictStore(tmp_path)
    with LoopbackJudge() as judge:
        first = _pass(judge, store)
        second = _pass(judge, store)
        third = _pass(judge, store)
    assert (0, 9, 9) == (
        first.usage.cache_hits,
        second.usage.cache_hits,
        third.usage.cache_hits,
    )  # the two canaries are asked every pass
    assert first.metrics == second.metrics == third.metrics


@pytest.mark.e2e
def test_verdicts_no_recent_pass_used_are_pruned(tmp_path: Path) -> None:
    """With ``keep_passes`` 2: verdicts of a report judged once are gone two passes of another
    report later, those reused stay (the variant: the cache grew for ever)."""
    other = report(record("x1", "Shipping takes a week.", (("3 days",),)))
    with LoopbackJudge() as judge:
        _pass(judge, VerdictStore(tmp_path, keep_passes=2))
        first = {row[0] for row in _rows(tmp_path)}
        for _ in range(2):
            _pass(judge, VerdictStore(tmp_path, keep_passes=2), other)
        kept = {row[0] for row in _rows(tmp_path)}
        again = _pass(judge, VerdictStore(tmp_path, keep_passes=2))
    assert first and not first & kept
    assert len(kept) == 2  # the other report's fact support and groundedness verdicts
    assert 0 == again.usage.cache_hits


@pytest.mark.e2e
def test_verdicts_older_than_the_history_are_pruned(tmp_path: Path) -> None:
    """A verdict stored 31 days before a pass (``max_age_days`` 30) is no hit, and is gone."""
    with LoopbackJudge() as judge:
        _pass(judge, VerdictStore(tmp_path, clock=lambda: 1_000_000.0))
        later = _pass(judge, VerdictStore(tmp_path, clock=lambda: 1_000_000.0 + 31 * DAY))
    assert 0 == later.usage.cache_hits
    assert all(row[2] == 1_000_000.0 + 31 * DAY for row in _rows(tmp_path))


def _plant(folder: Path, verdict: str, *, stored_at: float, used_pass: int) -> None:
    """Every row's verdict, time and pass overwritten, as someone with the file could."""
    with sqlite3.connect(folder / FILENAME) as db:
        db.execute(
            "UPDATE judge_verdicts SET verdict = ?, stored_at = ?, used_pass = ?",
            (verdict, stored_at, used_pass),
        )


_FOOLED_FACT = json.dumps({"facts": [{"index": 0, "stated": True}], "reason": "planted"})


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("when", "used_pass"),
    [(10 * DAY, 1), (0.0, 99)],
    ids=["stored-in-the-future", "by-a-pass-not-yet-run"],
)
def test_a_row_planted_outside_the_promise_is_no_hit(
    tmp_path: Path, when: float, used_pass: int
) -> None:
    """Rows rewritten to pass every fact, stamped ten days ahead or by pass 99 of a folder
    that ran one: none is read, every verdict is asked again."""
    now = 5_000_000.0
    with LoopbackJudge() as judge:
        _pass(judge, VerdictStore(tmp_path, clock=lambda: now))
        _plant(tmp_path, _FOOLED_FACT, stored_at=now + when, used_pass=used_pass)
        again = _pass(judge, VerdictStore(tmp_path, clock=lambda: now + 1))
    assert 0 == again.usage.cache_hits
    assert not any(o.reason == "planted" for c in again.cases for o in c.outcomes)


@pytest.mark.e2e
def test_a_row_planted_within_the_promise_is_read_as_outside_input(tmp_path: Path) -> None:
    """A row within the promise holding a lone surrogate and a control character: it is a
    cached verdict, its text through the border (U+FFFD), never an error of the pass."""
    planted = '{"facts": [{"index": 0, "stated": true}], "claims": [], "refusal": true, ' \
        '"reason": "planted \\ud83d \\u001b[2J"}'  # fmt: skip
    with LoopbackJudge() as judge:
        _pass(judge, VerdictStore(tmp_path))
        _plant(tmp_path, planted, stored_at=_rows(tmp_path)[0][2], used_pass=1)
        again = _pass(judge, VerdictStore(tmp_path))
    reasons = {o.reason for c in again.cases for o in c.outcomes if o.cached}
    assert {"planted \ufffd \x1b[2J"} == reasons


EXE = str(Path(sys.executable).with_name("evaluator"))


@pytest.mark.e2e
def test_evaluator_judge_prunes_with_the_configured_history(tmp_path: Path) -> None:
    """``[history] keep_runs`` reaches the cache of ``evaluator judge``: with 4, a report's
    verdicts are gone after four passes over another report."""
    first, other = tmp_path / "first.json", tmp_path / "other.json"
    write_report(golden(), first)
    write_report(report(record("x1", "Shipping takes a week.", (("3 days",),))), other)
    with LoopbackJudge() as judge:
        (tmp_path / "evaluator.toml").write_text(
            f'reports_dir = "{tmp_path}"\n[history]\nwindow = 3\nrecent = 1\nkeep_runs = 4\n'
            f'[judge]\nurl = "{judge.url}"\nmodel = "m"\n'
        )
        for path in (first, other, other, other, other):
            done = subprocess.run(
                [EXE, "judge", "--config", "evaluator.toml", str(path)],
                capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
            )  # fmt: skip
            assert 0 == done.returncode, done.stderr
    assert 2 == len(_rows(tmp_path))

"""The verdict cache in the history store: a pass writes its new verdicts in one
transaction, reads what it put before the write, and a store it cannot use is a miss."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evaluator.judge import store as store_module
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import FILENAME, VerdictStore
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge


def _pass(judge: LoopbackJudge, store: VerdictStore) -> JudgedRun:
    config = JudgeConfig(url=judge.url, model="demo")

    async def go() -> JudgedRun:
        async with JudgePanel(config) as panel:
            return await judge_report(golden(), panel, cache=store)

    return asyncio.run(go())


def _rows(folder: Path) -> int:
    with sqlite3.connect(folder / FILENAME) as db:
        (count,) = db.execute("SELECT COUNT(*) FROM judge_verdicts").fetchone()
    return int(count)


@pytest.mark.e2e
def test_a_pass_stores_its_verdicts_in_one_transaction(tmp_path: Path) -> None:
    """A judged pass writes its new verdicts in one transaction and a later pass, in another store,
    reads them back."""
    first_store = VerdictStore(tmp_path)
    with LoopbackJudge() as judge:
        first = _pass(judge, first_store)
        # 9 verdicts of the golden report's cases (the 6 canaries are never cached)
        assert first.usage.calls == 15 and first.usage.cache_hits == 0
        assert first_store.commits == 1 and first_store.errors == 0
        assert _rows(tmp_path) == 9
        # a later run (another process, as the next `evaluator run`): from the table
        calls = judge.calls
        second_store = VerdictStore(tmp_path)
        second = _pass(judge, second_store)
        assert second.usage.cache_hits == 9 and judge.calls - calls == 6
    assert second.metrics == first.metrics
    # nothing new to write: one transaction stamps the reused rows with the pass
    assert second_store.commits == 1 and _rows(tmp_path) == 9
    assert all(o.cached for c in second.cases for o in c.outcomes)


def test_a_verdict_put_is_read_back_before_it_is_written(tmp_path: Path) -> None:
    """A verdict put is read back before it is flushed, written by one transaction, and a flush with
    nothing pending writes nothing."""
    store = VerdictStore(tmp_path)
    verdict: dict[str, Any] = {"refusal": True, "reason": "declines"}
    store.put("k1", verdict)
    assert store.get("k1") == verdict
    assert not (tmp_path / FILENAME).exists() or _rows(tmp_path) == 0
    store.flush()
    assert _rows(tmp_path) == 1 and store.commits == 1
    assert VerdictStore(tmp_path).get("k1") == verdict
    store.flush()  # nothing pending: no transaction
    assert store.commits == 1


def test_a_replaced_verdict_keeps_the_latest(tmp_path: Path) -> None:
    """A verdict put again under the same key replaces the stored one."""
    store = VerdictStore(tmp_path)
    store.put("k", {"refusal": False})
    store.flush()
    store.put("k", {"refusal": True})
    store.flush()
    assert VerdictStore(tmp_path).get("k") == {"refusal": True} and _rows(tmp_path) == 1


def test_held_verdicts_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verdicts held before a flush are bounded: a full batch is written at once."""
    monkeypatch.setattr(store_module, "MAX_PENDING", 3)
    store = VerdictStore(tmp_path)
    for i in range(7):
        store.put(f"k{i}", {"n": i})
    assert store.commits == 2 and _rows(tmp_path) == 6  # two batches of 3 written
    store.flush()
    assert store.commits == 3 and _rows(tmp_path) == 7


def test_an_oversized_verdict_is_not_kept(tmp_path: Path) -> None:
    """A verdict above the size bound is not kept."""
    store = VerdictStore(tmp_path)
    store.put("big", {"reason": "x" * 70_000})
    assert store.get("big") is None
    store.flush()
    assert store.commits == 0


@pytest.mark.e2e
def test_a_store_it_cannot_use_is_a_miss_never_a_failure(tmp_path: Path) -> None:
    """A store whose folder cannot be used misses and counts its errors, and the judged pass goes
    on."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the reports folder should be")
    store = VerdictStore(blocked)
    assert store.get("k") is None
    store.put("k", {"refusal": True})
    store.flush()
    assert store.errors == 2 and store.commits == 0
    with LoopbackJudge() as judge:
        run = _pass(judge, VerdictStore(blocked))
    assert run.usage.calls == 15 and run.usage.errors == {}


def test_a_corrupt_row_is_a_miss(tmp_path: Path) -> None:
    """A stored verdict that is not JSON is a miss."""
    store = VerdictStore(tmp_path)
    store.put("k", {"refusal": True})
    store.flush()
    with sqlite3.connect(tmp_path / FILENAME) as db:
        db.execute("UPDATE judge_verdicts SET verdict = '[not json'")
    assert VerdictStore(tmp_path).get("k") is None

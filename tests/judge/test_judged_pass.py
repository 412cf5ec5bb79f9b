"""A judged pass over a report against loopback judges: metrics, canaries, the budget,
errors by kind, the cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog

from evaluator.judge.judged_pass import CallEvent, judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.record import JudgedRun, judged_run_from_dict
from evaluator.judge.settings import JudgeConfig
from evaluator.report import RunReport
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge


class _DictCache:
    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}
        self.flushes = 0

    def get(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        self.data[key] = verdict

    def flush(self) -> None:
        self.flushes += 1


def _judge(
    judge: LoopbackJudge,
    report: RunReport | None = None,
    cache: _DictCache | None = None,
    events: list[CallEvent] | None = None,
    **config: Any,
) -> JudgedRun:
    settings = JudgeConfig(url=judge.url, model="demo", **config)

    async def go() -> JudgedRun:
        async with JudgePanel(settings) as panel:
            return await judge_report(
                report or golden(),
                panel,
                cache=cache,
                on_call=events.append if events is not None else None,
            )

    return asyncio.run(go())


@pytest.mark.e2e
def test_a_good_judge_scores_every_check() -> None:
    """An honest judge scores every applicable check of every case, canaries included, and the run's
    metrics, unsupported claims and usage follow."""
    with LoopbackJudge() as judge:
        run = _judge(judge)
    assert run.model == "demo" and run.prompt_version == PROMPT_VERSION
    assert run.metrics["judged_fact_recall"] == 0.75  # "wrong" states no fact
    assert run.metrics["judged_answer_accuracy"] == 0.75
    assert run.metrics["judged_refusal_rate"] == 1.0
    assert not run.compromised
    assert [(c.kind, c.fooled) for c in run.canaries] == [
        ("injection", False),
        ("injection", False),
        ("specific_but_wrong", False),
        ("specific_but_wrong", False),
        ("vague_but_topical", False),
        ("vague_but_topical", False),
    ]
    wrong = run.case("wrong")
    assert wrong is not None
    grounded = wrong.outcome("groundedness")
    assert grounded is not None and grounded.unsupported == ("Refunds take a month.",)
    # 6 canaries + 4 fact support + 4 groundedness + 1 refusal
    assert run.usage.calls == judge.calls == 15
    assert run.usage.input_tokens == 1500 and run.usage.errors == {}


@pytest.mark.e2e
def test_a_fooled_judge_is_compromised() -> None:
    """A judge that passes the canaries marks the run compromised and advisory, and (passing
    the wrong answers too) lenient, with one warning of each."""
    with LoopbackJudge("fooled") as judge, structlog.testing.capture_logs() as logs:
        run = _judge(judge)
    warnings = [e["event"] for e in logs if e["log_level"] == "warning"]
    assert ["judge_compromised", "judge_lenient"] == warnings
    assert run.compromised and run.lenient
    assert all(c.fooled for c in run.canaries)
    assert run.to_dict()["advisory"] is True


@pytest.mark.parametrize(
    ("mode", "kind"), [("malformed", "judge_malformed"), ("no_verdict", "judge_malformed")]
)
@pytest.mark.e2e
def test_a_bad_judge_scores_nothing(mode: str, kind: str) -> None:
    """A judge whose every verdict is malformed leaves every judged metric None, every check an
    error of that kind, and no canary fooled."""
    with LoopbackJudge(mode) as judge:
        run = _judge(judge)
    assert all(v is None for v in run.metrics.values())
    assert run.usage.errors == {kind: 15}
    assert all(c.fooled is None for c in run.canaries)  # no verdict is no pass
    statuses = {o.status for c in run.cases for o in c.outcomes}
    assert statuses == {"error"}


@pytest.mark.e2e
def test_a_hanging_judge_costs_each_check_a_timeout() -> None:
    """A judge that never answers costs each check one judge_timeout and yields no judged metric."""
    with LoopbackJudge("hang") as judge:
        run = _judge(judge, timeout_seconds=0.2, concurrency=8)
    assert run.usage.errors == {"judge_timeout": 15}
    assert all(v is None for v in run.metrics.values())


@pytest.mark.e2e
def test_the_budget_skips_the_rest_and_counts_them() -> None:
    """Once the call budget is spent the remaining checks are skipped and counted."""
    with LoopbackJudge() as judge:
        run = _judge(judge, max_calls=7, concurrency=1)
    assert judge.calls == 7 and run.usage.calls == 7
    assert run.usage.skipped == 8
    # the six canaries went first: eight of the cases' nine checks skipped
    skipped = [o for c in run.cases for o in c.outcomes if o.status == "skipped"]
    assert len(skipped) == 8


@pytest.mark.e2e
def test_the_cost_budget_stops_spending() -> None:
    """Once the cost budget is reached no further call is made, the overshoot bounded by the calls
    in flight."""
    # 100 input + 20 output tokens a call at 1,000,000 a million: 120 a call
    with LoopbackJudge() as judge:
        run = _judge(judge, max_cost=300, input_price=1e6, output_price=1e6, concurrency=1)
    assert judge.calls == 3 and run.usage.cost == 360
    assert run.usage.skipped == 12


@pytest.mark.e2e
def test_the_cache_saves_every_call_but_the_canaries() -> None:
    """A second pass over the same answers takes every verdict from the cache but the canaries',
    with the same metrics and one flush a pass."""
    cache = _DictCache()
    with LoopbackJudge() as judge:
        first = _judge(judge, cache=cache)
        second = _judge(judge, cache=cache)
    assert first.usage.cache_hits == 0 and second.usage.cache_hits == 9
    assert second.usage.calls == 6  # the canaries, of every class, are always asked afresh
    assert second.metrics == first.metrics
    assert cache.flushes == 2  # once a pass: the store writes a run's verdicts at once


@pytest.mark.e2e
def test_call_events_feed_the_judge_metrics() -> None:
    """Each judge call ends in one call event carrying its outcome and tokens."""
    events: list[CallEvent] = []
    with LoopbackJudge() as judge:
        _judge(judge, events=events)
    assert len(events) == 15 and all(e.error_kind is None and e.input_tokens == 100 for e in events)


@pytest.mark.e2e
def test_the_judged_run_reads_back() -> None:
    """A judged run written as a report block reads back equal."""
    with LoopbackJudge() as judge:
        run = _judge(judge)
    assert judged_run_from_dict(run.to_dict(), "r.json") == run

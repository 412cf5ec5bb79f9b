"""What a judged run does against a judge that rate-limits (429 with Retry-After): the pause
it asks for is honoured by every call of the client, not only the refused one; and a job
chooses which checks run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge


def _judged(judge: LoopbackJudge, **config: Any) -> JudgedRun:
    """``golden()`` judged by ``judge`` with ``config``."""

    async def go() -> JudgedRun:
        async with JudgePanel(JudgeConfig(url=judge.url, model="m", **config)) as panel:
            return await judge_report(golden(), panel)

    return asyncio.run(go())


@pytest.mark.e2e
def test_a_rate_limited_judge_is_waited_for_as_it_asks() -> None:
    """A judge admitting 3 requests a second and refusing the rest with Retry-After: 1 still
    judges every check of a run sent at concurrency 8: each 429 holds back every call for the
    second it asked, so no check runs out of retries."""
    with LoopbackJudge(rate_limit=3, retry_after="1") as judge:
        run = _judged(judge, concurrency=8, retries=3)
        refused, calls = judge.refused, judge.calls
    assert ({}, 15, 15) == (run.usage.errors, run.usage.calls, calls)
    assert refused > 0  # it did rate-limit, and was honoured


@pytest.mark.e2e
def test_a_retry_after_past_the_cap_is_waited_for_the_cap() -> None:
    """A Retry-After of an hour is waited for max_retry_after_seconds, then retried."""
    with LoopbackJudge(rate_limit=1, retry_after="3600") as judge:
        run = _judged(judge, concurrency=1, retries=5, max_retry_after_seconds=1.0)
    assert ({}, 15) == (run.usage.errors, run.usage.calls)


@pytest.mark.e2e
def test_a_job_chooses_which_checks_run() -> None:
    """checks = ["groundedness"]: no fact-support or refusal call, their metrics n/a, and
    the canaries those of groundedness alone."""
    with LoopbackJudge() as judge:
        run = _judged(judge, checks=["groundedness"])
        asked = {
            r["messages"][1]["content"].count('"check": "groundedness"') for r in judge.requests
        }
    assert {1} == asked
    assert (None, None, 0.5) == (
        run.metrics["judged_fact_recall"],
        run.metrics["judged_refusal_rate"],
        run.metrics["judged_faithfulness"],
    )
    assert {"groundedness"} == {c.check for c in run.canaries}
    assert {("groundedness",)} == {
        tuple(o.check for o in c.outcomes) for c in run.cases if c.outcomes
    }


@pytest.mark.parametrize("checks", [["vibes"], []])
def test_an_unknown_or_empty_check_list_is_refused(checks: list[str]) -> None:
    """A check the registry does not know, or none at all, is a configuration error naming
    the known ones."""
    with pytest.raises(ValueError, match="fact_support, groundedness, refusal"):
        JudgeConfig(url="http://127.0.0.1:1/v1", model="m", checks=checks)

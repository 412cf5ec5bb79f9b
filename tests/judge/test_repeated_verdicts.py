"""Repeated verdicts and panels against loopback judges: a judge that flips on resample, a
panel that splits, the votes kept in the report, the cache and the budget per vote."""

from __future__ import annotations

import asyncio
from typing import Any

import krippendorff
import numpy as np
import pytest

from evaluator.judge.agreement import vote_figures
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.labels import judge_says
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun, judged_run_from_dict
from evaluator.judge.settings import JudgeConfig
from tests.judge.reports import golden
from tests.judge.test_judged_pass import _DictCache
from tests.support.judges import LoopbackJudge

pytestmark = pytest.mark.e2e

#: golden(): four fact-support and four groundedness checks, one refusal
_CHECKS = 9
#: golden()'s canaries: two injection ones, two of each wrong-answer class
_CANARIES = 2 + 2 * 2


def _run(config: JudgeConfig, cache: _DictCache | None = None) -> JudgedRun:
    """``golden()`` judged by the panel of ``config``."""

    async def go() -> JudgedRun:
        async with JudgePanel(config) as panel:
            return await judge_report(golden(), panel, cache=cache)

    return asyncio.run(go())


def test_a_judge_that_flips_on_resample_is_uncertain_never_a_pass() -> None:
    """Two samples of a judge that inverts its odd sample split on every check: each outcome
    is uncertain, every judged metric has no value, and no verdict reaches the labels."""
    with LoopbackJudge("flip_on_seed") as judge:
        run = _run(JudgeConfig(url=judge.url, model="m", samples=2))
        seeds = sorted({r["seed"] for r in judge.requests})
    assert [0, 1] == seeds
    statuses = [o.status for c in run.cases for o in c.outcomes]
    assert ["uncertain"] * _CHECKS == statuses
    assert dict.fromkeys(run.metrics) == dict(run.metrics)
    assert {} == judge_says(run.cases)
    figures = vote_figures(run.cases)
    assert (4, 1.0) == (figures["fact_support"].uncertain, figures["fact_support"].uncertain_ratio)
    assert (_CANARIES + _CHECKS) * 2 == run.usage.calls


def test_three_samples_of_a_flipping_judge_take_the_majority() -> None:
    """Three samples (two honest, one inverted) decide by majority; alpha between the samples
    equals the krippendorff package's on the same votes."""
    with LoopbackJudge("flip_on_seed") as judge:
        run = _run(JudgeConfig(url=judge.url, model="m", samples=3))
    assert 0.75 == run.metrics["judged_fact_recall"]
    fact = [c.outcome("fact_support") for c in run.cases]
    votes = [[v.outcome.values["answer_correct"] for v in o.votes] for o in fact if o is not None]
    assert [[True, False, True]] * 3 + [[False, True, False]] == sorted(
        votes, key=lambda v: not v[0]
    )
    matrix = np.array(votes, dtype=float).T
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    alpha = vote_figures(run.cases)["fact_support"].alpha
    assert alpha is not None and round(expected, 12) == round(alpha, 12)


def test_a_panel_that_splits_is_uncertain_where_its_judges_disagree() -> None:
    """An honest judge and one that passes everything agree on the right answers and split on
    the wrong one; the fooled member's canary vote marks the run compromised."""
    with LoopbackJudge() as honest, LoopbackJudge("fooled") as fooled:
        config = JudgeConfig(
            url=honest.url, model="honest", panel=({"model": "lax", "url": fooled.url},)
        )
        run = _run(config)
        assert (_CANARIES + _CHECKS, _CANARIES + _CHECKS) == (honest.calls, fooled.calls)
    wrong = run.case("wrong")
    assert wrong is not None
    outcome = wrong.outcome("fact_support")
    assert outcome is not None and "uncertain" == outcome.status
    assert ["honest", "lax"] == [v.member for v in outcome.votes]
    assert 1.0 == run.metrics["judged_fact_recall"]  # the three right answers, both agreeing
    assert ("honest", "lax") == run.panel
    assert run.compromised


def test_a_panel_of_three_outvotes_its_fooled_member() -> None:
    """Two honest judges and a fooled one: the majority is the honest verdict on every case."""
    with LoopbackJudge() as a, LoopbackJudge() as b, LoopbackJudge("fooled") as c:
        config = JudgeConfig(
            url=a.url,
            model="a",
            panel=({"model": "b", "url": b.url}, {"model": "c", "url": c.url}),
        )
        run = _run(config)
    assert (0.75, 0.75) == (
        run.metrics["judged_fact_recall"],
        run.metrics["judged_answer_accuracy"],
    )
    assert 0 == vote_figures(run.cases)["fact_support"].uncertain


def test_the_report_keeps_every_vote_and_reads_it_back() -> None:
    """The judge block holds each outcome's votes (member, sample, verdict) and reads back
    equal, with the run's samples and panel."""
    with LoopbackJudge("flip_on_seed") as judge:
        run = _run(JudgeConfig(url=judge.url, model="m", samples=3))
    block = run.to_dict()
    first = block["cases"][0]["checks"][0]
    assert [0, 1, 2] == [v["sample"] for v in first["votes"]]
    assert (3, []) == (block["samples"], block["panel"])
    assert run == judged_run_from_dict(block, "report.json")


def test_the_cache_keeps_a_verdict_per_sample_and_member() -> None:
    """A second pass of three samples takes every vote from the cache but the canaries'."""
    cache = _DictCache()
    with LoopbackJudge("flip_on_seed") as judge:
        config = JudgeConfig(url=judge.url, model="m", samples=3)
        first = _run(config, cache)
        calls = judge.calls
        second = _run(config, cache)
        assert (_CANARIES * 3, _CHECKS * 3) == (judge.calls - calls, second.usage.cache_hits)
    assert _CHECKS * 3 == len(cache.data)
    assert first.metrics == second.metrics
    assert all(o.cached for c in second.cases for o in c.outcomes)


def test_the_budget_counts_every_sample() -> None:
    """max_calls counts each sample as a call: five calls at three samples judge less than two
    checks, and the rest are skipped."""
    with LoopbackJudge() as judge:
        run = _run(JudgeConfig(url=judge.url, model="m", samples=3, max_calls=5, concurrency=1))
        assert 5 == judge.calls
    assert (5, (_CANARIES + _CHECKS) * 3 - 5) == (run.usage.calls, run.usage.skipped)


@pytest.mark.parametrize(
    ("panel", "problem"),
    [
        ([{"model": "m"}], "named ['m'] twice"),
        ([{"model": "x", "url": "ftp://judge"}], "must start with http"),
    ],
)
def test_a_bad_panel_is_refused_naming_it(panel: list[dict[str, Any]], problem: str) -> None:
    """A panel member named like another judge, or at a URL that is no http(s) URL, is a
    configuration error."""
    with pytest.raises(ValueError, match=problem.replace("[", r"\[")):
        JudgeConfig(url="http://127.0.0.1:1/v1/chat/completions", model="m", panel=panel)


def test_a_member_at_another_url_gets_no_secret_of_the_judge() -> None:
    """A panel member at the judge's URL shares its headers; one elsewhere gets none of them."""
    config = JudgeConfig(
        url="http://127.0.0.1:1/v1",
        model="m",
        headers={"Authorization": "Bearer x"},
        panel=({"model": "same"}, {"model": "other", "url": "http://127.0.0.1:2/v1"}),
    )
    members = dict(config.members())
    assert ({"Authorization": "Bearer x"}, {}) == (
        dict(members["same"].headers),
        dict(members["other"].headers),
    )

"""The judge's daemon side after a reload (issue 37, item 13): after SIGHUP judge drift
measures the new judge (it kept re-judging with the old one), drift a reload adds starts
(it never did, while the log said nothing needed a restart), and judge tokens count the
calls whose verdict could not be read (the judge was paid for them). A live daemon, its
/metrics over HTTP, a loopback RAG endpoint and loopback judges."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from evaluator.config import Settings
from evaluator.daemon import Daemon
from tests.judge.test_cli_judge import _REPLIES, _cli, _setup
from tests.judge.test_daemon_judge import LABELS, _labels, _settings
from tests.support.inprocess import run_bounded, running, until
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer

pytestmark = pytest.mark.e2e


def _judged_by(settings: Settings, url: str, **changes: object) -> Settings:
    """``settings`` with its judge at ``url`` (and ``changes`` to the judge)."""
    assert settings.judge is not None
    judge = settings.judge.model_copy(update={"url": url, **changes})
    return settings.model_copy(update={"judge": judge})


async def _scrape(daemon: Daemon) -> str:
    url = f"http://127.0.0.1:{daemon.http.port}/metrics"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.text()


def _agreement(scraped: str, check: str) -> float | None:
    found = re.search(rf'^rag_eval_judge_agreement\{{check="{check}"[^}}]*\}} (\S+)$', scraped,
                      re.M)  # fmt: skip
    return float(found.group(1)) if found else None


def test_after_a_reload_judge_drift_measures_the_new_judge(tmp_path: Path) -> None:
    """Judge A agrees with the labels; a reload points the job at judge B, which inverts
    every verdict: drift re-judges with B (its agreement falls to 0 on /metrics) and A is
    asked nothing more."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with (
        LoopbackServer(_REPLIES) as rag,
        LoopbackJudge() as old,
        LoopbackJudge(flip_after=0) as new,
    ):
        settings = _settings(tmp_path, rag.url, old.url, labels)
        swapped = _judged_by(settings, new.url)

        async def body() -> None:
            daemon = Daemon(settings, reload=lambda: swapped)
            await daemon.start()
            try:
                await until(lambda: _agreement_of(daemon) == 1.0, seconds=10)
                assert await daemon.reload()
                asked = old.calls
                await until(lambda: new.calls > 0, seconds=8)
                await until(lambda: _agreement_of(daemon) == 0.0, seconds=8)
                assert 0.0 == _agreement(await _scrape(daemon), "fact_support")
                assert asked == old.calls, "the old judge was asked after the reload"
            finally:
                await daemon.stop()

        run_bounded(body, timeout=40)


def _agreement_of(daemon: Daemon) -> float | None:
    return daemon.registry.get_sample_value(
        "rag_eval_judge_agreement", {**LABELS, "check": "fact_support"}
    )


def test_drift_added_by_a_reload_starts(tmp_path: Path) -> None:
    """A judge without drift labels; a reload adds them: drift checks start (the agreement
    gauge appears on /metrics) with no restart."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        with_drift = _settings(tmp_path, rag.url, judge.url, labels)
        without = _judged_by(with_drift, judge.url, drift_labels=None)

        async def body() -> None:
            daemon = Daemon(without, reload=lambda: with_drift)
            await daemon.start()
            try:
                await until(lambda: daemon.jobs[0].judge is not None
                            and daemon.jobs[0].judge.latest is not None)  # fmt: skip
                assert await daemon.reload()
                await until(lambda: _agreement_of(daemon) == 1.0, seconds=8)
                assert 1.0 == _agreement(await _scrape(daemon), "fact_support")
            finally:
                await daemon.stop()

        run_bounded(body, timeout=30)


@pytest.mark.parametrize("mode", ["malformed", "no_verdict"])
def test_judge_tokens_count_calls_whose_verdict_could_not_be_read(
    tmp_path: Path, mode: str
) -> None:
    """Every call answered with usage (100 in, 20 out) though its verdict is broken
    (``malformed``: no JSON object; ``no_verdict``: an object of the wrong shape): the
    daemon's token counters (over HTTP) count all eleven calls (five checks, six canaries)."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge(mode) as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)

        async def body() -> None:
            async with running(settings) as daemon:

                def tokens(direction: str) -> float | None:
                    return daemon.registry.get_sample_value(
                        "rag_eval_judge_tokens_total", {**LABELS, "direction": direction}
                    )

                await until(
                    lambda: (
                        daemon.registry.get_sample_value(
                            "rag_eval_judge_calls_total", {**LABELS, "outcome": "judge_malformed"}
                        )
                        == 11
                    )
                )
                assert (1100, 220) == (tokens("input"), tokens("output"))
                scraped = await _scrape(daemon)
                assert re.search(
                    r'^rag_eval_judge_tokens_total\{[^}]*direction="input"[^}]*\} 1100\.0$',
                    scraped,
                    re.M,
                )

        run_bounded(body, timeout=30)


def test_a_run_s_judge_usage_counts_malformed_calls(tmp_path: Path) -> None:
    """``evaluator run``: the report's judge usage counts the tokens of calls whose verdict
    was no JSON object (the judge was paid for them)."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("malformed") as judge:
        config = _setup(tmp_path, rag, judge)
        result = _cli("run", "--config", str(config), "--output", str(tmp_path / "r.json"),
                      cwd=tmp_path)  # fmt: skip
    assert 0 == result.returncode, result.stderr
    assert "judge_malformed 11; tokens 1100+220" in result.stdout

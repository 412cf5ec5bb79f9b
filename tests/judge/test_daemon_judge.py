"""The judge in a live daemon: each complete run judged, the judge's own series exported
(never the target's), and a judge whose behaviour changes mid-way moves the drift gauges."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.judge.canary_verdicts import CANARY_CLASSES
from evaluator.judge.labels import Label, append_label
from evaluator.judge.record import answer_hash
from evaluator.judge.settings import JudgeConfig
from tests.judge import calibrations
from tests.judge.test_cli_judge import _CASES, _REPLIES
from tests.support.inprocess import run_bounded, running, until
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer

LABELS = {"target": "loop", "dataset": "golden"}


def _settings(tmp: Path, rag: str, judge: str, labels: Path) -> Settings:
    golden = tmp / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(c) for c in _CASES) + "\n")
    return Settings(
        targets=(HttpTargetConfig(name="loop", url=rag, timeout_seconds=5),),
        jobs=(JobConfig(target="loop", dataset=golden, interval_seconds=3600, run_at_start=True),),
        judge=JudgeConfig(url=judge, model="drifty", drift_labels=labels, drift_interval_seconds=1),
        reports_dir=tmp / "reports",
        listen="127.0.0.1:0",
        shutdown_grace_seconds=5,
    )


def _labels(path: Path) -> None:
    at = "2026-01-01T00:00:00Z"
    append_label(path, Label("refund", answer_hash("Refunds arrive within 5 business days."),
                             "fact_support", True, "ann", at))  # fmt: skip
    append_label(path, Label("shipping", answer_hash("Shipping takes a week."),
                             "fact_support", False, "ann", at))  # fmt: skip
    append_label(path, Label("ceo", answer_hash("I don't know."), "refusal", True, "ann", at))


@pytest.mark.e2e
def test_the_daemon_judges_and_the_drift_gauge_moves(tmp_path: Path) -> None:
    """The daemon judges each run, exports the judged gauges and the judge's calibration, and its
    drift gauges fall when the judge changes behaviour behind the same name."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    (tmp_path / "reports").mkdir()
    stored = calibrations.entry("drifty")
    calibrations.write(tmp_path / "reports", stored)

    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)

        async def body() -> None:
            async with running(settings) as daemon:

                def sample(name: str, **extra: str) -> float | None:
                    return daemon.registry.get_sample_value(name, {**LABELS, **extra})

                await until(lambda: sample("rag_eval_judged_fact_recall") is not None)
                assert sample("rag_eval_judged_fact_recall") == 0.5
                assert sample("rag_eval_judged_refusal_rate") == 1.0
                assert sample("rag_eval_judge_compromised") == 0
                # the stored calibration calls the judge calibrated for fact support alone
                assert sample("rag_eval_judge_calibrated", check="fact_support") == 1
                assert sample("rag_eval_judge_calibrated", check="refusal") == 0
                # five checks, six canaries (two injection, two of each wrong-answer class)
                assert sample("rag_eval_judge_calls_total", outcome="ok") == 11
                assert sample("rag_eval_judge_calls_total", outcome="judge_timeout") == 0
                assert sample("rag_eval_judge_tokens_total", direction="input") == 1100
                # an honest judge accepts no canary of any class, and is not lenient
                for kind in CANARY_CLASSES:
                    assert sample("rag_eval_judge_canaries_total", **{"class": kind}) == 2
                    assert sample("rag_eval_judge_canary_accepted_total", **{"class": kind}) == 0
                assert sample("rag_eval_judge_lenient") == 0
                # the target saw three requests: the judge's calls are not its traffic
                assert len(rag.requests) == 3
                await until(
                    lambda: sample("rag_eval_judge_agreement", check="fact_support") is not None,
                    seconds=8,
                )
                assert sample("rag_eval_judge_agreement", check="fact_support") == 1.0
                assert sample("rag_eval_judge_agreement", check="refusal") == 1.0
                floor = stored["agreement_interval"][0]
                assert sample("rag_eval_judge_agreement_floor", check="fact_support") == floor
                # the model behind the same name changes: every verdict flips from now on
                judge.flip_after = judge.calls
                await until(
                    lambda: sample("rag_eval_judge_agreement", check="fact_support") == 0.0,
                    seconds=8,
                )
                assert sample("rag_eval_judge_kappa", check="fact_support") == -1.0
                latest = json.loads(
                    (daemon.jobs[0].store.folder / "latest.json").read_text("utf-8")
                )
                assert latest["judge"]["model"] == "drifty"
                # served on /metrics, over HTTP
                url = f"http://127.0.0.1:{daemon.http.port}/metrics"
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    scraped = await response.text()
                assert 'rag_eval_judge_agreement{check="fact_support"' in scraped
                assert "rag_eval_judged_fact_recall{" in scraped

        run_bounded(body, timeout=30)


@pytest.mark.e2e
def test_a_judge_fooled_by_a_canary_turns_the_status_page_amber(tmp_path: Path) -> None:
    """The page's state reads the judge's health: a compromised judge is amber, with why."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("fooled") as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].judge.problem is not None)  # type: ignore[union-attr]
                url = f"http://127.0.0.1:{daemon.http.port}/"
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    page = await response.text()
                assert 'data-state="amber"' in page
                assert "judge: compromised (a canary answer was judged supported)" in page

        run_bounded(body, timeout=30)


@pytest.mark.e2e
def test_an_uncalibrated_judge_is_named_on_the_status_page(tmp_path: Path) -> None:
    """No stored calibration: every judged check is uncalibrated, and the page says which."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].judge.problem is not None)  # type: ignore[union-attr]
                problem = daemon.jobs[0].judge.problem  # type: ignore[union-attr]
                assert problem is not None and problem.startswith("uncalibrated for ")
                url = f"http://127.0.0.1:{daemon.http.port}/"
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    page = await response.text()
                assert f"judge: {problem}" in page

        run_bounded(body, timeout=30)


@pytest.mark.e2e
def test_the_daemon_exports_the_uncertain_share_of_a_judge_that_flips_on_resample(
    tmp_path: Path,
) -> None:
    """Two samples of a judge that inverts its odd sample: every answered check is uncertain,
    served on /metrics as rag_eval_judge_uncertain_ratio{check} = 1, no judged gauge set."""
    labels = tmp_path / "labels.jsonl"
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("flip_on_seed") as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)
        assert settings.judge is not None
        settings = settings.model_copy(
            update={"judge": settings.judge.model_copy(update={"samples": 2})}
        )

        async def body() -> None:
            async with running(settings) as daemon:

                def sample(name: str, **extra: str) -> float | None:
                    return daemon.registry.get_sample_value(name, {**LABELS, **extra})

                await until(
                    lambda: (
                        sample("rag_eval_judge_uncertain_ratio", check="fact_support") is not None
                    )
                )
                assert (1.0, 1.0, None) == (
                    sample("rag_eval_judge_uncertain_ratio", check="fact_support"),
                    sample("rag_eval_judge_uncertain_ratio", check="refusal"),
                    sample("rag_eval_judged_fact_recall"),
                )
                # two cases, each voted pass and fail: alpha = 1 - (4 - 1) * 4 / (2 * 2 * 2)
                assert -0.5 == sample("rag_eval_judge_vote_alpha", check="fact_support")
                url = f"http://127.0.0.1:{daemon.http.port}/metrics"
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    scraped = await response.text()
                assert 'rag_eval_judge_uncertain_ratio{check="fact_support"' in scraped

        run_bounded(body, timeout=30)


@pytest.mark.e2e
def test_a_lenient_judge_is_counted_by_class_and_named_on_the_status_page(
    tmp_path: Path,
) -> None:
    """A daemon judged by a lenient judge: the accepted canaries counted by class over HTTP,
    rag_eval_judge_lenient at 1, and the status page's amber reason saying why."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("lenient") as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)

        async def body() -> None:
            async with running(settings) as daemon:

                def sample(name: str, **extra: str) -> float | None:
                    return daemon.registry.get_sample_value(name, {**LABELS, **extra})

                await until(lambda: sample("rag_eval_judge_lenient") is not None)
                base = f"http://127.0.0.1:{daemon.http.port}"
                async with aiohttp.ClientSession() as session:
                    async with session.get(f"{base}/metrics") as response:
                        scraped = await response.text()
                    async with session.get(f"{base}/") as response:
                        page = await response.text()
                accepted = {
                    kind: _scraped(scraped, "rag_eval_judge_canary_accepted_total", kind)
                    for kind in CANARY_CLASSES
                }
                assert {
                    "injection": 0.0,
                    "specific_but_wrong": 2.0,
                    "vague_but_topical": 0.0,
                } == accepted
                assert 1 == sample("rag_eval_judge_lenient")
                assert (
                    "judge: lenient (the judge accepted 2 of 4 wrong-answer canaries, above 0.25)"
                    in page
                )

        run_bounded(body, timeout=30)


def _scraped(text: str, name: str, kind: str) -> float | None:
    """One job's series of ``name`` for canary class ``kind`` in a scrape (None: absent)."""
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and f'class="{kind}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None

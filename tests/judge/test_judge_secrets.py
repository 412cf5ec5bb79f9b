"""Secrets stay home in every direction (issue 38.6): the target's credential, echoed into its
answer and evidence, never reaches the judge; the judge's own key, echoed into its verdicts,
never reaches the verdict cache; a judge that redirects gets no request followed to another
origin, whatever its headers."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from tests.faults.hostile import HostileEndpoint
from tests.judge.reports import golden
from tests.support.inprocess import run_bounded, running, until
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer, Reply
from tests.support.secret_forms import leaked_forms

pytestmark = pytest.mark.e2e

TARGET_TOKEN = "tgt/5ecret+Tok=77"
JUDGE_KEY = "jdg-5ecret/Key+42"
CASES = [
    {"id": f"c{i}", "question": f"question {i}", "relevant_ids": ["d0"],
     "expected_facts": ["the right one"]}
    for i in range(3)
]  # fmt: skip


def _settings(tmp: Path, target: str, judge: str) -> Settings:
    golden_set = tmp / "golden.jsonl"
    golden_set.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    return Settings(
        targets=(
            HttpTargetConfig(
                name="echo",
                url=target,
                timeout_seconds=5,
                request={"headers": {"Authorization": "Bearer ${ECHO_TARGET_TOKEN}"}},
            ),
        ),
        jobs=(JobConfig(target="echo", dataset=golden_set, interval_seconds=3600),),
        judge=JudgeConfig(url=judge, model="m"),
        reports_dir=tmp / "reports",
        listen="127.0.0.1:0",
    )


def test_the_targets_token_echoed_in_its_answers_never_reaches_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target echoing its Authorization header, in every encoding, into its answer, ids and
    evidence: the daemon's judge requests (bodies and headers) hold no form of it (the
    audit's reproduction: 16 judge requests carried the target's token)."""
    monkeypatch.setenv("ECHO_TARGET_TOKEN", TARGET_TOKEN)
    with HostileEndpoint("echo") as target, LoopbackJudge() as judge:
        settings = _settings(tmp_path, target.url, judge.url)

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].judge.latest is not None, seconds=20)  # type: ignore[union-attr]

        run_bounded(body, timeout=30)
        sent = [json.dumps(r, ensure_ascii=False) for r in judge.requests]
        sent += [json.dumps(h) for h in judge.headers]
    assert judge.calls > 0
    secrets = {"token": TARGET_TOKEN, "header": f"Bearer {TARGET_TOKEN}"}
    assert [] == [leak for text in sent for leak in leaked_forms(text, secrets)]


def test_the_judges_key_echoed_in_its_verdicts_never_reaches_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge echoing every header it got into its reasons and claims: the verdict cache's
    rows hold no form of its key (the variant: stored raw before)."""
    monkeypatch.setenv("JUDGE_SECRET_KEY", JUDGE_KEY)
    with LoopbackJudge("echo") as judge:
        config = JudgeConfig(
            url=judge.url, model="m", headers={"Authorization": "Bearer ${JUDGE_SECRET_KEY}"}
        )
        store = VerdictStore(tmp_path)

        async def go() -> JudgedRun:
            async with JudgePanel(config) as panel:
                return await judge_report(golden(), panel, cache=store)

        asyncio.run(go())
    with sqlite3.connect(tmp_path / "history.sqlite3") as db:
        rows = [row[0] for row in db.execute("SELECT verdict FROM judge_verdicts")]
    assert rows, "the echoed verdicts were cached"
    assert any("headers:" in row for row in rows)
    secrets = {"key": JUDGE_KEY, "header": f"Bearer {JUDGE_KEY}"}
    assert [] == [leak for row in rows for leak in leaked_forms(row, secrets)]


@pytest.mark.parametrize(
    ("status", "header"), [(307, "X-API-Key"), (302, "Authorization")], ids=["307", "302"]
)
def test_a_redirecting_judge_is_not_followed_to_another_origin(
    monkeypatch: pytest.MonkeyPatch, status: int, header: str
) -> None:
    """A judge answering with a redirect to another origin (a 307 with an X-API-Key header
    configured: the audit's reproduction; a 302 with Authorization: the variant): nothing is
    sent there, each call is ``judge_http_status`` naming where it pointed."""
    monkeypatch.setenv("JUDGE_SECRET_KEY", JUDGE_KEY)
    with LoopbackJudge() as elsewhere:
        moved = Reply(body={}, status=status, headers={"Location": elsewhere.url})
        with LoopbackServer(lambda _r: moved, path="/v1/chat/completions") as judge:
            config = JudgeConfig(
                url=judge.url, model="m", headers={header: "${JUDGE_SECRET_KEY}"}, retries=0
            )

            async def go() -> JudgedRun:
                async with JudgePanel(config) as panel:
                    return await judge_report(golden(), panel)

            run = asyncio.run(go())
            asked = len(judge.requests)
        followed = len(elsewhere.requests)
    assert 0 == followed
    assert asked > 0
    assert {"judge_http_status": asked} == run.usage.errors
    errors = {o.error for c in run.cases for o in c.outcomes}
    assert {
        f"judge answered HTTP {status}: redirect to {elsewhere.url}, not followed: set the "
        "judge's url to it"
    } == errors

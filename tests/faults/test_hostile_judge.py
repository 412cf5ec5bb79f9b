"""A hostile judge over real HTTP: a 4 MiB body, JSON nested 5,000 deep, a compressed body
it was not asked for, and every credential echoed back in its verdicts. Each is a judge
error kind (or a redacted reason), never a verdict, never a leak."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.report import write_report
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge

SECRET = "sk-hostile-judge-4242-secret"


def _run(mode: str, monkeypatch: pytest.MonkeyPatch) -> JudgedRun:
    monkeypatch.setenv("HOSTILE_JUDGE_KEY", SECRET)
    with LoopbackJudge(mode) as judge:
        config = JudgeConfig(
            url=judge.url,
            model="m",
            headers={"Authorization": "Bearer ${HOSTILE_JUDGE_KEY}"},
            max_response_bytes=1024 * 1024,
        )

        async def go() -> JudgedRun:
            async with JudgePanel(config) as panel:
                return await judge_report(golden(), panel)

        return asyncio.run(go())


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("huge", "judge_too_large"), ("deep", "judge_malformed"), ("gzip", "judge_malformed")],
)
@pytest.mark.e2e
def test_a_hostile_body_is_an_error_kind(
    mode: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile judge response costs each check its error kind and yields no judged metric and
    no canary verdict."""
    run = _run(mode, monkeypatch)
    # 11 verdicts asked of the cases and injection canaries, 4 of the wrong-answer canaries
    assert run.usage.errors == {kind: 15}
    assert all(v is None for v in run.metrics.values())
    assert all(c.fooled is None for c in run.canaries)


@pytest.mark.e2e
def test_echoed_credentials_never_reach_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Credentials a judge echoes in its reasons never reach the report, and reasons are bounded
    to one line."""
    run = _run("echo", monkeypatch)
    reasons = [o.reason for c in run.cases for o in c.outcomes]
    assert any(SECRET in r for r in reasons)  # the judge did echo it
    path = tmp_path / "r.json"
    write_report(msgspec.structs.replace(golden(), judge=run.to_dict()), path)
    text = path.read_text("utf-8")
    assert SECRET not in text
    assert "Authorization=***" in text  # the whole header value is the secret
    # reasons and claims are bounded, one line each
    assert all(len(r) <= 500 and "\n" not in r for r in reasons)

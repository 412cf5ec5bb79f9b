"""A judge that is down says so (issue 37, item 10): a run whose judge calls all fail names
the judge's URL and the error, says "canaries not judged" rather than "fooled 0", and
``evaluator judge`` exits non-zero when nothing could be judged, the report left as it was.
Real CLI processes and a real daemon, a loopback RAG endpoint, a judge on a closed port or
one answering 503."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from evaluator.judge.record import CanaryResult, JudgedRun, JudgeUsage
from tests.judge.test_cli_judge import _REPLIES, _cli, _setup
from tests.judge.test_daemon_judge import _labels, _settings
from tests.support.inprocess import run_bounded, running, until
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e


class _Closed:
    """A judge URL on a port nothing listens on."""

    def __init__(self) -> None:
        self.url = f"http://127.0.0.1:{free_port()}/v1/chat/completions"


def test_a_run_with_its_judge_down_names_the_judge_and_the_error(tmp_path: Path) -> None:
    """``evaluator run``: the run itself succeeds (exit 0); its judge block names the judge's
    URL and why every call failed, says the canaries were not judged, and a warning on
    stderr says nothing was judged."""
    down = _Closed()
    with LoopbackServer(_REPLIES) as rag:
        config = _setup(tmp_path, rag, down)  # type: ignore[arg-type]
        result = _cli("run", "--config", str(config), "--output", str(tmp_path / "r.json"),
                      cwd=tmp_path)  # fmt: skip
    assert 0 == result.returncode, result.stderr
    assert down.url in result.stdout and "judge unreachable" in result.stdout
    assert "canaries not judged" in result.stdout
    assert "fooled 0" not in result.stdout
    assert "nothing judged" in result.stderr and down.url in result.stderr


def test_evaluator_judge_exits_non_zero_when_nothing_was_judged(tmp_path: Path) -> None:
    """``evaluator judge REPORT`` with the judge down: exit 1, one line naming the judge's
    URL and its error on stderr, and the report's earlier verdicts left as they were."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        config = _setup(tmp_path, rag, judge)
        out = tmp_path / "r.json"
        first = _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert 0 == first.returncode, first.stderr
    judged = out.read_bytes()
    # the same judge, gone
    down = _Closed().url
    config.write_text(config.read_text().replace(judge.url, down))
    result = _cli("judge", str(out), "--config", str(config), "--no-judge-cache", cwd=tmp_path)
    assert 1 == result.returncode, result.stdout
    assert "nothing judged" in result.stderr and down in result.stderr
    assert "judge unreachable" in result.stderr
    assert judged == out.read_bytes()


def test_a_judge_answering_503_is_named_with_its_status(tmp_path: Path) -> None:
    """A judge up but refusing every call (503): the status it answered, by URL."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("busy") as judge:
        config = _setup(tmp_path, rag, judge, retries=0)
        result = _cli("run", "--config", str(config), "--output", str(tmp_path / "r.json"),
                      cwd=tmp_path)  # fmt: skip
        url = judge.url
    assert 0 == result.returncode, result.stderr
    assert url in result.stdout and "HTTP 503" in result.stdout
    assert "canaries not judged" in result.stdout


def test_the_canaries_line_counts_only_judged_canaries() -> None:
    """ "fooled 0" only over canaries judged: none judged says so; some says how many."""
    from evaluator.judge.apply import canaries_line, nothing_judged

    def run(*fooled: bool | None) -> JudgedRun:
        canaries = tuple(CanaryResult("fact_support", f"c{i}", f) for i, f in enumerate(fooled))
        return JudgedRun("m", "p", {}, JudgeUsage(), canaries, ())

    assert "canaries not judged (2: no verdict came back)" == canaries_line(run(None, None))
    assert "canaries 2, judged 1, fooled 0" == canaries_line(run(False, None))
    assert "canaries 2, fooled 1" == canaries_line(run(True, False))
    assert "canaries 0" == canaries_line(run())
    assert nothing_judged(run(None, None)) and not nothing_judged(run(False, None))
    assert not nothing_judged(run()), "nothing to judge is not a judge that is down"


def test_the_daemon_names_a_judge_that_is_down(tmp_path: Path) -> None:
    """In the daemon, a run whose judge calls all fail: the status page (over HTTP) names
    the judge's URL and the error."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    down = _Closed()
    with LoopbackServer(_REPLIES) as rag:
        settings = _settings(tmp_path, rag.url, down.url, labels)

        async def body() -> None:
            async with running(settings) as daemon:
                judge = daemon.jobs[0].judge
                assert judge is not None
                await until(lambda: judge.problem is not None)
                problem = judge.problem
                assert problem is not None and problem.startswith("nothing judged")
                assert down.url in problem and "judge unreachable" in problem
                url = f"http://127.0.0.1:{daemon.http.port}/"
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    page = await response.text()
                assert 'data-state="amber"' in page and down.url in page

        run_bounded(body, timeout=30)

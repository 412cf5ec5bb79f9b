"""``evaluator run`` with a judge and ``evaluator judge REPORT``: real CLI processes against
a loopback RAG endpoint and loopback judges."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evaluator.judge.record import judged_run_from_dict
from evaluator.report import read_report
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))

_CASES = [
    {
        "id": "refund",
        "question": "How long do refunds take?",
        "relevant_ids": ["d1"],
        "expected_facts": [["5 business days"]],
    },
    {
        "id": "shipping",
        "question": "How long does shipping take?",
        "relevant_ids": ["d2"],
        "expected_facts": [["3 days"]],
    },
    {
        "id": "ceo",
        "question": "Who is the CEO's dentist?",
        "relevant_ids": [],
        "unanswerable": True,
    },
]
_REPLIES = {
    "How long do refunds take?": Reply(
        body={
            "answer": "Refunds arrive within 5 business days.",
            "retrieved": [{"id": "d1", "text": "Refunds arrive within 5 business days."}],
        }
    ),
    "How long does shipping take?": Reply(
        body={
            "answer": "Shipping takes a week.",
            "retrieved": [{"id": "d2", "text": "Shipping takes 3 days."}],
        }
    ),
    "Who is the CEO's dentist?": Reply(body={"answer": "I don't know.", "retrieved": []}),
}


def _setup(tmp: Path, rag: LoopbackServer, judge: LoopbackJudge, **extra: Any) -> Path:
    (tmp / "golden.jsonl").write_text("\n".join(json.dumps(c) for c in _CASES) + "\n")
    judge_keys = "".join(f"{k} = {json.dumps(v)}\n" for k, v in extra.items())
    config = tmp / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp / "reports"}"\n'
        "[judge]\n"
        f'url = "{judge.url}"\nmodel = "loopback-judge"\n'
        'headers = {Authorization = "Bearer ${JUDGE_E2E_KEY}"}\n'
        f"{judge_keys}"
        "[[targets]]\n"
        f'name = "rag"\nurl = "{rag.url}"\n'
        "[[jobs]]\n"
        f'target = "rag"\ndataset = "{tmp / "golden.jsonl"}"\n'
    )
    return config


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "JUDGE_E2E_KEY": "sk-e2e-judge-secret-77"}
    return subprocess.run(
        [EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=90, check=False, env=env
    )


def test_run_judges_and_the_report_carries_the_verdicts(tmp_path: Path) -> None:
    """``evaluator run`` with a judge prints the judged metrics and writes the verdicts, unsupported
    claims included, into the report."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        config = _setup(tmp_path, rag, judge)
        out = tmp_path / "r.json"
        result = _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "judged_fact_recall" in result.stdout and "0.500" in result.stdout
        report = read_report(out)
        assert report.judge is not None
        judged = judged_run_from_dict(report.judge, str(out))
        assert judged.model == "loopback-judge" and not judged.compromised
        assert judged.metrics["judged_answer_accuracy"] == 0.5
        assert judged.metrics["judged_refusal_rate"] == 1.0
        shipping = judged.case("shipping")
        assert shipping is not None
        grounded = shipping.outcome("groundedness")
        assert grounded is not None and grounded.unsupported == ("Shipping takes a week.",)
        # the judge's calls never count as the target's: three cases, three target requests
        assert len(rag.requests) == 3
        assert report.summary.error_count == 0
        assert judge.headers[0]["Authorization"] == "Bearer sk-e2e-judge-secret-77"
        assert "sk-e2e-judge-secret-77" not in out.read_text()

        # a second run: every verdict from the history store's cache but the canaries (two
        # injection canaries, two of each wrong-answer class)
        calls = judge.calls
        again = _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        judged = judged_run_from_dict(read_report(out).judge, str(out))
        assert judged.usage.cache_hits == 5 and judge.calls - calls == 2 + 2 * 2
        # --no-judge-cache asks again
        calls = judge.calls
        fresh = _cli(
            "run", "--config", str(config), "--output", str(out), "--no-judge-cache", cwd=tmp_path
        )
        assert fresh.returncode == 0, fresh.stderr
        assert judge.calls - calls == 5 + 2 + 2 * 2


def test_judge_command_marks_a_fooled_judge_compromised(tmp_path: Path) -> None:
    """A judge fooled by the canaries makes ``evaluator run`` print COMPROMISED and mark the report
    compromised."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("fooled") as judge:
        config = _setup(tmp_path, rag, judge)
        out = tmp_path / "r.json"
        # judge later, from the saved report
        config.write_text(config.read_text().replace("[judge]", "[judge]\nmax_calls = 1000", 1))
        result = _cli(
            "run", "--config", str(config), "--output", str(out), "--no-judge-cache", cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert "COMPROMISED" in result.stdout
        assert judged_run_from_dict(read_report(out).judge, str(out)).compromised


def test_judge_command_with_a_budget(tmp_path: Path) -> None:
    """The call budget skips the remaining checks and counts them, in ``evaluator run`` and in
    ``evaluator judge`` of the saved report."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        config = _setup(tmp_path, rag, judge, max_calls=4, concurrency=1)
        out = tmp_path / "r.json"
        text = config.read_text()
        config.write_text(text.replace("[judge]", "[judge]\ncache = false", 1))
        assert (
            _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path).returncode == 0
        )
        judged = judged_run_from_dict(read_report(out).judge, str(out))
        # 5 checks and 6 canaries (2 injection, 2 of each wrong-answer class), 4 asked
        assert judged.usage.calls == 4 and judged.usage.skipped == 5 + 6 - 4
        result = _cli("judge", str(out), "--config", str(config), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "skipped 7" in result.stdout


def test_a_hanging_judge_never_fails_the_run(tmp_path: Path) -> None:
    """A judge that never answers costs each check a judge_timeout and leaves the run and its
    deterministic metrics unharmed."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("hang") as judge:
        config = _setup(tmp_path, rag, judge, timeout_seconds=0.3, concurrency=8)
        out = tmp_path / "r.json"
        result = _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        judged = judged_run_from_dict(read_report(out).judge, str(out))
        assert judged.usage.errors == {"judge_timeout": 5 + 2 + 2 * 2}
        summary = read_report(out).summary  # the deterministic metrics, unaffected
        assert summary.error_count == 0 and summary.cost_total is None

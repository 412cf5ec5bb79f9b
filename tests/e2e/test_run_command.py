"""`evaluator run` as a user runs it: a subprocess against a real HTTP server on loopback."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply

LOG2_3 = math.log2(3)

CASES = [
    {"id": "c1", "question": "q1", "relevant_ids": ["d1", "d2"], "expected_facts": ["七天"]},
    {
        "id": "c2",
        "question": "q2",
        "relevant_ids": {"d3": 2, "d4": 1},
        "expected_facts": [["7 days", "seven days"], "receipt"],
        "tags": ["graded"],
    },
    {"id": "c3", "question": "q3", "unanswerable": True, "tags": ["unanswerable"]},
    {"id": "c4", "question": "q4", "relevant_ids": ["d5"], "expected_facts": ["48小时"]},
    {"id": "c5", "question": "q5", "relevant_ids": ["d1"], "expected_facts": ["x"]},
    {"id": "c6", "question": "q6", "relevant_ids": ["d1"], "expected_facts": ["x"]},
    {"id": "c7", "question": "q7", "relevant_ids": ["d6"], "expected_facts": ["$20"]},
    {"id": "c8", "question": "q8", "relevant_ids": ["d1"], "expected_facts": ["x"]},
]


def _body(ranked: list[str], answer: str, citations: list[Any], **timings: float) -> Any:
    return {
        "answer": answer,
        "retrieved": [
            {"id": i, "score": 10.0 - n, "text": f"text {i}"} for n, i in enumerate(ranked)
        ],
        "citations": citations,
        "timings": timings,
    }


class _Script:
    """Replies per question; q7 answers 503 once, then succeeds (a retried transient error)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.q7_calls = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        q = request["question"]
        if q == "q1":
            return Reply(
                _body(["x", "d1", "y", "d2"], "申请需在 七天 内提交", [2], keyword=0.01, model=0.2)
            )
        if q == "q2":
            return Reply(
                _body(["d4", "d3"], "Within Seven Days.", ["d3", 5], keyword=0.02, model=0.3)
            )
        if q == "q3":
            return Reply(_body([], "没有足够证据回答。", [], model=0.05))
        if q == "q4":
            return Reply(_body(["d5"], "I don't know.", [], keyword=0.01))
        if q == "q5":
            return Reply(body={"detail": "boom"}, status=500)
        if q == "q6":
            return Reply(raw=b"{not json")
        if q == "q7":
            with self.lock:
                self.q7_calls += 1
                first = self.q7_calls == 1
            if first:
                return Reply(body={"detail": "busy"}, status=503)
            return Reply(_body(["d6"], "It costs $20.", [1], keyword=0.03, model=0.1))
        return Reply(_body(["d1"], "x", [1]), delay=3.0)  # q8: slower than the timeout


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder holding the module's golden set."""
    dataset = tmp_path / "golden.jsonl"
    dataset.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CASES) + "\n", "utf-8")
    return tmp_path


def _config(workdir: Path, url: str) -> Path:
    path = workdir / "evaluator.toml"
    path.write_text(
        f"""
k = 3
concurrency = 4

[[targets]]
name = "loopback"
url = "{url}"
timeout_seconds = 0.5
retry = {{ retries = 2, backoff_initial_seconds = 0.01, backoff_max_seconds = 0.05 }}

[[jobs]]
target = "loopback"
dataset = "{workdir / "golden.jsonl"}"
""",
        "utf-8",
    )
    return path


def _evaluator(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("evaluator")
    return subprocess.run(
        [str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.e2e
class TestRunCommand:
    def test_every_case_and_summary_value(self, workdir: Path) -> None:
        """Every per-case and summary value of the written report is as computed by hand."""
        with LoopbackServer(_Script()) as server:
            out = workdir / "report.json"
            result = _evaluator(
                "run", "--config", str(_config(workdir, server.url)), "--output", str(out),
                cwd=workdir,
            )  # fmt: skip
        assert 0 == result.returncode, result.stderr
        assert "golden against loopback" in result.stdout
        report = json.loads(out.read_text("utf-8"))
        assert (3, 8, 3, "loopback", "golden") == (
            report["k"], report["case_count"], report["error_count"], report["target"],
            report["dataset"],
        )  # fmt: skip
        cases = {c["id"]: c for c in report["cases"]}
        assert ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"] == list(cases)

        c1 = cases["c1"]
        assert ["x", "d1", "y", "d2"] == c1["ranked_ids"]
        assert 0.5 == c1["recall_at_k"]
        assert 0.5 == c1["mrr"]
        assert (1 / LOG2_3) / (1 + 1 / LOG2_3) == pytest.approx(c1["ndcg_at_k"])
        assert (1.0, 0.5, True, 1.0, False) == (
            c1["citation_precision"], c1["citation_recall"], c1["answer_correct"],
            c1["fact_recall"], c1["refused"],
        )  # fmt: skip
        assert {"keyword": 0.01, "model": 0.2} == c1["stage_seconds"]

        c2 = cases["c2"]
        assert {"d3": 2, "d4": 1} == c2["relevant_ids"]
        assert (1.0, 1.0) == (c2["recall_at_k"], c2["mrr"])
        assert (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3) == pytest.approx(c2["ndcg_at_k"])
        assert (0.5, 0.5, False, 0.5) == (
            c2["citation_precision"], c2["citation_recall"], c2["answer_correct"],
            c2["fact_recall"],
        )  # fmt: skip

        c3 = cases["c3"]
        assert (1.0, 1.0, 1.0, 1.0, True, True) == (
            c3["recall_at_k"], c3["mrr"], c3["ndcg_at_k"], c3["citation_precision"],
            c3["answer_correct"], c3["refused"],
        )  # fmt: skip
        assert (None, None) == (c3["citation_recall"], c3["fact_recall"])

        c4 = cases["c4"]
        assert (1.0, 0.0, 0.0, False, 0.0, True) == (
            c4["recall_at_k"], c4["citation_precision"], c4["citation_recall"],
            c4["answer_correct"], c4["fact_recall"], c4["refused"],
        )  # fmt: skip

        assert {
            "kind": "http_status",
            "message": cases["c5"]["error"]["message"],
            "status": 500,
        } == (cases["c5"]["error"])
        assert 1 == cases["c5"]["attempts"]
        assert "bad_response" == cases["c6"]["error"]["kind"]
        assert "timeout" == cases["c8"]["error"]["kind"]
        assert cases["c8"]["latency_seconds"] >= 0.5
        for failed in ("c5", "c6", "c8"):
            scores = [cases[failed][m] for m in ("recall_at_k", "mrr", "answer_correct")]
            assert [None, None, None] == scores

        c7 = cases["c7"]
        assert (2, None, True) == (c7["attempts"], c7["error"], c7["answer_correct"])

        s = report["summary"]
        ndcg_mean = ((1 / LOG2_3) / (1 + 1 / LOG2_3) + (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3) + 2) / 4
        expected = {
            "recall_at_k": 0.875,
            "mrr": 0.875,
            "ndcg_at_k": ndcg_mean,
            "citation_precision": 0.7,
            "citation_recall": 0.5,
            "answer_accuracy": 0.6,
            "fact_recall": 0.625,
            "false_refusal_rate": 0.25,
            "correct_refusal_rate": 1.0,
            "error_rate": 0.375,
        }
        assert expected == pytest.approx({k: s[k] for k in expected})
        latencies = sorted(c["latency_seconds"] for c in report["cases"])
        assert latencies[7] == s["p95_seconds"]  # nearest rank: ceil(0.95 * 8) = 8
        assert latencies[3] == s["p50_seconds"]  # ceil(0.5 * 8) = 4
        assert {"keyword": 0.03, "model": 0.3} == s["stage_p95_seconds"]
        assert {"bad_response": 1, "http_status": 1, "timeout": 1} == s["errors_by_kind"]
        assert 1.0 == s["by_tag"]["unanswerable"]["answer_accuracy"]
        assert 1 == s["by_tag"]["graded"]["case_count"]

    def test_target_down_for_every_case_exits_1(self, workdir: Path) -> None:
        """A target refusing every connection: exit 1, one line naming the cause, report kept."""
        with LoopbackServer(_Script()) as server:
            url = server.url  # the server is gone once the block ends: connections are refused
        out = workdir / "down.json"
        result = _evaluator(
            "run", "--dataset", str(workdir / "golden.jsonl"), "--target-url", url,
            "--output", str(out), cwd=workdir,
        )  # fmt: skip
        assert 1 == result.returncode
        stderr = result.stderr.strip().splitlines()
        assert 1 == len(stderr), result.stderr
        assert "no case could be scored" in stderr[0] and "connect" in stderr[0]
        assert 8 == json.loads(out.read_text("utf-8"))["error_count"]

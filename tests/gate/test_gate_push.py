"""--pushgateway: a real HTTP server on loopback records what the gate pushes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evaluator.gate import DEFAULT_RULES, GateResult, evaluate_gate
from evaluator.gate.push import PushError, push_result
from tests.gate.factories import record, report
from tests.support.ports import free_port


@dataclass
class Received:
    method: str
    path: str
    body: str


@dataclass
class FakeGateway:
    """A Pushgateway stand-in: records each request, answers ``status``."""

    url: str
    requests: list[Received] = field(default_factory=list)
    status: int = 200


@pytest.fixture
def gateway() -> Iterator[FakeGateway]:
    """A fake Pushgateway recording the requests it gets."""
    fake = FakeGateway(url="")

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length).decode()
            fake.requests.append(Received(self.command, self.path, body))
            self.send_response(fake.status)
            self.end_headers()

        do_PUT = do_POST = do_DELETE = _record

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _failing_result() -> GateResult:
    b = report([record("a"), record("b")], dataset="refunds", target="prod:8000")
    c = report([record("a", rr=0.5), record("b")], dataset="refunds", target="staging:8000")
    return evaluate_gate(b, c, DEFAULT_RULES)


class TestPush:
    """The verdict and the candidate summary, PUT under job rag_eval_gate and the dataset."""

    @pytest.mark.e2e
    def test_put_with_grouping_key(self, gateway: FakeGateway) -> None:
        """One PUT to /metrics/job/rag_eval_gate/dataset/<name>/target/<target>, every series
        named rag_eval_ci_gate_* (none a name the daemon exports)."""
        push_result(gateway.url, _failing_result())
        (req,) = gateway.requests
        path = "/metrics/job/rag_eval_gate/dataset/refunds/target/staging%3A8000"
        assert ("PUT", path) == (req.method, req.path)
        samples = {
            line.split(" ")[0]: float(line.split(" ")[1])
            for line in req.body.splitlines()
            if line and not line.startswith("#")
        }
        assert 0.0 == samples['rag_eval_ci_gate_passing{target="staging:8000"}']
        assert 1.0 == samples['rag_eval_ci_gate_failed_rules{target="staging:8000"}']
        rule = 'rag_eval_ci_gate_rule_passing{rule="mrr.max_drop",target="staging:8000"}'
        assert 0.0 == samples[rule]
        assert 0.75 == samples['rag_eval_ci_gate_candidate_mrr{target="staging:8000"}']
        names = {key.split("{")[0] for key in samples}
        assert {
            "rag_eval_ci_gate_passing",
            "rag_eval_ci_gate_rule_passing",
            "rag_eval_ci_gate_failed_rules",
            "rag_eval_ci_gate_missing_cases",
            "rag_eval_ci_gate_candidate_recall_at_k",
            "rag_eval_ci_gate_candidate_mrr",
            "rag_eval_ci_gate_candidate_ndcg_at_k",
            "rag_eval_ci_gate_candidate_citation_precision",
            "rag_eval_ci_gate_candidate_citation_recall",
            "rag_eval_ci_gate_candidate_answer_accuracy",
            "rag_eval_ci_gate_candidate_error_ratio",
            "rag_eval_ci_gate_candidate_latency_p95_seconds",
        } == names

    @pytest.mark.e2e
    def test_refused(self, gateway: FakeGateway) -> None:
        """A non-2xx answer is one PushError line naming the gateway."""
        gateway.status = 500
        with pytest.raises(PushError, match=f"cannot push to the Pushgateway at {gateway.url}"):
            push_result(gateway.url, _failing_result())

    def test_unreachable(self) -> None:
        """Nothing listening: a PushError, not a urllib traceback."""
        port = free_port()
        with pytest.raises(PushError, match="cannot push"):
            push_result(f"http://127.0.0.1:{port}", _failing_result(), timeout=2)

"""Failure modes against real loopback servers: each case ends in the right error kind,
the run completes, and every case is in the report."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from typing import NamedTuple

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.errors import ResponseTooLargeError
from evaluator.factory import build_target
from evaluator.models import CaseRecord
from evaluator.report import RunReport, report_to_dict
from evaluator.run.runner import RetryEvent
from tests.support.loopback import LoopbackServer, Reply
from tests.support.ports import free_port
from tests.targets.helpers import GOOD_BODY, Sequenced, case, dataset, run_config

MiB = 1024 * 1024

#: question -> the replies it gets, in turn
SCRIPT = {
    "good": [Reply(body=GOOD_BODY)],
    "hanging read": [Reply(body=GOOD_BODY, delay=3.0)],
    "slow drip": [Reply(body=GOOD_BODY, drip=0.05)],
    "rate limited": [Reply(status=429, headers={"Retry-After": "1"}), Reply(body=GOOD_BODY)],
    "unavailable once": [Reply(status=503, body={"error": "busy"}), Reply(body=GOOD_BODY)],
    "unavailable": [Reply(status=503, body={"error": "still busy"})],
    "server error": [Reply(status=500, body={"error": "boom"})],
    "invalid json": [Reply(raw=b"<html>Bad gateway</html>")],
    "wrong types": [Reply(body={"answer": 42, "retrieved": [{"id": "refund-policy"}]})],
    "missing ids": [Reply(body={"answer": "7 days", "retrieved": [{"score": 1.0}]})],
    "oversized": [Reply(stream_bytes=50 * MiB)],
    "reset mid-body": [Reply(body=GOOD_BODY, reset=True)],
}

#: question -> (error kind or None when scored, HTTP status, attempts)
EXPECTED = {
    "good": (None, None, 1),
    "hanging read": ("timeout", None, 1),
    "slow drip": ("timeout", None, 1),
    "rate limited": (None, None, 2),
    "unavailable once": (None, None, 2),
    "unavailable": ("http_status", 503, 3),
    "server error": ("http_status", 500, 1),
    "invalid json": ("bad_response", None, 1),
    "wrong types": ("bad_response", None, 1),
    "missing ids": ("bad_response", None, 1),
    "oversized": ("response_too_large", None, 1),
    "reset mid-body": ("connect", None, 1),
}


def _outcome(record: CaseRecord) -> tuple[str | None, int | None, int]:
    error = record.error
    return (error.kind if error else None, error.status if error else None, record.attempts)


class FailuresRun(NamedTuple):
    report: RunReport
    events: list[RetryEvent]
    script: Sequenced
    server: LoopbackServer


@pytest.fixture(scope="module")
def failures_run() -> FailuresRun:
    """One run of every failure mode at once, against one loopback server."""
    script = Sequenced(SCRIPT)
    with LoopbackServer(script) as server:
        config = HttpTargetConfig(
            url=server.url,
            timeout_seconds=1.0,
            read_timeout_seconds=0.5,
            connect_timeout_seconds=1.0,
        )
        report, events = run_config(config, dataset(SCRIPT), concurrency=len(SCRIPT))
    return FailuresRun(report, events, script, server)


@pytest.mark.e2e
class TestEveryFailureMode:
    """All failure modes in one run: none of them stops it or loses a case."""

    def test_each_case_ends_in_its_kind(self, failures_run: FailuresRun) -> None:
        """Each misbehaving case of the failures endpoint ends in its own error kind, status and
        attempts."""
        report = failures_run.report
        assert EXPECTED == {c.id: _outcome(c) for c in report.cases}

    def test_nothing_lost(self, failures_run: FailuresRun) -> None:
        """Every case is in the report, in golden-set order, and the report serialises."""
        report = failures_run.report
        assert list(SCRIPT) == [c.id for c in report.cases]
        assert len(SCRIPT) == report.case_count
        assert 9 == report.error_count
        data = json.loads(json.dumps(report_to_dict(report)))
        assert 9 == sum(1 for c in data["cases"] if c["error"] is not None)

    def test_failed_cases_are_not_scored(self, failures_run: FailuresRun) -> None:
        """Errors are not scores: failed cases have none and stay out of the averages."""
        report = failures_run.report
        assert all(c.scores is None for c in report.cases if c.error is not None)
        assert 3 == report.summary.scored_count
        assert 1.0 == report.summary.totals["recall_at_k"].mean

    def test_retries_are_reported(self, failures_run: FailuresRun) -> None:
        """Each retry is an event for the logs: 429 honoured Retry-After, 503s retried."""
        events = failures_run.events
        seen = sorted((e.case_id, e.attempt, e.kind) for e in events)
        assert [
            ("rate limited", 1, "http_status"),
            ("unavailable", 1, "http_status"),
            ("unavailable", 2, "http_status"),
            ("unavailable once", 1, "http_status"),
        ] == seen
        rate_limited = next(e for e in events if e.case_id == "rate limited")
        assert 1.0 == rate_limited.sleep_seconds

    def test_retry_after_waited(self, failures_run: FailuresRun) -> None:
        """The 429 case's latency covers the Retry-After wait and both attempts."""
        report = failures_run.report
        record = next(c for c in report.cases if c.id == "rate limited")
        assert record.latency_seconds >= 1.0

    def test_not_retried(self, failures_run: FailuresRun) -> None:
        """500, timeouts, bad bodies and a mid-body reset are sent exactly once."""
        calls = failures_run.script.calls
        once = ["server error", "hanging read", "slow drip", "invalid json", "reset mid-body"]
        assert [1] * len(once) == [calls[q] for q in once]
        assert 3 == calls["unavailable"]

    def test_messages(self, failures_run: FailuresRun) -> None:
        """Messages say what happened, naming the field, the limit or the status."""
        errors = {c.id: c.error.message for c in failures_run.report.cases if c.error}
        assert errors["server error"].startswith("HTTP 500 from 127.0.0.1:")
        assert '"boom"' in errors["server error"]
        assert "within 1s (timeout_seconds)" in errors["slow drip"]
        assert "sent nothing for 0.5s" in errors["hanging read"]
        assert "not valid JSON" in errors["invalid json"]
        assert "<html>Bad gateway</html>" in errors["invalid json"]
        assert "field 'answer' is a number" in errors["wrong types"]
        assert "field 'retrieved[0].id'" in errors["missing ids"]
        assert "max_response_bytes (4194304)" in errors["oversized"]
        assert "lost mid-response" in errors["reset mid-body"]

    def test_oversized_cut_early(self, failures_run: FailuresRun) -> None:
        """Of 50 MiB, the client read a little past the 4 MiB cap and hung up."""
        assert failures_run.server.bytes_streamed < 16 * MiB


class TestRefused:
    """Nothing listens on the port: connect errors, retried, every case reported."""

    def test_refused(self) -> None:
        """A refused connection fails every case as ``connect`` after its retries, naming the
        address."""
        config = HttpTargetConfig(url=f"http://127.0.0.1:{free_port()}/rag")
        report, events = run_config(config, dataset(["a", "b", "c"]))
        assert [("connect", None, 3)] * 3 == [_outcome(c) for c in report.cases]
        assert 6 == len(events)
        assert all(
            "cannot connect to 127.0.0.1:" in c.error.message for c in report.cases if c.error
        )


@pytest.mark.e2e
class TestOversized:
    """The size cap holds memory down whether or not the length is declared."""

    @pytest.mark.parametrize("declare_length", [False, True], ids=["chunked", "declared"])
    def test_memory_bounded(self, declare_length: bool) -> None:
        """A 50 MiB body ends in response_too_large quickly, with a small peak of memory."""
        reply = Reply(stream_bytes=50 * MiB, declare_length=declare_length)
        with LoopbackServer(lambda _request: reply) as server:
            target = build_target(HttpTargetConfig(url=server.url, max_response_bytes=1 * MiB))

            async def go() -> None:
                try:
                    await target.query(case("big"), 3)
                finally:
                    await target.aclose()

            tracemalloc.start()
            try:
                with pytest.raises(ResponseTooLargeError) as info:
                    asyncio.run(go())
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            streamed = server.bytes_streamed
        assert "response_too_large" == info.value.kind
        if declare_length:
            assert f"response of {50 * MiB} bytes" in info.value.message
        assert peak < 12 * MiB, peak
        assert streamed < 16 * MiB  # it stopped reading: "quickly" is this, not a timing

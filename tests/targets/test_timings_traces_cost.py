"""Server-Timing headers, millisecond body timings, W3C traceparent per case (in the report,
the case log line and the histogram exemplars of a real daemon), and cost with a gate rule."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import structlog
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from structlog.testing import LogCapture

from evaluator.config import HttpTargetConfig, JobConfig, RetryConfig, Settings
from evaluator.gate.diagnosis import diagnose
from evaluator.gate.rules import Rule, check_rule
from evaluator.summary import Summary, Total
from evaluator.targets.server_timing import MAX_DUR_MS, MAX_ENTRIES, parse_server_timing
from tests.support.inprocess import running, until
from tests.support.loopback import LoopbackServer, Reply
from tests.support.rawhttp import RawServer
from tests.targets.helpers import GOOD_BODY, dataset, run_config

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


class TestServerTimingParser:
    def test_w3c_examples(self) -> None:
        """Several entries and headers, desc, quoted commas; dur in ms becomes seconds."""
        parsed = parse_server_timing(
            ['db;dur=53.2, cache;desc="Cache, Read";dur=1.5', "miss, app;dur=0", 'total;dur="7"']
        )
        assert {"db": 0.0532, "cache": 0.0015, "app": 0.0, "total": 0.007} == pytest.approx(parsed)

    def test_malformed_and_duplicates(self) -> None:
        """Malformed Server-Timing entries are dropped and an unreadable duration does not claim
        its name."""
        parsed = parse_server_timing(["db;dur=abc, db;dur=5, bad name;dur=1, neg;dur=-3, x;dur=2"])
        # an unreadable dur does not claim the name; a name with a space is no token
        assert {"db": 0.005, "x": 0.002} == parsed

    @pytest.mark.parametrize(
        "dur", ["nan", "inf", "-inf", "Infinity", "1e308", "1_000", "9" * 400, "0x10", "1e999",
                str(MAX_DUR_MS * 10), " 5 5", "1.5.5"],
    )  # fmt: skip
    def test_numbers_pass_the_border(self, dur: str) -> None:
        """A dur the border refuses (not a plain number, not finite, beyond a day) is
        skipped as a malformed one is, never a stage of 1e305 seconds (issue 24.1)."""
        assert {"ok": 0.002} == parse_server_timing([f"x;dur={dur}, ok;dur=2"])

    def test_a_day_is_the_longest_stage(self) -> None:
        """A stage duration is capped at a day."""
        assert {"x": MAX_DUR_MS / 1000} == parse_server_timing([f"x;dur={MAX_DUR_MS:.0f}"])

    def test_entries_bounded(self) -> None:
        """The entries read from Server-Timing are bounded."""
        header = ", ".join(f"s{i};dur=1" for i in range(1000))
        assert MAX_ENTRIES == len(parse_server_timing([header]))


@pytest.mark.e2e
class TestTimingsOnTheWire:
    def test_server_timing_headers_become_stages(self) -> None:
        """Two Server-Timing headers and body timings: the body wins for a shared name."""
        body = json.dumps({**GOOD_BODY, "timings": {"model": 0.2}}).encode()
        raw = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b'Server-Timing: retrieve;dur=12.5, rerank;desc="cross-encoder";dur=30\r\n'
            b"Server-Timing: model;dur=999\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
        )
        with RawServer(raw) as server:
            report, _ = run_config(HttpTargetConfig(url=server.url), dataset(["q"]))
        stages = dict(report.cases[0].stage_seconds)
        assert {"retrieve": 0.0125, "rerank": 0.03, "model": 0.2} == pytest.approx(stages)

    def test_server_timing_can_be_switched_off(self) -> None:
        """With server_timing off, Server-Timing gives no stage timings."""
        reply = Reply(body={**GOOD_BODY, "timings": {}}, headers={"Server-Timing": "db;dur=5"})
        with LoopbackServer(lambda _r: reply) as server:
            report, _ = run_config(
                HttpTargetConfig(url=server.url, server_timing=False), dataset(["q"])
            )
        assert {} == dict(report.cases[0].stage_seconds)

    def test_millisecond_body_timings(self) -> None:
        """Elasticsearch-style ``took`` in milliseconds, declared per mapping."""
        reply = Reply(body={"took": {"search": 17}, "hits": [{"id": "refund-policy"}]})
        with LoopbackServer(lambda _r: reply) as server:
            config = HttpTargetConfig(
                url=server.url,
                response={"ids": "hits[].id", "timings": "took", "timings_unit": "milliseconds"},
            )
            report, _ = run_config(config, dataset(["q"]))
        assert {"search": pytest.approx(0.017)} == dict(report.cases[0].stage_seconds)


@pytest.mark.e2e
class TestTraceparent:
    def test_fresh_trace_per_case_in_the_report(self) -> None:
        """Each case is sent a fresh W3C traceparent whose trace id the report keeps."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            report, _ = run_config(HttpTargetConfig(url=server.url), dataset(["a", "b", "c"]))
        sent = [TRACEPARENT.match(h["traceparent"]) for h in server.request_headers]
        assert all(sent)
        trace_ids = {m.group(1) for m in sent if m is not None}
        assert trace_ids == {c.trace_id for c in report.cases} and 3 == len(trace_ids)

    def test_header_name_and_off_switch(self) -> None:
        """The trace header's name can be changed and the header switched off."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            config = HttpTargetConfig(url=server.url, trace={"header": "X-Trace"})
            run_config(config, dataset(["a"]))
            run_config(HttpTargetConfig(url=server.url, trace={"enabled": False}), dataset(["b"]))
        assert TRACEPARENT.match(server.request_headers[0]["X-Trace"])
        assert "traceparent" not in {k.lower() for k in server.request_headers[1]}

    def test_failed_case_keeps_its_trace_id(self) -> None:
        """A failed case keeps the trace id it was sent."""
        with LoopbackServer(lambda _r: Reply(status=500, body={"error": "boom"})) as server:
            report, _ = run_config(HttpTargetConfig(url=server.url), dataset(["a"]))
        record = report.cases[0]
        assert record.error is not None and record.trace_id is not None
        assert record.trace_id in server.request_headers[0]["traceparent"]

    def test_trace_id_in_log_line_and_exemplars_of_a_daemon(self, tmp_path: Path) -> None:
        """A real (in-process) daemon: the trace id of each case is in its log line, in the
        report and in the exemplars of the latency histogram, as Grafana reads them."""
        golden = tmp_path / "golden.jsonl"
        golden.write_text(
            json.dumps({"id": "c0", "question": "q0", "relevant_ids": ["refund-policy"]}) + "\n"
        )
        capture = LogCapture()
        structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            settings = Settings(
                targets=[HttpTargetConfig(name="t", url=server.url, retry=RetryConfig(retries=0))],
                jobs=[JobConfig(target="t", dataset=golden, interval_seconds=60)],
                reports_dir=tmp_path / "reports",
                listen="127.0.0.1:0",
            )
            out: dict[str, Any] = {}

            async def body() -> None:
                async with running(settings) as daemon:
                    await until(lambda: daemon.jobs[0].store.latest is not None)
                    out["latest"] = daemon.jobs[0].store.latest
                    out["exposition"] = openmetrics(daemon.registry).decode()

            asyncio.run(asyncio.wait_for(body(), 30))
        trace_id = out["latest"].cases[0].trace_id
        assert trace_id is not None
        assert TRACEPARENT.match(server.request_headers[0]["traceparent"])
        assert trace_id in server.request_headers[0]["traceparent"]
        lines = [e for e in capture.entries if e["event"] == "case"]
        assert [trace_id] == [e["trace_id"] for e in lines]
        exemplars = [
            s.exemplar.labels
            for f in text_string_to_metric_families(out["exposition"])
            if f.name == "rag_eval_case_latency_seconds"
            for s in f.samples
            if s.exemplar is not None
        ]
        assert exemplars and all(e["trace_id"] == trace_id for e in exemplars)


@pytest.mark.e2e
class TestCost:
    def _report(self, price: float, usage: Any = None) -> Any:
        body = {**GOOD_BODY, "usage": usage or {"in": 100, "out": 20}}
        with LoopbackServer(lambda _r: Reply(body=body)) as server:
            config = HttpTargetConfig(
                url=server.url,
                response={
                    "ids": "retrieved[].id",
                    "answer": "answer",
                    "input_tokens": "usage.in",
                    "output_tokens": "usage.out",
                },
                prices={"input_per_1k": price, "output_per_1k": 2 * price},
            )
            report, _ = run_config(config, dataset(["a", "b"]))
        return report

    def test_cost_per_case_and_totals(self) -> None:
        """Token usage gives each case's cost at the configured prices, and the summary's totals
        and cost per case."""
        report = self._report(1.0)
        assert all(c.cost == pytest.approx(0.1 + 0.04) for c in report.cases)
        s = report.summary
        assert (200, 40) == (s.input_tokens_total, s.output_tokens_total)
        assert s.cost_total == pytest.approx(0.28) and s.cost_per_case == pytest.approx(0.14)
        data = report.summary.to_dict()
        assert data["cost_total"] == pytest.approx(0.28)

    def test_absurd_usage_is_dropped_and_counted(self) -> None:
        """1e308 tokens (as a count it overflowed the cost and summary sums, an
        OverflowError that stopped every run) are not reported: the cases are scored."""
        report = self._report(1.0, usage={"in": 1e308, "out": 10**30})
        assert 0 == report.summary.error_count
        assert {"input_tokens": 2, "output_tokens": 2} == dict(report.summary.out_of_range)
        assert (None, None) == (report.summary.input_tokens_total, report.summary.cost_total)

    def test_a_cost_rule_fails_when_cost_doubles(self) -> None:
        """A cost-per-case growth rule fails when the cost doubles."""
        baseline, candidate = self._report(1.0).summary, self._report(2.0).summary
        rule = Rule("cost_per_case", "max_relative_growth", 0.2)
        result = check_rule(rule, baseline.get("cost_per_case"), candidate.get("cost_per_case"))
        assert result.applicable and not result.passed


class TestTradeOff:
    """Quality up while P95, TTFT or cost grew by half or more: the trade-off row."""

    def _summary(self, mrr: float, **values: float) -> Summary:
        n = 100
        return Summary(
            case_count=n,
            scored_count=n,
            error_count=0,
            totals={"mrr": Total(mrr * n, n), "recall_at_k": Total(0.8 * n, n)},
            error_rate=0.0,
            p50_seconds=0.5,
            p95_seconds=values.pop("p95_seconds", 1.0),
            stage_p95_seconds={},
            errors_by_kind={},
            **values,  # type: ignore[arg-type]
        )

    def test_cost_grew_by_half(self) -> None:
        """Quality up with cost up by half is diagnosed as a trade-off naming cost."""
        findings = diagnose(
            self._summary(0.6, cost_per_case=0.010), self._summary(0.7, cost_per_case=0.016)
        )
        assert [("trade-off", True)] == [(f.area, "cost" in f.signal) for f in findings]

    def test_ttft_grew_by_half(self) -> None:
        """Quality up with P95 TTFT up by half is diagnosed as a trade-off naming it."""
        findings = diagnose(
            self._summary(0.6, p95_ttft_seconds=0.4), self._summary(0.7, p95_ttft_seconds=0.8)
        )
        assert ["trade-off"] == [f.area for f in findings]
        assert "P95 TTFT" in findings[0].signal

    def test_cost_up_without_quality_up_is_no_trade_off(self) -> None:
        """Cost up without quality up is no trade-off."""
        findings = diagnose(
            self._summary(0.6, cost_per_case=0.010), self._summary(0.6, cost_per_case=0.030)
        )
        assert [] == [f.area for f in findings if f.area == "trade-off"]

"""Streamed answers against real loopback servers: SSE, NDJSON and OpenAI-compatible chat
completions with chunks spaced in time; time to first token, tokens per second, cut and
stalled streams; the framing unit cases."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.targets.streaming import frame_events
from tests.support.inprocess import running, until
from tests.support.streams import Chunk, StreamServer, ndjson, openai_chunks, sse
from tests.targets.helpers import dataset, query_error, query_once, run_config

#: spacing of the chunks: the first token comes after FIRST, the last one LATER after it
FIRST = 0.15
LATER = 0.25


def _spaced(parts: list[bytes], first_at: int = 0) -> list[Chunk]:
    """``parts`` with FIRST before part ``first_at`` and the rest spread over LATER."""
    out = []
    for i, data in enumerate(parts):
        delay = FIRST if i == first_at else (LATER / max(len(parts) - 1, 1) if i > first_at else 0)
        out.append(Chunk(delay, data))
    return out


class TestFraming:
    def test_sse_fields_comments_and_line_ends(self) -> None:
        """SSE framing drops comments and other fields, joins data lines, and accepts CR, LF and
        CRLF line ends across chunks."""
        chunks = [b": keep-alive\r\n", b"event: x\r\ndata: {\"a\"", b": 1}\r\n\r", b"\ndata: 2\n",
                  b"data: 3\n\n", b"data: last"]  # fmt: skip
        assert ['{"a": 1}', "2\n3", "last"] == frame_events("sse", chunks)

    def test_ndjson(self) -> None:
        """NDJSON framing yields one event a line across chunk boundaries."""
        assert ['{"a": 1}', '{"b": 2}'] == frame_events("ndjson", [b'{"a": 1}\n{"b"', b": 2}"])


@pytest.mark.e2e
class TestOpenAIStream:
    def _config(self, url: str, **more: Any) -> HttpTargetConfig:
        return HttpTargetConfig(
            url=url,
            kind="openai-chat",
            model="rag-large",
            stream=True,
            response={"ids": "sources[].id"},
            prices={"input_per_1k": 0.5, "output_per_1k": 1.5},
            **more,
        )

    def test_answer_ttft_tokens_and_cost(self) -> None:
        """The answer is the assembled deltas; TTFT is the first content, well before the
        last byte; usage gives tokens and cost; the sources come from the last event."""
        parts = openai_chunks(
            ["Refunds are accepted ", "within ", "7 days", "."],
            sources=["refund-policy", "faq"],
            usage=(120, 9),
        )
        # the role chunk (empty content) comes at once: TTFT is the first *content*
        script = [Chunk(0, parts[0]), *_spaced(parts[1:])]
        with StreamServer(lambda _r: script) as server:
            response = query_once(self._config(server.url))
        sent = server.requests[0]
        assert "rag-large" == sent["model"] and sent["stream"] is True
        assert [{"role": "user", "content": "How long?"}] == sent["messages"]
        assert "Refunds are accepted within 7 days." == response.answer
        assert ("refund-policy", "faq") == response.ranked_ids
        d = response.delivery
        assert d is not None and d.streamed
        assert d.ttft_seconds is not None and d.last_byte_seconds is not None
        assert d.ttfb_seconds is not None and d.ttfb_seconds < d.ttft_seconds
        assert d.ttft_seconds >= FIRST * 0.9
        assert d.last_byte_seconds - d.ttft_seconds >= LATER * 0.9
        assert (120, 9) == (d.input_tokens, d.output_tokens)
        assert d.cost == pytest.approx(120 * 0.5 / 1000 + 9 * 1.5 / 1000)
        assert d.tokens_per_second is not None and d.tokens_per_second > 0

    def test_cut_mid_way(self) -> None:
        """A stream whose connection drops before [DONE] is stream_interrupted."""
        parts = openai_chunks(["Refunds ", "are"])
        with StreamServer(lambda _r: [Chunk(0, parts[0]), Chunk(0.05, b"<cut>")]) as server:
            error = query_error(self._config(server.url))
        assert ("stream_interrupted", False) == (error.kind, error.transient)

    def test_ends_without_done(self) -> None:
        """A stream that ends cleanly but before its finish chunk and [DONE] was cut: its
        own error (a close after the finish chunk is complete: test_stream_termination)."""
        parts = openai_chunks(["Refunds"])[:-2]
        with StreamServer(lambda _r: [Chunk(0, p) for p in parts]) as server:
            error = query_error(self._config(server.url))
        assert "stream_interrupted" == error.kind
        assert "without a finish marker" in error.message

    def test_event_that_does_not_parse(self) -> None:
        """A stream event that is not JSON is a bad response naming the event."""
        with StreamServer(lambda _r: [Chunk(0, b"data: {not json\n\n")]) as server:
            error = query_error(self._config(server.url))
        assert "bad_response" == error.kind
        assert "stream event 1 is not valid JSON" in error.message

    def test_stall_beyond_read_timeout(self) -> None:
        """A stream that goes silent longer than the read timeout is a timeout."""
        parts = openai_chunks(["Refunds "])
        script = [Chunk(0, parts[0]), Chunk(0, parts[1]), Chunk(2.0, parts[2])]
        with StreamServer(lambda _r: script) as server:
            error = query_error(self._config(server.url, read_timeout_seconds=0.3))
        assert "timeout" == error.kind

    def test_not_streamed(self) -> None:
        """stream = false: one JSON body, answer and usage mapped by the preset."""
        body = (
            b'{"choices": [{"message": {"role": "assistant", "content": "7 days"}}],'
            b' "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "sources": [{"id": "a"}]}'
        )
        with StreamServer(lambda _r: [Chunk(0, body)], content_type="application/json") as srv:
            config = HttpTargetConfig(
                url=srv.url, kind="openai-chat", model="m", response={"ids": "sources[].id"}
            )
            response = query_once(config)
        assert srv.requests[0]["stream"] is False
        assert ("7 days", ("a",)) == (response.answer, response.ranked_ids)
        assert response.delivery is not None and response.delivery.ttft_seconds is None
        assert (10, 2) == (response.delivery.input_tokens, response.delivery.output_tokens)


@pytest.mark.e2e
class TestGenericStreams:
    def test_sse_with_a_final_event(self) -> None:
        """A custom SSE stream: text pieces, then a 'final' event carrying ids and timings."""
        events = sse(
            {"type": "token", "text": "Refunds "},
            {"type": "token", "text": "in 7 days"},
            {"type": "final", "hits": [{"id": "refund-policy"}], "took": {"retrieve": 12}},
            {"type": "heartbeat"},
        )
        with StreamServer(lambda _r: _spaced(events), path="/rag") as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={"format": "sse", "content": "text", "fields_from": "type == 'final'"},
                response={"ids": "hits[].id", "timings": "took", "timings_unit": "milliseconds"},
            )
            response = query_once(config)
        assert "Refunds in 7 days" == response.answer
        assert ("refund-policy",) == response.ranked_ids
        assert {"retrieve": pytest.approx(0.012)} == dict(response.timings)
        assert response.delivery is not None and response.delivery.output_tokens == 2
        assert response.delivery.tokens_counted

    def test_ndjson(self) -> None:
        """A generic NDJSON stream's deltas are joined into the answer and its last retrieved
        ids are read."""
        lines = ndjson({"delta": "Refunds "}, {"delta": "in 7 days"}, {"retrieved": ["faq"]})
        with StreamServer(
            lambda _r: _spaced(lines), content_type="application/x-ndjson", path="/rag"
        ) as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={"format": "ndjson", "content": "delta"},
                response={"ids": "retrieved || `[]`"},
            )
            response = query_once(config)
        assert ("Refunds in 7 days", ("faq",)) == (response.answer, response.ranked_ids)
        d = response.delivery
        assert d is not None and d.ttft_seconds is not None and d.last_byte_seconds is not None
        assert d.last_byte_seconds - d.ttft_seconds >= LATER * 0.9

    def test_run_records_and_summarises_ttft(self) -> None:
        """A run keeps TTFT per case and its P50/P95 in the summary; latency is total time."""
        parts = openai_chunks(["7 days"], sources=["refund-policy"], usage=(5, 2))
        script = [Chunk(0, parts[0]), *_spaced(parts[1:])]
        with StreamServer(lambda _r: script) as server:
            config = TestOpenAIStream()._config(server.url)
            report, _ = run_config(config, dataset(["a", "b", "c"]), concurrency=3)
        for record in report.cases:
            assert record.error is None
            assert record.ttft_seconds is not None and record.trace_id is not None
            assert record.latency_seconds >= record.ttft_seconds + LATER * 0.9
        summary = report.summary
        assert summary.p95_ttft_seconds is not None and summary.p50_ttft_seconds is not None
        assert summary.p95_ttft_seconds < summary.p95_seconds  # type: ignore[operator]
        assert (15, 6) == (summary.input_tokens_total, summary.output_tokens_total)
        assert summary.cost_total == pytest.approx(3 * (5 * 0.5 + 2 * 1.5) / 1000)


@pytest.mark.e2e
def test_daemon_exports_ttft_histogram_and_gauges(tmp_path: Path) -> None:
    """An in-process daemon on a streamed target: rag_eval_ttft_seconds counts every case
    (with trace exemplars), and the TTFT P95, cost and tokens gauges equal the summary."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["refund-policy"]})
            + "\n"
            for i in range(3)
        )
    )
    parts = openai_chunks(["7 days"], sources=["refund-policy"], usage=(5, 2))
    script = [Chunk(0, parts[0]), *_spaced(parts[1:])]
    with StreamServer(lambda _r: script) as server:
        target = TestOpenAIStream()._config(server.url).model_copy(update={"name": "chat"})
        settings = Settings(
            targets=[target],
            jobs=[JobConfig(target="chat", dataset=golden, interval_seconds=60)],
            reports_dir=tmp_path / "reports",
            listen="127.0.0.1:0",
        )
        out: dict[str, Any] = {}

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].store.latest is not None)
                out["latest"] = daemon.jobs[0].store.latest
                out["registry"] = daemon.registry

        asyncio.run(asyncio.wait_for(body(), 30))
    registry = out["registry"]
    labels = {"target": "chat", "dataset": "golden"}
    summary = out["latest"].summary
    assert 3 == registry.get_sample_value("rag_eval_ttft_seconds_count", labels)
    assert summary.p95_ttft_seconds == registry.get_sample_value(
        "rag_eval_ttft_p95_seconds", labels
    )
    assert summary.cost_total == registry.get_sample_value("rag_eval_run_cost", labels)
    assert 6 == registry.get_sample_value("rag_eval_run_output_tokens", labels)
    assert 15 == registry.get_sample_value("rag_eval_run_input_tokens", labels)


@pytest.mark.e2e
class TestFieldsFromTheirOwnEvent:
    """Each mapped field is read from the last event in which its expression matches, as
    chat services that send their sources with the first chunk need."""

    def test_sources_in_the_first_chunk_usage_in_the_last(self) -> None:
        """Sources only in the role chunk, usage only in the final one: both are read."""
        base = {"object": "chat.completion.chunk"}
        events = sse(
            {**base, "choices": [{"delta": {"role": "assistant"}}], "sources": [{"id": "faq"}]},
            {**base, "choices": [{"delta": {"content": "7 days"}}]},
            {**base, "choices": [{"delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
            done=True,
        )
        with StreamServer(lambda _r: [Chunk(0, e) for e in events]) as server:
            response = query_once(TestOpenAIStream()._config(server.url))
        assert ("7 days", ("faq",)) == (response.answer, response.ranked_ids)
        d = response.delivery
        assert d is not None and (12, 3) == (d.input_tokens, d.output_tokens)

    def test_the_last_matching_event_wins(self) -> None:
        """Sources sent twice: the later list is the one scored."""
        events = ndjson(
            {"delta": "7 ", "hits": [{"id": "draft"}]},
            {"delta": "days", "hits": [{"id": "refund-policy"}, {"id": "faq"}]},
            {"done": True},
        )
        with StreamServer(
            lambda _r: [Chunk(0, e) for e in events], content_type="application/x-ndjson"
        ) as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={"format": "ndjson", "content": "delta"},
                response={"ids": "hits[].id"},
            )
            response = query_once(config)
        assert ("7 days", ("refund-policy", "faq")) == (response.answer, response.ranked_ids)

    def test_only_events_fields_from_selects(self) -> None:
        """With fields_from set, a field is read from the last selected event where it
        matches; a match in an event fields_from does not select is not read."""
        events = sse(
            {"type": "meta", "hits": [{"id": "refund-policy"}], "took": {"retrieve": 5}},
            {"type": "token", "text": "7 days", "hits": [{"id": "ignored"}]},
            {"type": "final", "took": {"model": 20}},
            {"type": "final"},
        )
        with StreamServer(lambda _r: [Chunk(0, e) for e in events], path="/rag") as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={
                    "format": "sse",
                    "content": "text",
                    "fields_from": "type == 'meta' || type == 'final'",
                },
                response={"ids": "hits[].id", "timings": "took", "timings_unit": "milliseconds"},
            )
            response = query_once(config)
        assert ("refund-policy",) == response.ranked_ids
        assert {"model": pytest.approx(0.02)} == dict(response.timings)

    def test_a_default_keeps_the_event_that_has_sources(self) -> None:
        """``sources[].id || `[]``` reads the one event with sources, not the last event's
        default."""
        events = ndjson({"delta": "7 days", "sources": [{"id": "faq"}]}, {"done": True})
        with StreamServer(
            lambda _r: [Chunk(0, e) for e in events], content_type="application/x-ndjson"
        ) as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={"format": "ndjson", "content": "delta"},
                response={"ids": "sources[].id || `[]`"},
            )
            response = query_once(config)
        assert ("faq",) == response.ranked_ids

    def test_a_field_in_no_event_is_an_error(self) -> None:
        """A field that matches in no event fails the case, naming the field."""
        events = ndjson({"delta": "7 days"}, {"done": True})
        with StreamServer(
            lambda _r: [Chunk(0, e) for e in events], content_type="application/x-ndjson"
        ) as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={"format": "ndjson", "content": "delta"},
                response={"ids": "hits[].id"},
            )
            error = query_error(config)
        assert "bad_response" == error.kind
        assert 'response.ids expression "hits[].id" matched nothing (null)' == error.message

"""How streams end, as real servers end them, against loopback servers that behave exactly
so: a close after a chunk with ``finish_reason`` and no ``[DONE]`` (with ``"usage": null``
in every chunk), a ``[DONE]`` after which the connection stays open, a close before any
finish marker or inside an event; and the framing's work is linear in the bytes received.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, ClassVar

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.factory import build_target
from evaluator.models import TargetResponse
from evaluator.targets import http
from evaluator.targets.http import STREAM_STEP
from evaluator.targets.streaming import StreamAssembler, _Framer
from tests.support.streams import Chunk, StreamServer, ndjson, sse
from tests.targets.helpers import case, query_error, query_once

BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "rag"}


def _chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> dict[str, Any]:
    """One chat completions chunk as servers send it: ``usage`` null, ``finish_reason`` null
    until the last."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {**BASE, "choices": [choice], "usage": None, **more}


def _vllm_like(pieces: list[str], sources: list[str]) -> list[bytes]:
    """A stream that ends at its finish chunk: no usage chunk, no ``data: [DONE]``."""
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": p}) for p in pieces]
    events.append(_chunk({}, "stop", sources=[{"id": s} for s in sources]))
    return sse(*events)


def _config(url: str, **more: Any) -> HttpTargetConfig:
    return HttpTargetConfig(
        url=url,
        kind="openai-chat",
        model="rag-large",
        stream=True,
        response={"ids": "sources[].id"},
        **more,
    )


@pytest.mark.e2e
class TestFinishMarker:
    def test_close_after_finish_reason_without_done(self) -> None:
        """A close after the chunk whose finish_reason is set is a complete answer; usage
        null in every chunk is "not reported" (the tokens are counted from the events)."""
        parts = _vllm_like(["Refunds ", "within 7 days."], ["refund-policy"])
        with StreamServer(lambda _r: [Chunk(0, p) for p in parts]) as server:
            response = query_once(_config(server.url))
        assert "Refunds within 7 days." == response.answer
        assert ("refund-policy",) == response.ranked_ids
        d = response.delivery
        assert d is not None and d.input_tokens is None
        assert (2, True) == (d.output_tokens, d.tokens_counted)

    def test_close_before_any_finish_marker_is_interrupted(self) -> None:
        """A stream closed before a finish marker is stream_interrupted, naming the missing
        finish."""
        parts = _vllm_like(["Refunds ", "within 7 days."], ["refund-policy"])[:-1]
        with StreamServer(lambda _r: [Chunk(0, p) for p in parts]) as server:
            error = query_error(_config(server.url))
        assert "stream_interrupted" == error.kind
        assert "finish" in error.message

    def test_close_inside_an_event_is_interrupted(self) -> None:
        """The finish chunk came, then the connection closed halfway through the usage
        chunk: the stream was cut inside an event."""
        parts = _vllm_like(["7 days"], ["refund-policy"])
        half = b'data: {"choices": [], "usage": {"prompt_tok'
        with StreamServer(lambda _r: [*(Chunk(0, p) for p in parts), Chunk(0, half)]) as server:
            error = query_error(_config(server.url))
        assert "stream_interrupted" == error.kind
        assert "inside an event" in error.message

    def test_generic_finish_expression(self) -> None:
        """Any stream may name its finish marker: an NDJSON final object without [DONE]."""
        lines = ndjson({"delta": "7 "}, {"delta": "days"}, {"done": True, "ids": ["a"]})
        with StreamServer(
            lambda _r: [Chunk(0, line) for line in lines], content_type="application/x-ndjson"
        ) as server:
            config = HttpTargetConfig(
                url=server.url,
                streaming={
                    "format": "ndjson",
                    "content": "delta",
                    "finish": "done",
                    "done": "[DONE]",
                },
                response={"ids": "ids"},
            )
            response = query_once(config)
        assert ("7 days", ("a",)) == (response.answer, response.ranked_ids)


@pytest.mark.e2e
class TestDoneStaysOpen:
    def test_complete_at_done(self) -> None:
        """After data: [DONE] the server keeps the connection open: the answer is complete
        at [DONE], not a timeout at the deadline."""
        parts = [*_vllm_like(["7 days"], ["refund-policy"]), b"data: [DONE]\n\n"]
        script = [*(Chunk(0, p) for p in parts), Chunk(3.0, b": still here\n\n")]
        with StreamServer(lambda _r: script) as server:
            response = query_once(_config(server.url, timeout_seconds=1.0))
        assert "7 days" == response.answer


@pytest.mark.e2e
class TestUsageNull:
    def test_not_streamed_usage_null(self) -> None:
        """A chat completion with "usage": null: tokens not reported, not an error."""
        body = {
            "choices": [{"message": {"content": "7 days"}, "finish_reason": "stop"}],
            "usage": None,
            "sources": [{"id": "a"}],
        }
        with StreamServer(
            lambda _r: [Chunk(0, json.dumps(body).encode())], content_type="application/json"
        ) as server:
            config = HttpTargetConfig(
                url=server.url, kind="openai-chat", model="m", response={"ids": "sources[].id"}
            )
            response = query_once(config)
        assert "7 days" == response.answer
        d = response.delivery
        assert d is not None and (None, None) == (d.input_tokens, d.output_tokens)


class TestLinearFraming:
    def test_a_long_line_in_tiny_chunks_is_scanned_once(self) -> None:
        """One 200 kB event in 1-byte chunks: the framer handles each byte a bounded number
        of times (re-copying the pending line per chunk handled 20 G bytes)."""
        line = b"data: " + json.dumps({"delta": "x" * 200_000}).encode() + b"\n\n"
        framer = _Framer("sse")
        events = [e for i in range(len(line)) for e in framer.feed(line[i : i + 1])]
        assert 1 == len(events) and 200_000 + 13 == len(events[0])
        assert framer.handled <= 3 * len(line)

    def test_many_tiny_events(self) -> None:
        """190,000 tiny events in one chunk each: linear work as well."""
        events = [b"data: {}\n\n"] * 190_000
        framer = _Framer("sse")
        count = sum(1 for chunk in events for _ in framer.feed(chunk))
        assert 190_000 == count
        assert framer.handled <= 3 * sum(map(len, events))

    def test_crlf_split_across_chunks(self) -> None:
        """A CR at the end of one chunk and its LF at the start of the next are one line end."""
        framer = _Framer("sse")
        chunks = [b"data: 1\r", b"\n\r", b"\ndata: 2\r\n", b"\r\n"]
        assert ["1", "2"] == [e for c in chunks for e in framer.feed(c)]


class TestPresetOverride:
    def test_streaming_keys_override_the_preset(self) -> None:
        """A preset's [streaming] table is merged key by key; "" switches a marker off."""
        config = _config("http://h/v1/chat/completions", streaming={"done": ""})
        assert config.streaming is not None
        assert config.streaming.done is None
        assert "choices[0].delta.content" == config.streaming.content
        assert "choices[0].finish_reason" == config.streaming.finish

    def test_streaming_without_stream_is_refused(self) -> None:
        """Streaming settings on a preset without ``stream = true`` are refused saying so."""
        with pytest.raises(ValueError, match="set stream = true"):
            HttpTargetConfig(
                url="http://h/v1/chat/completions",
                kind="openai-chat",
                model="m",
                streaming={"done": "[END]"},
            )

    @pytest.mark.e2e
    def test_server_without_done_and_finish_reason_off(self) -> None:
        """With the preset's [DONE] switched off, a close after the finish chunk is still
        complete, and a close before it is still a cut."""
        parts = _vllm_like(["7 days"], ["refund-policy"])
        with StreamServer(lambda _r: [Chunk(0, p) for p in parts]) as server:
            response = query_once(_config(server.url, streaming={"done": ""}))
        assert "7 days" == response.answer


class TestNamedEndEvent:
    def test_framer_stops_at_the_named_event(self) -> None:
        """An SSE event named done_event ends the stream, with or without data; events
        after it are not read."""
        framer = _Framer("sse", "end")
        chunks = [b"event: data\ndata: 1\n\n", b"event: end\n\n", b"data: 2\n\n"]
        assert ["1"] == [e for c in chunks for e in framer.feed(c)]
        assert framer.ended

    def test_other_named_events_are_data(self) -> None:
        """Named events other than the end event are data and do not end the stream."""
        framer = _Framer("sse", "end")
        assert ["{}"] == list(framer.feed(b"event: metadata\ndata: {}\n\n"))
        assert not framer.ended


class _Watched(StreamAssembler):
    """The assembler the target builds, counting the events it frames on the event loop's
    thread (``on_loop``, for every assembler made) beside all it frames (``events``)."""

    made: ClassVar[list[StreamAssembler]] = []
    #: the event loop's thread, and the events every assembler framed on it so far
    loop_thread: ClassVar[int] = 0
    on_loop: ClassVar[int] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        _Watched.made.append(self)

    def feed(self, chunk: bytes, at: float) -> None:
        before = self.events
        super().feed(chunk, at)
        if threading.get_ident() == _Watched.loop_thread:
            _Watched.on_loop += self.events - before


@pytest.mark.e2e
@pytest.mark.parametrize("streams", [1, 4])
def test_many_tiny_events_leave_the_loop_free(
    monkeypatch: pytest.MonkeyPatch, streams: int
) -> None:
    """190,000 tiny events sent at once, by one response or four at a time: between two turns
    of another task on the event loop, at most one step's events are framed on the loop,
    however many streams burst (all of them at once held /healthz for 1.25 s; a step per
    stream per turn, four streams for 460 ms), and every answer is read whole."""
    monkeypatch.setattr(http, "StreamAssembler", _Watched)
    _Watched.made.clear()
    _Watched.on_loop = 0
    body = b"data: {}\n\n" * 190_000 + b"".join(_vllm_like(["7 days"], ["refund-policy"]))
    most_per_turn = 0

    async def go() -> list[TargetResponse]:
        nonlocal most_per_turn
        _Watched.loop_thread = threading.get_ident()
        target = build_target(_config(server.url))
        calls = asyncio.gather(*(target.query(case(f"q{i}"), 4) for i in range(streams)))
        seen = 0
        while not calls.done():
            await asyncio.sleep(0.001)  # a turn of another task, as /healthz's handler
            now = _Watched.on_loop
            most_per_turn, seen = max(most_per_turn, now - seen), now
        await target.aclose()
        return list(calls.result())

    with StreamServer(lambda _r: [Chunk(0, body)]) as server:
        responses = asyncio.run(go())
    assert ["7 days"] * streams == [r.answer for r in responses]
    assert [190_000 + 3] * streams == [made.events for made in _Watched.made]
    assert most_per_turn <= STREAM_STEP // len(b"data: {}\n\n") + 1

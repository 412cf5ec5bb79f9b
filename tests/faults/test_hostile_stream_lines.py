"""One huge stream line stays within the memory bound (issue 38.7).

A target streaming one 60 MB ``data:`` line under a 64 MiB ``max_response_bytes`` peaked at
406 MiB in ``evaluator run`` (the line held in five copies at once while it was framed), a
200 MB line under a 256 MiB cap at 1.2 GiB. A line is now framed one copy at a time, and a
line longer than ``MAX_STREAM_LINE_BYTES`` (64 MiB) is ``response_too_large`` whatever the cap.

The endpoint writes the line as the same 1 MiB piece again and again, so serving it costs
this process next to nothing; the CLI's peak RSS is sampled as the fuzz tier does. The
property over any stream bytes cut anywhere holds the framer to the bound for every line.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.errors import ResponseTooLargeError
from evaluator.targets.streaming import StreamFormat, frame_events
from tests.faults.invariants import RSS_BOUND, MiB
from tests.faults.test_fuzz_cli import run_cli
from tests.support.rawhttp import ScriptedRawServer


def _pieces(megabytes: int) -> list[tuple[float, bytes]]:
    """An SSE response whose first event is one line of ``megabytes`` MiB of answer, then
    the final event and ``[DONE]``, closed with the connection."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    piece = b"x" * MiB
    tail = b'"}\n\ndata: {"type": "final", "sources": [{"id": "d0"}]}\n\ndata: [DONE]\n\n'
    return [(0.0, head + b'data: {"delta": "'), *[(0.0, piece)] * megabytes, (0.0, tail)]


def _run(tmp_path: Path, megabytes: int, cap: int) -> tuple[int, dict[str, Any]]:
    """``evaluator run`` against that stream; its peak RSS and its report."""
    (tmp_path / "golden.jsonl").write_text(
        json.dumps({"id": "c0", "question": "q", "relevant_ids": ["d0"]}) + "\n"
    )
    with ScriptedRawServer({"/rag": _pieces(megabytes)}) as server:
        (tmp_path / "evaluator.toml").write_text(
            f'reports_dir = "{tmp_path}"\n[[targets]]\nname = "s"\n'
            f'url = "{server.url_of("/rag")}"\nmax_response_bytes = {cap}\ntimeout_seconds = 60\n'
            '[targets.streaming]\nformat = "sse"\ncontent = "delta"\n'
            'fields_from = "type == \'final\'"\ndone = "[DONE]"\n'
            '[targets.response]\nids = "sources[].id"\n'
            '[[jobs]]\ntarget = "s"\ndataset = "golden.jsonl"\n',
            "utf-8",
        )
        result = run_cli(["run", "--config", "evaluator.toml", "--output", "r.json"], tmp_path)
    report = json.loads((tmp_path / "r.json").read_text("utf-8"))
    return result.max_rss, report


@pytest.mark.e2e
def test_a_60_mb_line_under_a_64_mib_cap_is_scored_within_the_memory_bound(
    tmp_path: Path,
) -> None:
    """The audit's reproduction: the case is scored, the CLI's peak RSS under the bound."""
    rss, report = _run(tmp_path, 60, 64 * MiB)
    assert [None] == [case["error"] for case in report["cases"]]
    assert rss < RSS_BOUND, f"peak RSS {rss / MiB:.0f} MiB"


@pytest.mark.e2e
def test_a_200_mb_line_under_a_256_mib_cap_is_too_large_within_the_memory_bound(
    tmp_path: Path,
) -> None:
    """The variant: a line past 64 MiB is ``response_too_large`` as soon as it passes it, the
    peak RSS under the bound (it reached 1.2 GiB)."""
    rss, report = _run(tmp_path, 200, 256 * MiB)
    errors = [case["error"] for case in report["cases"]]
    assert ["response_too_large"] == [e["kind"] for e in errors]
    assert rss < RSS_BOUND, f"peak RSS {rss / MiB:.0f} MiB"


_STREAM_BYTES = st.lists(
    st.sampled_from([b"a", b"\xc3\xa9", b"\r", b"\n", b"\r\n", b"data: ", b":", b"event: x"]),
    max_size=60,
).map(b"".join)


def _longest_line(stream: bytes) -> int:
    """The longest line of ``stream`` in bytes, without its line end (CR, LF or CRLF)."""
    return max(len(line) for line in re.split(rb"\r\n|\r|\n", stream))


@pytest.mark.parametrize("format", ["sse", "ndjson"])
@settings(max_examples=300, deadline=None)
@given(stream=_STREAM_BYTES, cuts=st.lists(st.integers(0, 400), max_size=8))
def test_any_stream_cut_anywhere_is_framed_as_whole_or_refused_for_a_long_line(
    format: StreamFormat, stream: bytes, cuts: list[int]
) -> None:
    """The property over any stream bytes in any chunks: with lines of at most 8 bytes the
    events are those of the stream framed in one piece; with a longer line, framing stops
    with ``response_too_large`` (never more memory than the bound's line)."""
    at = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in itertools.pairwise(at)]
    if _longest_line(stream) > 8:
        with pytest.raises(ResponseTooLargeError):
            frame_events(format, chunks, max_line=8)
    else:
        assert frame_events(format, [stream]) == frame_events(format, chunks, max_line=8)

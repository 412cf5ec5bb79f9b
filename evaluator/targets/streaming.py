"""Streamed responses: server-sent events and NDJSON, assembled into one answer.

A streaming endpoint sends its answer piece by piece. Each event is a JSON object; the
configured ``content`` expression (JMESPath) finds the piece of answer text in it (OpenAI's
``choices[0].delta.content``), and the answer is the pieces joined. The event the response
mapping reads (ids, citations, timings, usage) is the last event, or the last one matching
the ``fields_from`` expression. The time of the first event with non-empty content is the
time to first token.

Framing follows the specifications: SSE (WHATWG HTML, "server-sent events") dispatches an
event at a blank line, joins its ``data:`` lines with newlines, ignores comments (``:``) and
other fields, accepts CRLF, LF or CR line ends; NDJSON is one JSON value per line. A
``done`` sentinel (OpenAI's ``[DONE]``) ends the stream; when one is configured, a stream
that ends without it was cut. Lines are bounded (the response cap bounds the whole), and a
data that is not JSON is a :class:`~evaluator.errors.BadResponseError` naming the event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

from evaluator import border
from evaluator.errors import BadResponseError, StreamInterruptedError

__all__ = ["StreamAssembler", "StreamSpec", "frame_events"]

StreamFormat = Literal["sse", "ndjson"]


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """How a target streams: the framing, where the text is, which event holds the fields."""

    format: StreamFormat
    content: ParsedResult
    fields_from: ParsedResult | None = None
    done: str | None = None

    def identity(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "content": self.content.expression,
            "fields_from": None if self.fields_from is None else self.fields_from.expression,
            "done": self.done,
        }


class _Framer:
    """Splits raw bytes into event payloads (strings), incrementally."""

    def __init__(self, format: StreamFormat) -> None:
        self._sse = format == "sse"
        self._pending = b""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[str]:
        buffer = self._pending + chunk
        # CR, LF or CRLF all end a line; a CR at the very end may be half of a CRLF
        trailing_cr = buffer.endswith(b"\r")
        if trailing_cr:
            buffer = buffer[:-1]
        lines = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._pending = lines.pop() + (b"\r" if trailing_cr else b"")
        for raw in lines:
            yield from self._line(raw.decode("utf-8", errors="replace"))

    def _line(self, line: str) -> Iterator[str]:
        if not self._sse:
            if line.strip():
                yield line
            return
        if not line:
            if self._data:
                yield "\n".join(self._data)
                self._data = []
            return
        if line.startswith(":"):
            return  # a comment (keep-alive)
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)

    def close(self) -> Iterator[str]:
        """The last event, when the stream ended without a final line end."""
        rest = self._pending.rstrip(b"\r")
        if rest:
            yield from self._line(rest.decode("utf-8", errors="replace"))
        self._pending = b""
        if self._sse and self._data:
            yield "\n".join(self._data)
            self._data = []


def frame_events(format: StreamFormat, chunks: list[bytes]) -> list[str]:
    """Every event payload in ``chunks`` (for tests and ``probe``)."""
    framer = _Framer(format)
    out = [event for chunk in chunks for event in framer.feed(chunk)]
    return [*out, *framer.close()]


@dataclass
class StreamAssembler:
    """Consumes a stream's bytes; keeps the answer pieces, the fields event and the times.

    ``feed(chunk, at)`` with ``at`` the ``time.perf_counter()`` when the chunk arrived.
    """

    spec: StreamSpec
    pieces: list[str] = field(default_factory=list)
    events: int = 0
    content_events: int = 0
    first_token_at: float | None = None
    fields_event: Any = None
    finished: bool = False
    _framer: _Framer = field(init=False)

    def __post_init__(self) -> None:
        self._framer = _Framer(self.spec.format)

    def feed(self, chunk: bytes, at: float) -> None:
        for payload in self._framer.feed(chunk):
            self._event(payload, at)

    def close(self, at: float) -> None:
        """The body ended cleanly.

        Raises:
            StreamInterruptedError: a ``done`` sentinel is configured and never came, or no
                event came at all.
        """
        for payload in self._framer.close():
            self._event(payload, at)
        if self.spec.done is not None and not self.finished:
            raise StreamInterruptedError(
                f"stream ended after {self.events} event(s) without its end marker "
                f"{self.spec.done!r}: cut mid-way"
            )
        if self.events == 0:
            raise StreamInterruptedError("stream ended before its first event")

    @property
    def answer(self) -> str:
        return "".join(self.pieces)

    def _event(self, payload: str, at: float) -> None:
        if self.finished:
            return  # whatever follows the end marker is not part of the answer
        if self.spec.done is not None and payload.strip() == self.spec.done:
            self.finished = True
            return
        self.events += 1
        try:
            event = border.loads(payload)
        except (ValueError, RecursionError) as exc:
            shown = " ".join(payload.split())[:80]
            raise BadResponseError(
                f"stream event {self.events} is not valid JSON ({exc}): {shown!r}"
            ) from None
        try:
            piece = self.spec.content.search(event)
            selected = self.spec.fields_from is None or bool(self.spec.fields_from.search(event))
        except JMESPathError as exc:
            raise BadResponseError(f"stream event {self.events}: {exc}") from None
        if isinstance(piece, str) and piece:
            self.pieces.append(piece)
            self.content_events += 1
            if self.first_token_at is None:
                self.first_token_at = at
        elif piece is not None and not isinstance(piece, str):
            raise BadResponseError(
                f"stream.content expression {json.dumps(self.spec.content.expression)} gave "
                f"{type(piece).__name__} in event {self.events}, expected a string"
            )
        if selected:
            self.fields_event = event

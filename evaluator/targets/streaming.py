"""Streamed responses: server-sent events and NDJSON, assembled into one answer.

A streaming endpoint sends its answer piece by piece. Each event is a JSON object; the
configured ``content`` expression (JMESPath) finds the piece of answer text in it (OpenAI's
``choices[0].delta.content``), and the answer is the pieces joined. Each field of the
response mapping (ids, citations, timings, usage) is read from the last event in which its
expression matches (gives a value that is not null or empty), among the events the
``fields_from`` expression selects (all when it is unset): services send their sources with
the first chunk, their usage with the last. A field that matches in no event is read from
the last selected event, where it is the mapping's error. The time of the first event with
non-empty content is the time to first token.

Framing follows the specifications: SSE (WHATWG HTML, "server-sent events") dispatches an
event at a blank line, joins its ``data:`` lines with newlines, ignores comments (``:``) and
other fields, accepts CRLF, LF or CR line ends; NDJSON is one JSON value per line.

How a stream ends, as real servers end it: a ``done`` sentinel (OpenAI's ``[DONE]``), or in
SSE an event named ``done_event`` (LangServe's ``event: end``), completes the answer at
once, even if the connection stays open; a clean close after an
event matching the ``finish`` expression (OpenAI's ``finish_reason``, an NDJSON final
object) is complete too. A close before any configured marker, or inside an event (trailing
data that is not a whole JSON value), is a :class:`~evaluator.errors.StreamInterruptedError`.
Lines are bounded (the response cap bounds the whole), and a data that is not JSON is a
:class:`~evaluator.errors.BadResponseError` naming the event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from jmespath import visitor
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

from evaluator import border
from evaluator.errors import BadResponseError, ResponseTooLargeError, StreamInterruptedError
from evaluator.targets.mapping import truthy

__all__ = ["MAX_STREAM_LINE_BYTES", "StreamAssembler", "StreamSpec", "frame_events"]

StreamFormat = Literal["sse", "ndjson"]

#: one interpreter for every event: ``ParsedResult.search`` makes one per call, and each is
#: a reference cycle (its method cache holds its bound methods), so 190,000 events left as
#: many cycles to the garbage collector, whose passes held the event loop
_INTERPRETER = visitor.TreeInterpreter()


def _search(expression: ParsedResult, event: object) -> Any:
    return _INTERPRETER.visit(expression.parsed, event)


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """How a target streams: the framing, where the text is, which event holds the fields."""

    format: StreamFormat
    content: ParsedResult
    fields_from: ParsedResult | None = None
    done: str | None = None
    #: true for an event that finishes the answer (OpenAI's ``choices[0].finish_reason``)
    finish: ParsedResult | None = None
    #: SSE: the ``event:`` name that ends the stream (LangServe's ``end``)
    done_event: str | None = None

    def identity(self) -> dict[str, Any]:
        out = {
            "format": self.format,
            "content": self.content.expression,
            "fields_from": None if self.fields_from is None else self.fields_from.expression,
            "done": self.done,
        }
        if self.finish is not None:
            out["finish"] = self.finish.expression
        if self.done_event is not None:
            out["done_event"] = self.done_event
        return out


#: the longest line of a stream read, whatever ``max_response_bytes`` allows: framing and
#: parsing one line holds two to three copies of it (a 200 MB line under a 256 MiB cap
#: peaked at 641 MiB, 1.2 GiB before its copies were cut), so a streamed case stays within
#: about 200 MiB. An event longer is ``response_too_large``: no answer streams that much
#: in one event
MAX_STREAM_LINE_BYTES = 64 << 20


class _Framer:
    """Splits raw bytes into event payloads (strings), incrementally, in linear work.

    Each byte is handled a bounded number of times: a chunk without a line end is appended
    to the pending line (amortised), and only the part up to a chunk's last line end is
    split, so a long line arriving in tiny chunks is never re-copied per chunk (190,000
    tiny events once stalled the event loop). ``handled`` counts the bytes split or kept.
    """

    def __init__(
        self,
        format: StreamFormat,
        done_event: str | None = None,
        max_line: int = MAX_STREAM_LINE_BYTES,
    ) -> None:
        self._sse = format == "sse"
        self._max_line = max_line
        self._pending = bytearray()
        self._data: list[str] = []
        #: the SSE ``event:`` name that ends the stream (LangServe's ``end``), and the name
        #: of the event being read
        self._done_event = done_event
        self._event = ""
        #: an event named ``done_event`` was dispatched: nothing after it is read
        self.ended = False
        #: the last chunk ended with CR: an LF starting the next one is the same line end
        self._after_cr = False
        self.handled = 0

    def feed(self, chunk: bytes) -> Iterator[str]:
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._after_cr = False
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        self.handled += len(chunk)
        if end < 0:
            self._pending += chunk
            self._bounded(len(self._pending))  # stops a line growing past the bound early
            return
        # CR, LF or CRLF all end a line; a CR at the very end may be half of a CRLF
        self._after_cr = end == len(chunk) - 1 and chunk[end] == 0x0D
        self.handled += len(self._pending)
        lines = self._lines(chunk, end)
        self._bounded(len(self._pending))  # the line the chunk began and did not end
        while lines:
            # one line alive at a time, bytes then text: a 60 MB line was held in five
            # copies at once (the pending bytes, their concatenation, two replacements and
            # the split), 400 MiB for one event
            line = lines.pop()
            self._bounded(len(line))
            yield from self._line(line.decode("utf-8", errors="replace"))

    def _bounded(self, line_bytes: int) -> None:
        """Raise :class:`ResponseTooLargeError` for a line (its bytes, without its line end)
        past the bound (its framing and parsing hold two to three copies of it at once)."""
        if line_bytes > self._max_line:
            raise ResponseTooLargeError(
                f"a stream line is longer than {self._max_line} bytes; stopped reading"
            )

    def _lines(self, chunk: bytes, end: int) -> list[bytes | bytearray]:
        """The lines ended in ``chunk`` (up to ``end``, its last line end), the pending one
        first, in reverse order (popped one at a time); the rest of ``chunk`` is pending."""
        if self._pending:
            self._pending += chunk[: end + 1]  # in place: the head is the pending buffer
            head: bytes | bytearray = self._pending
        else:
            head = chunk[: end + 1]
        self._pending = bytearray(chunk[end + 1 :])
        if b"\r" in head:
            head = head.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines: list[bytes | bytearray] = [*head.split(b"\n")]
        del head  # the split holds each line: the buffer goes now, not after the last line
        lines.pop()  # empty: the head ends with a line end
        lines.reverse()
        return lines

    def _line(self, line: str) -> Iterator[str]:
        if self.ended:
            return
        if not self._sse:
            if line.strip():
                yield line
            return
        if not line:
            yield from self._dispatch()
        elif not line.startswith(":"):  # else a comment (keep-alive)
            self._field(line)

    def _dispatch(self) -> Iterator[str]:
        """A blank SSE line: the event read so far, unless it is the end event (with or
        without data: its data is not the answer's)."""
        if self._done_event is not None and self._event == self._done_event:
            self.ended = True
        elif self._data:
            yield "\n".join(self._data)
        self._data = []
        self._event = ""

    def _field(self, line: str) -> None:
        """One ``name: value`` line of an SSE event: its data or its name kept (the value cut
        out once: a data line can be the whole answer)."""
        colon = line.find(":")
        name = line if colon < 0 else line[:colon]
        start = colon + 2 if line.startswith(" ", colon + 1) else colon + 1
        value = "" if colon < 0 else line[start:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value

    def close(self) -> Iterator[str]:
        """The last event, when the stream ended without a final line end (or, in SSE,
        without the blank line that dispatches it)."""
        rest = bytes(self._pending)
        self._pending = bytearray()
        if rest.strip():
            yield from self._line(rest.decode("utf-8", errors="replace"))
        if self._sse:  # the blank line that dispatches the last event never came
            yield from self._line("")


def _markers(spec: StreamSpec) -> list[str]:
    """The finish markers a stream of ``spec`` may end with, as a message names them."""
    markers = []
    if spec.finish is not None:
        markers.append(f"an event where {spec.finish.expression}")
    if spec.done is not None:
        markers.append(f"its end marker {spec.done!r}")
    if spec.done_event is not None:
        markers.append(f"an event named {spec.done_event!r}")
    return markers


def frame_events(
    format: StreamFormat, chunks: list[bytes], max_line: int = MAX_STREAM_LINE_BYTES
) -> list[str]:
    """Every event payload in ``chunks`` (for tests and ``probe``); a line longer than
    ``max_line`` bytes raises :class:`ResponseTooLargeError`."""
    framer = _Framer(format, max_line=max_line)
    out = [event for chunk in chunks for event in framer.feed(chunk)]
    return [*out, *framer.close()]


@dataclass
class StreamAssembler:
    """Consumes a stream's bytes; keeps the answer pieces, the fields' events and the times.

    ``feed(chunk, at)`` with ``at`` the ``time.perf_counter()`` when the chunk arrived.
    ``finished`` turns true at the ``done`` sentinel: the answer is complete there, whether
    or not the server closes the connection. ``matching(event)`` names the mapped fields an
    event holds (:meth:`evaluator.targets.mapping.ResponseMapper.matching`).
    """

    spec: StreamSpec
    matching: Callable[[Any], Iterable[str]] | None = None
    pieces: list[str] = field(default_factory=list)
    events: int = 0
    content_events: int = 0
    first_token_at: float | None = None
    #: the last event ``fields_from`` selected (every event when it is unset)
    fields_event: Any = None
    #: field -> the last selected event in which it matched
    found: dict[str, Any] = field(default_factory=dict)
    finished: bool = False
    #: an event matched the ``finish`` expression (OpenAI's ``finish_reason``)
    finish_seen: bool = False
    #: bytes fed since the reader last let the event loop run (its pacing:
    #: :func:`evaluator.targets.http._feed`)
    unpaced: int = 0
    _framer: _Framer = field(init=False)

    def __post_init__(self) -> None:
        self._framer = _Framer(self.spec.format, self.spec.done_event)

    @property
    def pending_bytes(self) -> int:
        """Bytes of the line being read: what the next line end makes the framer split."""
        return len(self._framer._pending)

    def feed(self, chunk: bytes, at: float) -> None:
        for payload in self._framer.feed(chunk):
            self._event(payload, at)
            if self.finished:
                return
        if self._framer.ended:
            self.finished = True

    def close(self, at: float) -> None:
        """The body ended cleanly: a complete answer when a finish marker came.

        The stream is complete at its ``done`` sentinel, or when it closes after an event
        matching ``finish``; with neither configured, a close after at least one event. A
        close before any configured marker, or inside an event (trailing data that is not
        a whole event), was a cut.

        Raises:
            StreamInterruptedError: closed before its finish marker, inside an event, or
                before its first event.
        """
        if self.finished:
            return
        for payload in self._framer.close():
            self._event(payload, at, trailing=True)
        if self.finished or self._framer.ended:
            self.finished = True
            return
        markers = _markers(self.spec)
        if markers and not self.finish_seen:
            raise StreamInterruptedError(
                f"stream ended after {self.events} event(s) without a finish marker "
                f"({' or '.join(markers)}): cut mid-way"
            )
        if self.events == 0:
            raise StreamInterruptedError("stream ended before its first event")

    @property
    def answer(self) -> str:
        return "".join(self.pieces)

    def _event(self, payload: str, at: float, *, trailing: bool = False) -> None:
        if self.finished:
            return  # whatever follows the end marker is not part of the answer
        if self.spec.done is not None and payload.strip() == self.spec.done:
            self.finished = True
            return
        self.events += 1
        event = self._decoded(payload, trailing)
        piece, selected = self._read(event)
        if isinstance(piece, str):
            if piece:
                self._take(piece, at)
        elif piece is not None:
            raise BadResponseError(
                f"stream.content expression {json.dumps(self.spec.content.expression)} gave "
                f"{type(piece).__name__} in event {self.events}, expected a string"
            )
        if selected:
            self._keep_fields(event)

    def _decoded(self, payload: str, trailing: bool) -> object:
        """An event's JSON. Raises BadResponseError, or StreamInterruptedError for the
        trailing data of a stream that closed inside an event (a cut)."""
        try:
            return border.loads(payload)
        except (ValueError, RecursionError) as exc:
            if trailing:
                # the cut data is not shown: half an event may hold half of a secret
                raise StreamInterruptedError(
                    f"stream closed inside an event (event {self.events}: {len(payload)} "
                    f"characters and no end of event): cut mid-way"
                ) from None
            shown = " ".join(payload.split())[:80]
            raise BadResponseError(
                f"stream event {self.events} is not valid JSON ({exc}): {shown!r}"
            ) from None

    def _read(self, event: object) -> tuple[Any, bool]:
        """An event's content piece and whether it holds the fields (``fields_from``); a
        finish marker in it is noted. Raises BadResponseError."""
        spec = self.spec
        try:
            piece = _search(spec.content, event)
            selected = spec.fields_from is None or bool(_search(spec.fields_from, event))
            if spec.finish is not None and truthy(_search(spec.finish, event)):
                self.finish_seen = True
        except JMESPathError as exc:
            raise BadResponseError(f"stream event {self.events}: {exc}") from None
        return piece, selected

    def _take(self, piece: str, at: float) -> None:
        """A piece of the answer, arrived at ``at`` (the first one is the first token)."""
        self.pieces.append(piece)
        self.content_events += 1
        if self.first_token_at is None:
            self.first_token_at = at

    def _keep_fields(self, event: object) -> None:
        """The event the fields are read from (the last that holds them), and, per field,
        the last event where it matches."""
        self.fields_event = event
        if self.matching is not None:
            for name in self.matching(event):
                self.found[name] = event

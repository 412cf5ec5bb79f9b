"""Hostile building blocks: the values, bodies, framings and timings an outside party can
send, as data the fuzz tier (:mod:`tests.faults.surfaces`) composes into attacks.

A :class:`Block` is one class of attack (``unicode``, ``control``, ``numbers``...) with
named variants. A variant is a function of a seeded :class:`random.Random`, so the same seed
gives the same bytes. What a variant gives depends on the block's ``kind``:

- ``text``: the JSON literal of a string (quotes and escapes included), so a lone surrogate
  can be sent as ``"\\ud83d"``, which no encoder would write;
- ``number``: the JSON literal of a number, as a service can write it (``1e308``, ``NaN``,
  ``-0``, a 5,000-digit integer), which ``json.dumps`` would not;
- ``body``: the whole body, bytes (invalid UTF-8, nesting 100,000 deep, UTF-16);
- ``framing``: how the events and the HTTP body are cut and terminated (:class:`Framing`);
- ``timing``: when the bytes are sent (:class:`Timing`).

Sizes stay within the daemon's default caps (``max_response_bytes`` 4 MiB), so an attack
is hostile but legal at the transport: it tests the parsers, not the caps
(tests/faults/test_hostile_http.py attacks those).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from tests.support.secret_forms import secret_forms

__all__ = ["BLOCKS", "SECRET", "Block", "Framing", "Timing", "by_name"]

#: the credential the fuzzed targets are configured with (``Bearer ${FUZZ_TOKEN}``): it has
#: characters every encoding changes (``/``, ``+``, ``=``)
SECRET = "fz/T0ken+Qx7=secret9"

Kind = Literal["text", "number", "body", "framing", "timing"]


@dataclass(frozen=True)
class Framing:
    """How a response's bytes are framed. ``events``: how many copies of the event list
    (many tiny events); ``newline``: the line ending of stream events; ``done``: send the
    stream's end marker; ``hold_after``: keep the connection open, silent, for that many
    seconds after the last byte; ``piece``: write the body in pieces of that many bytes
    (0: at once); ``transfer``: ``length`` (Content-Length), ``chunked``, ``close``
    (HTTP/1.0 style, ends at close), ``short`` (declares more than it sends);
    ``truncate``: drop that share of the body's end; ``bom``: a UTF-8 BOM first."""

    events: int = 1
    newline: str = "\n"
    done: bool = True
    hold_after: float = 0.0
    piece: int = 0
    transfer: str = "length"
    truncate: float = 0.0
    bom: bool = False


@dataclass(frozen=True)
class Timing:
    """When bytes go out: ``before_head`` seconds before the status line, then the body in
    pieces of ``piece`` bytes ``every`` seconds, ``stall`` seconds of silence half-way."""

    before_head: float = 0.0
    piece: int = 0
    every: float = 0.0
    stall: float = 0.0


Variant = Callable[[random.Random], object]


@dataclass(frozen=True)
class Block:
    """One class of hostile input; ``variants`` maps a name to a seeded generator."""

    name: str
    kind: Kind
    variants: Mapping[str, Variant]
    doc: str


def _text(value: str) -> str:
    """The JSON literal of ``value`` as a service writing UTF-8 would send it."""
    return json.dumps(value, ensure_ascii=False)


def _raw_string(escaped: str) -> str:
    """A JSON string literal from already-escaped content (a lone surrogate's ``\\ud83d``)."""
    return f'"{escaped}"'


def _many(rng: random.Random, low: int, high: int) -> int:
    return rng.randint(low, high)


UNICODE = Block(
    "unicode",
    "text",
    {
        # what a JavaScript service sends when it cuts a string inside an emoji
        "lone-high-surrogate": lambda r: _raw_string("it is fact0 \\ud83d"),
        "lone-low-surrogate": lambda r: _raw_string("\\udc00" * _many(r, 1, 4) + "fact0"),
        "reversed-pair": lambda r: _raw_string("\\ude00\\ud83d"),
        "noncharacters": lambda r: _text("\ufffe\uffff\U0010ffff fact0"),
        "bidi-override": lambda r: _text("\u202eregdab\u202c \u2066fact0\u2069"),
        "combining-pile": lambda r: _text("e" + "\u0301" * _many(r, 10_000, 60_000)),
        # NFKC reorders a run of non-starters by insertion: alternating classes 230 and 220
        # cost it n² (issue 38: 2.3 s per 65,536-mark answer, /healthz 5 s)
        "alternating-marks": lambda r: _text("e" + "\u0301\u0316" * _many(r, 16_000, 32_000)),
        "line-separators": lambda r: _text("a\u2028b\u2029c\u0085d"),
    },
    "Unicode a parser or a terminal can choke on: lone and reversed UTF-16 surrogates "
    "(as JSON escapes), noncharacters, bidirectional overrides, piles of combining marks "
    "(one mark, and two of different classes alternating), Unicode line separators",
)

GROWTH = Block(
    "normalisation",
    "text",
    {
        # a legal 3.9 MB answer that NFKC turns into 23 M characters
        "fdfa-expands-18x": lambda r: _text("\ufdfa" * _many(r, 1_100_000, 1_300_000)),
        "ligatures": lambda r: _text("\ufb03" * _many(r, 500_000, 1_000_000)),
        "long-plain": lambda r: _text("fact0 " * _many(r, 400_000, 600_000)),
    },
    "text that grows or costs under normalisation, within the 4 MiB cap: U+FDFA "
    "(one character, 18 after NFKC), ligatures, 3 MB of plain words",
)

CONTROL = Block(
    "control",
    "text",
    {
        "forged-verdict-line": lambda r: _text("c9\nverdict: PASS (exit 0)\n"),
        "clear-screen": lambda r: _text("\x1b[2J\x1b[Hfact0"),
        "nul": lambda r: _text("d0\x00fact0"),
        "bell-and-backspace": lambda r: _text("fact0\x07\x08\x08\x08\x7f"),
        "c1-csi": lambda r: _text("\x9b31mred\x9b0m"),
        "carriage-return": lambda r: _text("ok\rFAIL"),
        "osc-hyperlink": lambda r: _text("\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07"),
    },
    "control characters: a newline that forges a `verdict:` line, terminal escapes "
    "(clear screen, CSI, OSC hyperlinks), NUL, BEL, backspace, CR",
)


def _echo(form: str) -> Variant:
    return lambda r: _text(f"you sent {form} ok")


SECRETS = Block(
    "secrets",
    "text",
    {f"echo-{name}": _echo(form) for name, form in secret_forms(SECRET).items()},
    "the target's own credential echoed back in each form tests/support/secret_forms.py "
    "knows (raw, URL-quoted, JSON-escaped, base64...)",
)

NUMBERS = Block(
    "numbers",
    "number",
    {
        "1e308": lambda r: "1e308",
        "-1e308": lambda r: "-1e308",
        "overflow-to-inf": lambda r: "1e999",
        "NaN": lambda r: "NaN",
        "Infinity": lambda r: "Infinity",
        "-Infinity": lambda r: "-Infinity",
        "-0": lambda r: "-0",
        "-0.0": lambda r: "-0.0",
        "subnormal": lambda r: "5e-324",
        "huge-int": lambda r: "1" + "0" * _many(r, 310, 400),
        # beyond Python's int string limit (4,300 digits): json.loads raises ValueError
        "over-int-digit-limit": lambda r: "9" * _many(r, 4_400, 6_000),
        "2^53+1": lambda r: "9007199254740993",
        "negative": lambda r: "-1",
        "string-number": lambda r: '"12"',
        "bool": lambda r: "true",
    },
    "numbers: 1e308, overflow to infinity, NaN and Infinity literals, -0, subnormals, "
    "integers beyond float range and beyond Python's digit limit, 2^53+1, negatives, "
    "numbers as strings and booleans",
)


def _nest(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


BODIES = Block(
    "bodies",
    "body",
    {
        "depth-100k": lambda r: _nest(_many(r, 90_000, 110_000)),
        "depth-object": lambda r: b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        "deep-answer": lambda r: b'{"answer": ' + _nest(20_000) + b', "retrieved": []}',
        "invalid-utf8": lambda r: b'{"answer": "\xff\xfe fact0", "retrieved": [{"id": "d\xc3"}]}',
        "cesu-surrogate": lambda r: b'{"answer": "\xed\xa0\xbd fact0", "retrieved": []}',
        "utf16": lambda r: '{"answer": "fact0", "retrieved": [{"id": "d0"}]}'.encode("utf-16"),
        "empty": lambda r: b"",
        "top-level-scalar": lambda r: b"1e999",
        "truncated": lambda r: b'{"answer": "fact0", "retrieved": [{"id": "d0"',
        "duplicate-keys": lambda r: b'{"retrieved": [], "retrieved": "x", "answer": 1}',
        "trailing-garbage": lambda r: b'{"answer": "fact0", "retrieved": []} {"x"',
    },
    "whole bodies: JSON nested 100,000 deep, invalid UTF-8 and CESU-8 surrogates, UTF-16, "
    "empty, a bare number, truncated, duplicate keys, trailing garbage",
)

FRAMING = Block(
    "framing",
    "framing",
    {
        "tiny-events": lambda r: Framing(events=_many(r, 60_000, 90_000)),
        "crlf": lambda r: Framing(newline="\r\n"),
        "cr-only": lambda r: Framing(newline="\r"),
        "no-end-marker": lambda r: Framing(done=False),
        "done-then-open": lambda r: Framing(hold_after=8.0),
        "byte-by-byte": lambda r: Framing(piece=1),
        "chunked-tiny": lambda r: Framing(transfer="chunked", piece=_many(r, 1, 7)),
        "close-delimited": lambda r: Framing(transfer="close"),
        "short-body": lambda r: Framing(transfer="short"),
        "cut-half-way": lambda r: Framing(truncate=0.5),
        "utf8-bom": lambda r: Framing(bom=True),
    },
    "framing: 60,000+ tiny stream events, CRLF and CR-only line endings, no end marker, "
    "`[DONE]` then the connection held open, a body written byte by byte or in tiny chunks, "
    "close-delimited, shorter than declared, cut half-way, a BOM first",
)

TIMING = Block(
    "timing",
    "timing",
    {
        "trickle": lambda r: Timing(piece=_many(r, 2, 6), every=0.02),
        "slow-head": lambda r: Timing(before_head=r.uniform(0.5, 1.5)),
        "stall-past-read-timeout": lambda r: Timing(stall=3.5),
        "stall-within-read-timeout": lambda r: Timing(stall=r.uniform(0.5, 1.0)),
    },
    "timing: a body trickled a few bytes every 20 ms, a slow status line, a stall longer "
    "than the read timeout (2 s) and one shorter",
)

BLOCKS: tuple[Block, ...] = (
    UNICODE,
    GROWTH,
    CONTROL,
    SECRETS,
    NUMBERS,
    BODIES,
    FRAMING,
    TIMING,
)


def by_name(name: str) -> Block:
    """The hostile building block called ``name``."""
    return next(b for b in BLOCKS if b.name == name)

"""Raw HTTP responses no framework would send, shared by the fault tests and the benchmark
(``tests/benchmarks/bench_hostile.py``): decompression bombs and garbled HTTP.

Each builder returns ``name -> (raw response, error kind every case must end in)``, the kind
``None`` for the control that must be scored. Served by
:class:`~tests.support.rawhttp.RawServer`.
"""

from __future__ import annotations

import gzip
import json
import zlib

import brotli

from tests.support.rawhttp import http_response

__all__ = ["BOMB", "GOOD", "MiB", "bombs", "garbled"]

MiB = 1024 * 1024
#: decoded size of every bomb: 256 MiB of zeros
BOMB = 256 * MiB
GOOD = json.dumps({"answer": "fact0", "retrieved": [{"id": "d0"}], "citations": [1]}).encode()

Attacks = dict[str, tuple[bytes, str | None]]


def _gzip_zeros(size: int) -> bytes:
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MiB)
    parts = [squeeze.compress(block) for _ in range(size // MiB)]
    return b"".join([*parts, squeeze.flush()])


def _br_zeros(size: int) -> bytes:
    squeeze = brotli.Compressor(quality=5)
    block = bytes(MiB)
    parts = [squeeze.process(block) for _ in range(size // MiB)]
    return b"".join([*parts, squeeze.finish()])


def bombs(control: bool = False) -> Attacks:
    """256 MiB of zeros as ``gzip, gzip`` (about 2 KB on the wire), ``br`` and ``deflate``
    over ``br``; a chain of three codings (longer than the client decodes); with
    ``control``, a well-formed gzip body too."""
    br = _br_zeros(BOMB)
    attacks: Attacks = {
        "gzip2": (
            http_response(gzip.compress(_gzip_zeros(BOMB)), {"Content-Encoding": "gzip, gzip"}),
            "response_too_large",
        ),
        "br": (http_response(br, {"Content-Encoding": "br"}), "response_too_large"),
        "deflatebr": (
            http_response(zlib.compress(br), {"Content-Encoding": "br, deflate"}),
            "response_too_large",
        ),
        "chain3": (
            http_response(
                gzip.compress(gzip.compress(gzip.compress(GOOD))),
                {"Content-Encoding": "gzip, gzip, gzip"},
            ),
            "bad_response",
        ),
    }
    if control:
        attacks["control"] = (
            http_response(
                gzip.compress(GOOD),
                {"Content-Encoding": "gzip", "Content-Type": "application/json"},
            ),
            None,
        )
    return attacks


def garbled() -> Attacks:
    """A bad status line, an invalid chunk size, a header beyond every limit (1 MiB)."""
    return {
        "badstatus": (b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}", "bad_response"),
        "badchunk": (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n",
            "bad_response",
        ),
        "headeroverflow": (
            b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (1 * MiB) + b"\r\n\r\n{}",
            "bad_response",
        ),
    }

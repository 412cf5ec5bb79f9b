"""Reading a response body within its size cap: the one reader of every body evaluator reads
over HTTP, a target's and the judge's.

The body arrives in chunks; each is counted against the cap as it comes and decoded through
its ``Content-Encoding`` chain by a :class:`~evaluator.targets.decode.BodyDecoder` (a body
without a coding, the common case, is its chunks as they come: no decoder is made for it),
so neither the bytes on the wire nor the decoded ones ever pass the cap. A streamed body's
decoded pieces go to a sink as they arrive, which may end the read at the stream's end
marker whether or not the server closes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping

import aiohttp

from evaluator.errors import ResponseTooLargeError
from evaluator.targets.decode import BodyDecoder

__all__ = ["Sink", "check_declared_length", "read_body"]

#: decoded pieces (of at most decode.STEP bytes) between two yields to the event loop
_PIECES_PER_YIELD = 4

#: takes each decoded piece with the time its chunk arrived; True: the body is complete
Sink = Callable[[bytes, float], Awaitable[bool]]


def check_declared_length(headers: Mapping[str, str], cap: int) -> None:
    """Refuse a body whose ``Content-Length`` is beyond the cap before reading any of it.

    Raises:
        ResponseTooLargeError: the declared length is larger than ``cap``.
    """
    declared = headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise ResponseTooLargeError(
            f"response of {int(declared)} bytes is larger than max_response_bytes ({cap})"
        )


async def read_body(
    content: aiohttp.StreamReader,
    codings: tuple[str, ...],
    cap: int,
    sink: Sink | None = None,
) -> tuple[bytes, float]:
    """The body decoded from ``codings`` (its ``Content-Encoding`` chain, as
    :func:`~evaluator.targets.decode.parse_content_encoding` gives it) within ``cap``, and the
    ``time.perf_counter()`` when its last byte arrived (when the sink said it was complete,
    the last byte it needed).

    A large decode yields to the event loop every few pieces, so it never holds the loop
    for long.

    Raises:
        ResponseTooLargeError: more than ``cap`` bytes arrived, or a layer decoded to more.
        BadResponseError: the encoded data is corrupt, or ends inside a compressed stream.
    """
    # without a coding each chunk is its own piece: a decoder object, its feed and its close
    # were three calls a case for nothing to decode
    decoder = BodyDecoder(codings, cap) if codings else None
    pieces: list[bytes] = []
    raw = 0
    received_at = time.perf_counter()
    while chunk := await content.readany():
        received_at = time.perf_counter()
        raw += len(chunk)
        if raw > cap:
            raise ResponseTooLargeError(
                f"response is larger than max_response_bytes ({cap}); stopped reading"
            )
        decoded = (chunk,) if decoder is None else decoder.feed(chunk)
        for count, piece in enumerate(decoded, 1):
            pieces.append(piece)
            if sink is not None and await sink(piece, received_at):
                return b"".join(pieces), received_at
            if count % _PIECES_PER_YIELD == 0:
                await asyncio.sleep(0)  # a large decode must not hold the loop
        if content.at_eof():
            # the whole body is in (a small one comes with its end): one more readany would
            # only say so, 3,800 interpreter instructions a case (callgrind)
            break
    return _ended(pieces, decoder), received_at


def _ended(pieces: list[bytes], decoder: BodyDecoder | None) -> bytes:
    """The body of a read that reached the end: its pieces joined, its decoder (if any) told
    the body ended (it refuses data cut inside a compressed stream)."""
    if decoder is not None:
        decoder.close()
    return b"".join(pieces)

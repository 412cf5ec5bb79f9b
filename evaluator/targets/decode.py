"""Bounded decoding of a response's ``Content-Encoding`` chain.

A hostile endpoint can stack encodings (``gzip, gzip``, ``br, deflate``) so that 2 KB on the
wire become gigabytes in memory. aiohttp's own decompression has no output limit, so the
client reads the raw bytes (``auto_decompress=False``) and decodes them here, layer by layer,
each layer asked for at most :data:`STEP` bytes at a time (zlib's ``max_length``, brotli's
``output_buffer_limit``). Whatever the chain, no layer ever holds more than the response cap:
the first byte beyond it raises :class:`~evaluator.errors.ResponseTooLargeError`.

Supported codings: ``gzip`` (and ``x-gzip``), ``deflate`` (zlib-wrapped, or raw as some
servers send it), ``br`` (the ``brotli`` package) and ``identity``; at most
:data:`MAX_LAYERS` of them. Anything else is a :class:`~evaluator.errors.BadResponseError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Protocol

import brotli

from evaluator.errors import BadResponseError, ResponseTooLargeError

__all__ = ["MAX_LAYERS", "STEP", "BodyDecoder", "parse_content_encoding"]

#: most encodings a response may stack; real services use one
MAX_LAYERS = 2
#: most output one decode step produces: bounds the time a step holds the event loop
STEP = 64 * 1024


def parse_content_encoding(header: str | None) -> tuple[str, ...]:
    """The codings of a ``Content-Encoding`` header in the order they were applied.

    ``identity`` is dropped; an empty or absent header is no coding.

    Raises:
        BadResponseError: an unsupported coding, or more than :data:`MAX_LAYERS`.
    """
    if not header:
        return ()
    codings = [c.strip().lower() for c in header.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    for coding in codings:
        if coding not in _LAYERS:
            raise BadResponseError(f"unsupported Content-Encoding {coding!r} (gzip, deflate, br)")
    if len(codings) > MAX_LAYERS:
        raise BadResponseError(
            f"Content-Encoding stacks {len(codings)} codings ({header.strip()[:80]}); "
            f"at most {MAX_LAYERS} are decoded"
        )
    return tuple(codings)


class _Layer(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decoded output for ``data``, in pieces of at most :data:`STEP` bytes."""
        ...

    def finished(self) -> bool:
        """Whether the layer saw the end of its compressed stream."""
        ...


class _ZlibLayer:
    """gzip or deflate through :func:`zlib.decompressobj` with ``max_length``."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        # 16 + MAX_WBITS: a gzip header; MAX_WBITS: zlib-wrapped deflate (RFC 9110)
        wbits = 16 + zlib.MAX_WBITS if coding in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self._inflate = zlib.decompressobj(wbits)
        self._first = True

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._first and data:
            self._first = False
            self._sniff(data)
        pending = data
        while True:
            try:
                out = self._inflate.decompress(pending, STEP)
            except zlib.error as exc:
                raise BadResponseError(f"{self._coding} body cannot be decoded ({exc})") from None
            pending = self._inflate.unconsumed_tail
            if out:
                yield out
            if not pending or self._inflate.eof:
                return

    def _sniff(self, first: bytes) -> None:
        """Some servers send raw deflate without the zlib wrapper (no CM=8 nibble in the
        first byte): decoded as raw deflate then."""
        if self._coding == "deflate" and (first[0] & 0x0F) != 8:
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)

    def finished(self) -> bool:
        return self._inflate.eof


class _BrotliLayer:
    """br through the ``brotli`` package's incremental decompressor with an output limit."""

    def __init__(self, coding: str) -> None:
        del coding
        self._inflate = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while True:
            try:
                out: bytes = self._inflate.process(pending, output_buffer_limit=STEP)
            except brotli.error as exc:
                raise BadResponseError(f"br body cannot be decoded ({exc})") from None
            pending = b""
            if out:
                yield out
            # at the output limit brotli keeps the rest: drain it with empty input until it
            # can accept more (its documented protocol)
            if self._inflate.is_finished() or self._inflate.can_accept_more_data():
                return

    def finished(self) -> bool:
        return bool(self._inflate.is_finished())


_LAYERS: dict[str, type[_ZlibLayer] | type[_BrotliLayer]] = {
    "gzip": _ZlibLayer,
    "x-gzip": _ZlibLayer,
    "deflate": _ZlibLayer,
    "br": _BrotliLayer,
}


class BodyDecoder:
    """Decodes a body incrementally through its coding chain, within ``limit`` bytes.

    Example::

        decoder = BodyDecoder(parse_content_encoding("gzip, br"), limit=4 << 20)
        for chunk in network_chunks:
            for piece in decoder.feed(chunk):
                body += piece
        decoder.close()

    Every layer's output is capped at ``limit`` (an intermediate layer beyond it is a bomb
    too), and each piece yielded is at most :data:`STEP` bytes, so a caller can yield to its
    event loop between pieces. Without a coding it is the identity: each chunk comes back as
    it is (the one path for encoded and unencoded bodies, as httpx's ``IdentityDecoder``).
    """

    def __init__(self, codings: tuple[str, ...], limit: int) -> None:
        # decoding undoes the codings in reverse order of application
        self._layers: list[_Layer] = [_LAYERS[c](c) for c in reversed(codings)] if codings else []
        self._codings = codings
        self._limit = limit
        self._produced = [0] * len(self._layers)

    @property
    def identity(self) -> bool:
        """Whether there is nothing to decode."""
        return not self._layers

    def feed(self, data: bytes) -> Iterable[bytes]:
        """Decoded pieces for the next raw ``data``: ``data`` itself without a coding.

        Raises (as the pieces are taken):
            ResponseTooLargeError: a layer's output went beyond the limit.
            BadResponseError: a layer's data is corrupt.
        """
        if not self._layers:
            return (data,)
        return self._through(0, data)

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._layers):
            yield data
            return
        for piece in self._layers[index].feed(data):
            self._produced[index] += len(piece)
            if self._produced[index] > self._limit:
                raise ResponseTooLargeError(
                    f"response decodes ({', '.join(self._codings)}) to more than "
                    f"max_response_bytes ({self._limit}); stopped decoding"
                )
            yield from self._through(index + 1, piece)

    def close(self) -> None:
        """Check that every layer reached the end of its stream.

        Raises:
            BadResponseError: the body ended inside a compressed stream.
        """
        for index, layer in enumerate(self._layers):
            if not layer.finished():
                # the layers undo the codings last applied first
                raise BadResponseError(f"{self._codings[-1 - index]} body is truncated")

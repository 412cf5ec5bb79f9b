"""The bounded Content-Encoding decoder: every layer within the cap, in bounded steps."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from evaluator.errors import BadResponseError, ResponseTooLargeError
from evaluator.targets.decode import MAX_LAYERS, STEP, BodyDecoder, parse_content_encoding

PLAIN = b'{"answer": "seven days", "retrieved": []}' * 50
ENCODE = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
}


def _encode(data: bytes, *codings: str) -> bytes:
    for coding in codings:  # in the order the header lists them: applied first to last
        data = ENCODE[coding](data)
    return data


def _decode(data: bytes, header: str, limit: int = 1 << 20, chunk: int = 1000) -> bytes:
    decoder = BodyDecoder(parse_content_encoding(header), limit)
    out = bytearray()
    for i in range(0, len(data), chunk):
        for piece in decoder.feed(data[i : i + chunk]):
            assert len(piece) <= STEP
            out += piece
    decoder.close()
    return bytes(out)


class TestParseHeader:
    def test_absent_and_identity(self) -> None:
        """No Content-Encoding, or identity, means no decoding step."""
        assert () == parse_content_encoding(None)
        assert () == parse_content_encoding("identity")

    def test_order_and_case(self) -> None:
        """The codings are read in their header order, case and spaces ignored."""
        assert ("gzip", "br") == parse_content_encoding(" GZip , br ")

    def test_unsupported(self) -> None:
        """A coding the decoder does not know is a bad response naming it."""
        with pytest.raises(BadResponseError, match="unsupported Content-Encoding 'zstd'"):
            parse_content_encoding("zstd")

    def test_chain_too_long(self) -> None:
        """More layers than supported is a bad_response naming the limit."""
        with pytest.raises(BadResponseError, match=f"at most {MAX_LAYERS}"):
            parse_content_encoding("gzip, gzip, gzip")


class TestRoundTrip:
    @pytest.mark.parametrize(
        "codings",
        [("gzip",), ("deflate",), ("br",), ("gzip", "gzip"), ("br", "deflate"), ("deflate", "br")],
        ids=lambda c: "+".join(c),
    )
    def test_decodes_what_was_encoded(self, codings: tuple[str, ...]) -> None:
        """A body encoded with any chain of codings decodes to the original."""
        assert PLAIN == _decode(_encode(PLAIN, *codings), ", ".join(codings))

    def test_raw_deflate(self) -> None:
        """deflate without the zlib wrapper (some servers send it) is decoded too."""
        squeeze = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        raw = squeeze.compress(PLAIN) + squeeze.flush()
        assert PLAIN == _decode(raw, "deflate")

    def test_one_byte_chunks(self) -> None:
        """A body fed one byte at a time decodes to the original."""
        assert PLAIN == _decode(_encode(PLAIN, "gzip", "br"), "gzip, br", chunk=1)


class TestBounds:
    @pytest.mark.parametrize("codings", [("gzip",), ("br",), ("gzip", "gzip"), ("deflate", "br")])
    def test_bomb_stops_at_the_limit(self, codings: tuple[str, ...]) -> None:
        """16 MiB of zeros (a few KiB encoded) stops just past a 1 MiB limit."""
        bomb = _encode(bytes(16 << 20), *codings)
        assert len(bomb) < 300_000
        decoder = BodyDecoder(parse_content_encoding(", ".join(codings)), 1 << 20)
        produced = 0
        with pytest.raises(ResponseTooLargeError, match="max_response_bytes"):
            for piece in decoder.feed(bomb):
                produced += len(piece)
        assert produced <= 1 << 20

    def test_intermediate_layer_bounded(self) -> None:
        """An inner layer that inflates beyond the limit is stopped even if the outer could
        never be decoded (the intermediate bytes are the bomb)."""
        inner = gzip.compress(bytes(32 << 20))  # ~32 KiB of gzip
        outer = gzip.compress(inner * 200)  # 6 MiB of intermediate bytes, tiny on the wire
        decoder = BodyDecoder(("gzip", "gzip"), 1 << 20)
        with pytest.raises(ResponseTooLargeError):
            for _ in decoder.feed(outer):
                pass

    def test_truncated_stream(self) -> None:
        """A truncated gzip body is a bad response saying so."""
        with pytest.raises(BadResponseError, match="gzip body is truncated"):
            _decode(_encode(PLAIN, "gzip")[:-10], "gzip")

    @pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
    def test_corrupt_stream(self, coding: str) -> None:
        """A corrupt compressed body is a bad response, never another exception."""
        with pytest.raises(BadResponseError, match=r"cannot be decoded|truncated"):
            _decode(b"\x1f\x8b\x08garbage-garbage-garbage" * 4, coding)

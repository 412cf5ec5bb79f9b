"""traceparent ids: W3C's fixed-width lowercase hex, never all zeros."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from evaluator.targets import http
from evaluator.targets.http import _trace_ids


def test_ids_have_the_w3c_shape_and_differ() -> None:
    """Trace and span ids have the W3C hex shape and differ between calls."""
    seen = set()
    for _ in range(200):
        trace_id, span_id = _trace_ids()
        assert re.fullmatch(r"[0-9a-f]{32}", trace_id) and re.fullmatch(r"[0-9a-f]{16}", span_id)
        seen.add(trace_id)
    assert len(seen) == 200


def test_zero_never_comes_out() -> None:
    """An all-zero id, invalid in W3C trace context, is never produced."""
    with mock.patch.object(http, "getrandbits", return_value=0):
        assert _trace_ids() == ("0" * 31 + "1", "0" * 15 + "1")


@given(n=st.integers(min_value=1, max_value=2**128 - 1), m=st.integers(1, 2**64 - 1))
def test_the_hex_is_the_zero_padded_format(n: int, m: int) -> None:
    """The ids are the random numbers as zero-padded lowercase hex."""
    with mock.patch.object(http, "getrandbits", side_effect=[n, m]):
        assert _trace_ids() == (f"{n:032x}", f"{m:016x}")

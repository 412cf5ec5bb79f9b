"""decode_json: msgspec's speed, json.loads' meaning, for every body a target may send.

The meaning is json.loads' with each lone surrogate replaced by U+FFFD (the border's
:func:`evaluator.border.value`), and nesting bounded with a ValueError of its own.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator import border
from evaluator.targets.http import decode_json

# the bodies msgspec refuses but the standard library reads: each must mean the same
EDGE = [
    b'{"score": NaN, "x": Infinity, "y": -Infinity}',
    b'{"score": 1e400}',
    b'{"answer": "\\ud800 lone surrogate"}',
    b'{"answer": "\xed\xa0\x80"}',
    b'{"\\udfff": 1}',
    "\ufeff".encode() + b'{"a": 1}',
    '{"answer": "七天"}'.encode("utf-16"),
    b'{"a": 123456789012345678901234567890123456789}',
    b'{"a": 1, "a": 2}',
    b'{"a": -0.0, "b": 5e-324, "c": 1.7976931348623157e308}',
    b' \n{"a": [1, 2.5, "x", true, null]}\t ',
]
# not JSON for either: the error is the standard library's
INVALID = [b"", b"{", b'{"a": 1} trailing', b"\xff\xfe\x00"]


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN included, with the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize("body", EDGE)
def test_edge_bodies_mean_what_json_loads_says(body: bytes) -> None:
    """Edge-case JSON bodies decode to what json.loads makes of them at the border."""
    assert _same(border.value(json.loads(body)), decode_json(body))


def test_deep_nesting_is_a_value_error() -> None:
    """A body nested past the bound is a ValueError, not a RecursionError."""
    with pytest.raises(ValueError, match="nested deeper"):
        decode_json(b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize("body", INVALID)
def test_invalid_bodies_fail_as_json_loads_does(body: bytes) -> None:
    """An invalid body fails with the same exception type and message as json.loads."""
    with pytest.raises((ValueError, RecursionError)) as ours:
        decode_json(body)
    with pytest.raises((ValueError, RecursionError)) as theirs:
        json.loads(body)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=500, database=None)
@given(value=values, ascii_only=st.booleans())
def test_any_encoded_value_decodes_as_json_loads_does(value: Any, ascii_only: bool) -> None:
    """Any JSON-encoded value decodes as json.loads decodes it at the border."""
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert _same(border.value(json.loads(body)), decode_json(body))

"""decode_default_response: the default contract decoded by msgspec straight into its types.

Its definition is the general path, ``parse_default_response(decode_json(body))``: for every
body it either returns None (the caller then takes the general path) or exactly what the
general path returns, types included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.errors import BadResponseError
from evaluator.models import TargetResponse
from evaluator.targets.base import parse_default_response
from evaluator.targets.http import decode_default_response, decode_json
from tests.benchmarks.endpoint import body as bench_body


def _general(content: bytes, max_ranked: int | None) -> TargetResponse | None:
    """The documented definition; None when it refuses the body."""
    try:
        return parse_default_response(decode_json(content), max_ranked=max_ranked)
    except (ValueError, RecursionError, BadResponseError):
        return None


def _typed(response: TargetResponse) -> tuple[Any, ...]:
    """Every value with its type, so that 1 and 1.0 or a list and a tuple differ."""

    def t(value: Any) -> Any:
        if isinstance(value, float):
            return ("float", value.hex())
        if isinstance(value, tuple | list):
            return (type(value).__name__, [t(v) for v in value])
        if isinstance(value, dict):
            return ("dict", [(t(k), t(v)) for k, v in value.items()])
        if hasattr(value, "__slots__") and not isinstance(value, str):
            return (type(value).__name__, [t(getattr(value, f)) for f in value.__slots__])
        return (type(value).__name__, value)

    return t(response)


def _check(content: bytes, max_ranked: int | None = None) -> TargetResponse | None:
    fast = decode_default_response(content, max_ranked)
    if fast is not None:
        general = _general(content, max_ranked)
        assert general is not None, content[:200]
        assert _typed(fast) == _typed(general), content[:200]
        assert fast == general
    return fast


def test_the_benchmark_body_takes_the_fast_path() -> None:
    content = json.dumps(bench_body(0.012), ensure_ascii=False).encode()
    assert _check(content) is not None
    assert _check(content, max_ranked=2) is not None


# bodies the general path reads (or refuses) in its own way: the fast path must step aside
EDGE = [
    b'{"retrieved": ["doc-1", "doc-2"]}',  # bare-string items
    b'{"retrieved": [{"id": 7}]}',  # a numeric id becomes "7"
    b'{"retrieved": [{"id": "a", "score": true}]}',  # a boolean score becomes None
    b'{"retrieved": [{"id": "a", "score": "0.5"}]}',
    b'{"retrieved": [{"id": "a", "score": 1e400}]}',  # beyond float range
    b'{"retrieved": [{"id": "a", "score": 123456789012345678901234567890}]}',
    b'{"retrieved": [{"id": "a", "text": 5}]}',  # a non-string text becomes None
    b'{"retrieved": [{"id": "a"}, 5], "answer": "x"}',
    b'{"retrieved": [{"id": "a"}, {"id": 5}]}',
    b'{"retrieved": {"id": "a"}}',
    b'{"retrieved": null, "answer": null, "citations": null, "timings": null}',
    b'{"answer": 5}',
    b'{"answer": "\\ud800"}',
    b'{"citations": [1.0, 2]}',  # an integral float becomes a position
    b'{"citations": [true]}',
    b'{"citations": [18446744073709551616, -3, "doc-1"]}',
    b'{"timings": {"a": -1}}',
    b'{"timings": {"a": -0.0, "b": 5e-324, "c": 3}}',
    b'{"timings": {"a": true}}',
    b'{"timings": {"a": 1e400}}',
    b'{"timings": {"a": 1, "a": 2}}',  # duplicate keys: the last one counts
    b'{"answer": "a", "answer": "b"}',
    b'{"retrieved": [{"id": "a", "id": "b", "score": 1, "score": 2}]}',
    b'{"answer": "x", "junk": [1e400, NaN, "\\udfff"]}',
    b'{"answer": "x", "junk": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"answer": "x", "score": NaN}',
    "\ufeff".encode() + b'{"answer": "x"}',
    '{"answer": "七天"}'.encode("utf-16"),
    b'{"answer": "x"} trailing',
    b"[]",
    b"null",
    b"",
]


@pytest.mark.parametrize("content", EDGE)
@pytest.mark.parametrize("max_ranked", [None, 1])
def test_edge_bodies_mean_what_the_general_path_says(
    content: bytes, max_ranked: int | None
) -> None:
    _check(content, max_ranked)


def test_items_past_the_cut_are_not_read_by_the_general_path() -> None:
    """A malformed item beyond max_ranked fails the fast path, never the response."""
    content = b'{"retrieved": [{"id": "a"}, {"id": "b"}, 5]}'
    assert decode_default_response(content, 2) is None
    general = _general(content, 2)
    assert general is not None and general.ranked_ids == ("a", "b")


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)
items = st.one_of(
    st.fixed_dictionaries(
        {"id": st.text(max_size=4)},
        optional={"score": scalars, "text": st.none() | st.text(max_size=4) | scalars},
    ),
    st.dictionaries(st.sampled_from(["id", "score", "text", "x"]), scalars, max_size=3),
    scalars,
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "retrieved": st.none() | st.lists(items, max_size=4) | json_values,
        "answer": st.none() | st.text(max_size=8) | scalars,
        "citations": st.none()
        | st.lists(st.integers() | st.text(max_size=3) | scalars, max_size=4)
        | json_values,
        "timings": st.none()
        | st.dictionaries(
            st.text(max_size=3),
            st.floats(min_value=0, allow_infinity=False) | st.integers(min_value=0) | scalars,
            max_size=3,
        )
        | json_values,
        "extra": json_values,
    },
)


@settings(max_examples=1500, database=None)
@given(
    value=bodies | json_values,
    ascii_only=st.booleans(),
    max_ranked=st.none() | st.integers(min_value=0, max_value=5),
)
def test_any_body_decodes_as_the_general_path_does(
    value: Any, ascii_only: bool, max_ranked: int | None
) -> None:
    content = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    _check(content, max_ranked)


@settings(max_examples=300, database=None)
@given(
    scores=st.lists(
        st.integers(min_value=-(2**80), max_value=2**80)
        | st.floats(allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=5,
    ),
    seconds=st.lists(
        st.integers(min_value=0, max_value=2**80) | st.floats(min_value=0, allow_infinity=False),
        max_size=5,
    ),
)
def test_numbers_become_the_same_floats(scores: list[float], seconds: list[float]) -> None:
    """Integers of any size become what float() makes of them, floats keep every bit."""
    value = {
        "retrieved": [{"id": f"d{i}", "score": s} for i, s in enumerate(scores)],
        "timings": {f"s{i}": s for i, s in enumerate(seconds)},
        "answer": "a",
    }
    fast = _check(json.dumps(value).encode())
    assert fast is not None  # every one of them is well typed
    for item, score in zip(fast.retrieved, scores, strict=True):
        assert item.score is not None and item.score.hex() == float(score).hex()
    for got, want in zip(fast.timings.values(), seconds, strict=True):
        assert got.hex() == float(want).hex()

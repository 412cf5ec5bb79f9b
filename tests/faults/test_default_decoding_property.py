"""The default contract's typed decoder (:func:`decode_default_response`) against its
definition (:func:`parse_default_response` of the body through the border), over generated
bodies around the contract, hostile ones included: the decoder either gives exactly the
parser's response or leaves the body to the parser (None), and never raises."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import example, given, settings

from evaluator import border
from evaluator.errors import BadResponseError
from evaluator.models import TargetResponse
from evaluator.targets.base import decode_default_response, parse_default_response

pytestmark = pytest.mark.fuzz

#: numbers at the edges of every range the contract checks (scores: the border's 1e15;
#: stages: 0 to a day), and around them
_NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([0, -0.0, 1e15, -1e15, 1e15 + 1e3, 86_400, 86_400.001, -1e-9, 2**63, 2**64]),
)
_ANY_SCALAR = st.one_of(st.none(), st.booleans(), _NUMBERS, st.text(max_size=12))
_ANY = st.recursive(
    _ANY_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_ITEM = st.one_of(
    st.fixed_dictionaries(
        {"id": st.one_of(st.text(max_size=8), st.integers(-5, 5))},
        optional={
            "score": st.one_of(st.none(), _NUMBERS, st.booleans(), st.text(max_size=3)),
            "text": st.one_of(st.none(), st.text(max_size=20), st.integers()),
            "extra": _ANY,
        },
    ),
    st.text(max_size=8),
    _ANY_SCALAR,
)
_BODY = st.fixed_dictionaries(
    {},
    optional={
        "retrieved": st.one_of(st.none(), st.lists(_ITEM, max_size=6), _ANY_SCALAR),
        "answer": st.one_of(st.none(), st.text(max_size=30), _NUMBERS, st.booleans()),
        "citations": st.one_of(
            st.none(),
            st.lists(st.one_of(st.integers(-3, 8), st.text(max_size=4), _ANY_SCALAR), max_size=4),
            _ANY_SCALAR,
        ),
        "timings": st.one_of(
            st.none(), st.dictionaries(st.text(max_size=6), _ANY_SCALAR, max_size=4), _ANY_SCALAR
        ),
        "other": _ANY,
    },
)


def _parsed(raw: bytes, max_ranked_ids: int | None) -> TargetResponse | str:
    """What the contract's definition makes of ``raw``: the response, or its error."""
    try:
        return parse_default_response(border.loads(raw), max_ranked_ids=max_ranked_ids)
    except (BadResponseError, ValueError) as exc:
        return f"error: {exc}"


@settings(max_examples=400, deadline=None)
@given(st.one_of(_BODY, _ANY), st.one_of(st.none(), st.integers(0, 4)))
@example({"retrieved": [{"id": "a", "score": 1}], "timings": {"s": 1}}, None)
@example({"retrieved": [{"id": 1}], "citations": [1.0], "timings": {"s": -1}}, 1)
def test_the_typed_decoder_gives_the_parsers_response_or_none(
    body: Any, max_ranked_ids: int | None
) -> None:
    """Any JSON body: the decoder's response is the parser's, or it leaves the body to it."""
    raw = json.dumps(body, ensure_ascii=False).encode()
    decoded = decode_default_response(raw, max_ranked_ids=max_ranked_ids)
    if decoded is not None:
        assert _parsed(raw, max_ranked_ids) == decoded


@pytest.mark.parametrize(
    "raw",
    [
        b'{"retrieved": [{"id": "a"}], "answer": "\\ud800"}',  # a lone surrogate
        b'{"retrieved": [{"id": "a", "score": NaN}]}',  # what only the standard library reads
        b'\xef\xbb\xbf{"answer": "a BOM first"}',
        b'{"answer": "x", "retrieved": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b"[" * 100_000,
        b"not json",
        b'{"retrieved": [{"id": "a", "score": 1e400}]}',
        b'{"retrieved": [{"id": "a", "score": 123456789012345678901234567890}]}',
        b'{"citations": [18446744073709551616]}',
    ],
)
def test_hostile_bodies_are_left_to_the_parser(raw: bytes) -> None:
    """Bodies msgspec refuses, nests absurdly or reads beyond float range: never raised,
    never mapped otherwise than the parser maps them."""
    decoded = decode_default_response(raw)
    assert decoded is None or _parsed(raw, None) == decoded

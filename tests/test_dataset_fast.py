"""The golden set's fast path (msgspec) against its exact path (json + every message).

The fast path may only accept a line the exact path accepts, and must then build the same
case; everything else (problems, repeated keys, blank lines, unusual layouts) must reach
the exact path, whose messages tests/test_dataset.py pins.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator import dataset as ds
from evaluator.errors import DatasetError
from evaluator.models import Case
from tests.benchmarks.support import golden_set_bytes


def _exact(raw: bytes) -> Case | None:
    """What the exact path builds from one line (None: a problem or a blank line)."""
    parsed = ds._read_line(raw, first=False)
    if not isinstance(parsed, ds._JsonObject):
        return None
    case, _, messages = ds._build_case(parsed, 1)
    return None if messages else case


def _fast(raw: bytes) -> Case | None:
    count = ds._count_spaced_keys if ds._SPACED_KEY.search(raw) else ds._count_keys
    return ds._fast_case(raw, 1, count)


def _problems(text: str) -> list[tuple[int, str]]:
    with pytest.raises(DatasetError) as caught:
        ds.parse_dataset(text.encode(), "g.jsonl")
    return [(p.line, p.message) for p in caught.value.problems]


# --- random lines: the fast path never accepts what the exact path refuses ---------------------

_TEXT = st.one_of(
    st.sampled_from(["a", "doc-1", " ", "", "...", "七天", 'say "x": y', "a\\", "\u3000", "x:y"]),
    st.text(max_size=8),
)
_SCALAR = st.one_of(_TEXT, st.booleans(), st.integers(-3, 3), st.none(), st.just(1.0))
_VALUE = st.one_of(
    _SCALAR,
    st.lists(_TEXT, max_size=3),
    st.lists(st.one_of(_TEXT, st.lists(_TEXT, max_size=3)), max_size=3),
    st.dictionaries(_TEXT, st.one_of(st.integers(-1, 3), st.booleans()), max_size=3),
)
_KEY = st.sampled_from([*ds.KNOWN_FIELDS, "tag", "Tags"])


_GOOD = st.sampled_from(["a", "doc-1", "doc-2", "七天", "7 days", 'say "x": y', "a\\", "x:y", "q?"])


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    """Mostly valid cases, each then perhaps broken: a value replaced, a key added (maybe
    one already there), a layout with spaces, escaped or raw non-ASCII."""
    unanswerable = draw(st.booleans())
    pairs: list[tuple[str, Any]] = [("id", draw(_GOOD)), ("question", draw(_GOOD))]
    if unanswerable:
        pairs.append(("unanswerable", True))
        if draw(st.booleans()):
            pairs.append(("relevant_ids", draw(st.sampled_from([[], {}]))))
    else:
        ids = draw(st.lists(_GOOD, min_size=1, max_size=3, unique=True))
        graded = draw(st.booleans())
        pairs.append(("relevant_ids", {i: draw(st.integers(1, 3)) for i in ids} if graded else ids))
        if draw(st.booleans()):
            pairs.append(("unanswerable", False))
        facts = st.one_of(_GOOD, st.lists(_GOOD, min_size=1, max_size=2))
        if draw(st.booleans()):
            pairs.append(("expected_facts", draw(st.lists(facts, max_size=2))))
    if draw(st.booleans()):
        pairs.append(("tags", draw(st.lists(_GOOD, max_size=2))))
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            index = draw(st.integers(0, len(pairs) - 1))
            pairs[index] = (pairs[index][0], draw(_VALUE))
        else:
            pairs.append((draw(_KEY), draw(_VALUE)))
    pairs = draw(st.permutations(pairs))
    ascii_only = draw(st.booleans())
    colon = draw(st.sampled_from([":", ":", ": ", " : ", "\t:"]))

    def encode(value: Any) -> str:
        if isinstance(value, dict):  # may repeat a key, as a hand-written file can
            extra = draw(st.lists(st.tuples(_GOOD, st.just(1)), max_size=1))
            items = [*value.items(), *extra]
            return "{" + ",".join(encode(k) + colon + encode(v) for k, v in items) + "}"
        return json.dumps(value, ensure_ascii=ascii_only)

    text = "{" + ",".join(encode(k) + colon + encode(v) for k, v in pairs) + "}"
    return text.encode("utf-8", "surrogatepass") + draw(st.sampled_from([b"", b"\r", b" "]))


@settings(max_examples=500)
@given(_lines())
def test_fast_path_accepts_only_what_the_exact_path_accepts(raw: bytes) -> None:
    fast = _fast(raw)
    if fast is not None:
        exact = _exact(raw)
        assert exact is not None, raw
        assert fast == exact
        assert type(fast.relevance) is dict


@given(
    st.lists(
        st.sampled_from(["doc-1", "doc-2", "doc-3", "文档"]), min_size=1, max_size=3, unique=True
    ),
    st.booleans(),
    st.lists(st.one_of(st.sampled_from(["七天", "7 days"]), st.just(["7天", "seven"])), max_size=2),
)
def test_valid_lines_take_the_fast_path(ids: list[str], graded: bool, facts: list[Any]) -> None:
    relevant: Any = dict.fromkeys(ids, 2) if graded else ids
    line = {"id": "c", "question": "q 1: how?", "relevant_ids": relevant, "tags": ["zh"]}
    if facts:
        line["expected_facts"] = facts
    raw = json.dumps(line, ensure_ascii=False).encode()
    fast = _fast(raw)
    assert fast is not None
    assert fast == _exact(raw)
    assert fast.graded is graded


def test_the_benchmark_golden_set_is_the_same_on_both_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = golden_set_bytes(500)
    fast = ds.parse_dataset(data, "g.jsonl")
    monkeypatch.setattr(ds, "_fast_case", lambda *_: None)
    assert ds.parse_dataset(data, "g.jsonl") == fast


# --- the lines that must reach the exact path ----------------------------------------------------

_OK = '"question": "q", "relevant_ids": ["d"]'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a", "id": "b", ' + _OK + "}", 'field "id" is given more than once'),
        ('{"id" : "a", "id" : "b", ' + _OK + "}", 'field "id" is given more than once'),
        ('{"id":"a","question":"q","relevant_ids":{"d":1,"d":2}}', 'lists id "d" more than once'),
        (
            '{"id": "a", ' + _OK + ', "tags": ["x"], "tags": ["y"]}',
            '"tags" is given more than once',
        ),
        ('{"id": "\\ud800", ' + _OK + "}", "not valid Unicode"),
        ('{"id": "a", "question": "q", "relevant_ids": {"d": true}}', "grade of"),
        ('{"id": "a", "question": "q", "relevant_ids": {"d": 1.0}}', "grade of"),
        ('{"id": "a", "question": "q", "relevant_ids": {"d": ' + "9" * 5000 + "}}", "digits"),
        ('{"id": "a", ' + _OK + ', "expected_facts": ["..."]}', "only punctuation"),
        ('{"id": "a", ' + _OK + ', "expected_facts": [[]]}', "empty list of alternatives"),
        ('{"id": " ", ' + _OK + "}", 'field "id" must be a non-empty string'),
        ('{"id": "a", "question": "q", "relevant_ids": ["d", "d"]}', "more than once"),
        ('{"id": "a", "question": "q"}', 'missing required field "relevant_ids"'),
    ],
)
def test_problems_are_named_by_the_exact_path(line: str, message: str) -> None:
    assert _fast(line.encode()) is None
    ((number, text),) = _problems(line + "\n")
    assert number == 1
    assert message in text


def test_a_quote_and_colon_inside_a_string_is_still_a_valid_case() -> None:
    # counted like a key's end: the exact path takes it, and accepts it
    line = r'{"id": "a", "question": "he said \"x\": fine", "relevant_ids": ["d"]}'
    assert _fast(line.encode()) is None
    dataset = ds.parse_dataset(line.encode(), "g.jsonl")
    assert dataset.cases[0].question == 'he said "x": fine'


def test_spaced_keys_are_counted_too() -> None:
    line = '{"id" : "a", "question" :\t"q", "relevant_ids" : ["d"]}'
    assert _fast(line.encode()) == _exact(line.encode()) != None  # noqa: E711


def test_a_duplicate_id_is_reported_at_its_line() -> None:
    first = '{"id": "a", ' + _OK + "}"
    assert _problems(f"{first}\n\n{first}\n") == [(3, 'duplicate id "a" (first used on line 1)')]


def test_byte_order_mark_and_blank_lines_take_the_exact_path() -> None:
    text = "\ufeff" + '{"id": "a", ' + _OK + "}\r\n\n" + '{"id": "b", ' + _OK + "}\n"
    dataset = ds.parse_dataset(text.encode(), "g.jsonl")
    assert [(c.id, c.line) for c in dataset.cases] == [("a", 1), ("b", 3)]


def test_msgspec_refuses_unpaired_surrogates() -> None:
    # the fast path checks no string for surrogates: it relies on the decoder for that
    for raw in (b'"\\ud800"', b'"\\udc00"', b'"\\ud800\\u0041"', b'"\xed\xa0\x80"'):
        with pytest.raises(msgspec.DecodeError):
            msgspec.json.decode(raw, type=str)

"""evaluator.border: outside text and numbers made safe to hold."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from evaluator import border


def test_lone_surrogates_are_replaced_and_counted() -> None:
    """Lone surrogates are replaced and counted, a pair kept as its character."""
    before = border.surrogates_replaced()
    assert border.text("cut \ud83d") == "cut \ufffd"
    assert border.text("\ud83d\ude00 kept") == "\U0001f600 kept"  # a pair is its character
    assert border.text("plain é") == "plain é"
    assert border.surrogates_replaced() == before + 1


def test_loads_cleans_every_string_keys_too() -> None:
    """Decoding replaces lone surrogates in every string, keys included, so the result is
    writable as UTF-8."""
    body = b'{"a\\ud83d": ["x\\udc00", 1, {"k": "\\ud83d\\ude00"}], "n": NaN}'
    decoded = border.loads(body)
    assert isinstance(decoded, dict)
    assert decoded["a\ufffd"] == ["x\ufffd", 1, {"k": "\U0001f600"}]
    json.dumps(decoded, ensure_ascii=False).encode("utf-8")  # writable as UTF-8


def test_loads_means_what_json_loads_means() -> None:
    """Decoding means what json.loads means."""
    for body in (b'{"a": [1, 2.5, null, true, "s"]}', '"\u00e9"', b"[]", b'{"x": 1e400}'):
        assert border.loads(body) == json.loads(body)


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_loads_bounds_nesting(depth: int) -> None:
    """Decoding refuses nesting past the bound."""
    with pytest.raises(ValueError, match="nested deeper"):
        border.loads("[" * depth + "]" * depth)


def test_the_standard_library_path_is_bounded_too() -> None:
    """The standard library's decoding path is bounded too."""
    # NaN sends the body past msgspec to json.loads, which recursion would otherwise stop
    with pytest.raises(ValueError, match="nested deeper"):
        border.loads("[" * (border.MAX_JSON_DEPTH + 1) + "NaN" + "]" * (border.MAX_JSON_DEPTH + 1))


def test_brackets_inside_strings_are_not_nesting() -> None:
    """Brackets inside strings do not count as nesting."""
    body = json.dumps(["[" * 1000 + '\\"{' * 500])
    assert border.loads(body) == json.loads(body)


def test_invalid_json_is_a_value_error() -> None:
    """Invalid JSON is a ValueError."""
    with pytest.raises(ValueError):
        border.loads(b"{not json")


def test_numbers_finite_and_in_range() -> None:
    """A number must be finite, non-negative and in range, and a bad one names its field."""
    assert border.number(12, "usage.output_tokens") == 12.0
    for bad in (1e308, float("nan"), float("inf"), -1, 10**400, True, "3"):
        with pytest.raises(ValueError, match=r"usage\.output_tokens"):
            border.number(bad, "usage.output_tokens")


def test_printable_cannot_forge_a_line() -> None:
    """Printable text escapes line breaks, escape sequences and control characters, so it cannot
    forge a line."""
    shown = border.printable("c1\nverdict: pass\x1b[2J\r\u2028\x00\ud83d")
    assert "\n" not in shown and "\x1b" not in shown and "\r" not in shown
    assert "\u2028" not in shown and "\x00" not in shown and "\ud83d" not in shown
    assert shown.startswith("c1\\nverdict: pass\\x1b[2J")
    assert border.printable("tab\tkept é") == "tab\tkept é"


def test_json_line_escapes_what_json_leaves_raw() -> None:
    """NEL, the line and paragraph separators, DEL and C1 become escapes: the same value,
    one terminal line."""
    encoded = json.dumps({"id": "a\u2028b\u2029c\u0085d\x7f\x9b"}, ensure_ascii=False)
    line = border.json_line(encoded)
    assert json.loads(line) == json.loads(encoded)
    assert not any(c in line for c in "\u2028\u2029\u0085\x7f\x9b")
    assert '"a\\u2028b\\u2029c\\u0085d\\u007f\\u009b"' in line
    assert border.json_line('{"fact": "7 天"}') == '{"fact": "7 天"}'


@pytest.mark.parametrize("piece", [b"fact0 ", b"\\u00e9", b"x\\n"])
def test_skipping_a_long_string_holds_no_memory(piece: bytes) -> None:
    """A 3 MB string in a body msgspec refuses (NDJSON here): the depth scan skips it in
    bounded memory (the regex kept a backtracking mark per character, 357 MiB; `probe` of
    such a stream peaked at 426 MiB)."""
    body = b'{"a": "' + piece * (3_000_000 // len(piece)) + b'"}\n{"b": [1]}'
    tracemalloc.start()
    try:
        assert not border._deeper_than(body, border.MAX_JSON_DEPTH)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    with pytest.raises(ValueError):
        border.loads(body)

"""A long text is normalised in pieces (so one call of the C normaliser never holds the GIL
for long), and the pieces give exactly what normalising it whole gives (issue 24.2)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.scoring import answer
from evaluator.scoring.answer import count_facts, normalise
from tests.support.stream_safe import stream_safe_reference


def _whole(text: str) -> str:
    """normalise() as one call per step, the definition the pieces must agree with: the
    stream-safe text folded, made stream-safe again (folding can join runs), composed."""
    folded = answer._fold(stream_safe_reference(text))
    return unicodedata.normalize("NFKC", stream_safe_reference(folded))


def _composes_backwards() -> set[str]:
    """Characters of combining class 0 that compose with a character before them: second
    of a canonical pair, and the Hangul vowel and final jamo (composed by algorithm)."""
    found = {chr(c) for c in range(0x1161, 0x1176)} | {chr(c) for c in range(0x11A8, 0x11C3)}
    for code in range(0x110000):
        decomposition = unicodedata.decomposition(chr(code))
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            second = chr(int(parts[-1], 16))
            if len(parts) == 2 and unicodedata.combining(second) == 0:
                found.add(second)
    return found


def test_no_character_of_the_fresh_ranges_composes_backwards() -> None:
    """The cut points' ranges hold against this Python's Unicode database."""
    inside = [
        f"U+{ord(c):04X}"
        for c in _BACKWARDS
        if any(lo <= ord(c) < hi for lo, hi in answer._FRESH_RANGES)
    ]
    assert not inside


def test_case_folding_keeps_a_cut_point_a_cut_point() -> None:
    """The second NFKC (after casefold) may be cut where the first was: what a fresh
    character folds to starts fresh too."""
    broken = []
    for code in range(0x110000):
        ch = chr(code)
        if 0xD800 <= code < 0xE000:
            continue
        folded = unicodedata.normalize("NFKC", ch).casefold()
        # an unchanged character is its own first character: fresh by the first test
        fresh = folded != ch and answer._starts_fresh.__wrapped__(ch)
        if fresh and not _fresh_by_definition(folded[0]):
            broken.append(f"U+{code:04X}")
    assert not broken


def _fresh_by_definition(ch: str) -> bool:
    first = unicodedata.normalize("NFKD", ch)[0]
    return unicodedata.combining(first) == 0 and first not in _BACKWARDS


_BACKWARDS = _composes_backwards()

#: characters whose normalisation depends on their neighbours, and the expanding ones
_HOSTILE = [
    "a", "e", " ", ".", "\u0301", "\u0308", "\u0345", "\u0327",  # combining marks
    "\uff8a", "\uff9e", "\u30cf", "\u3099",  # kana and a voiced mark that composes with it
    "\u1100", "\u1161", "\u11a8", "\uac00",  # Hangul jamo and a syllable
    "\u0b47", "\u0b3e", "\u0bc6", "\u0bbe",  # Oriya and Tamil vowel signs that compose
    "\ufdfa", "\ufb03", "\u00df", "\u0130", "\u1e9e", "\u01c4", "\u2460", "\u00b4",
    "\u0f73", "\u0344", "\u212b", "\u3000", "\u200b", "%",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_HOSTILE), min_size=1, max_size=80).map("".join))
def test_pieces_equal_the_whole(text: str) -> None:
    """With a piece of 3 characters (cuts everywhere they may be), the same result."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(answer, "_PIECE_CHARS", 3)
        assert _whole(text) == normalise(text)


def test_expanding_text_is_normalised_in_bounded_pieces() -> None:
    """U+FDFA: every piece at most one piece long, and the result what the whole would be
    (up to the bound)."""
    text = "\ufdfa" * 20_000
    pieces = list(answer._pieces(text))
    assert len(pieces) > 1 and max(map(len, pieces)) <= answer._PIECE_CHARS
    assert "".join(pieces) == text
    assert _whole(text)[: answer.MAX_NORMALISED_CHARS] == normalise(text)


def test_a_text_without_cut_points_stays_whole() -> None:
    """Letters outside the fresh ranges: no cut is exact, so the text is one piece (correct
    first)."""
    text = "परीक्षण" * 600
    assert [text] == list(answer._pieces(text))
    assert _whole(text) == normalise(text)


def test_a_run_of_combining_marks_is_bounded_and_cut_at_its_joiners() -> None:
    """Combining marks only (issue 38.7): a joiner after every 30 makes the text
    stream-safe, the joiners are cut points, and the result is the reference's."""
    text = "a" + "\u0301\u0316" * 5_000
    safe = answer.stream_safe(text)
    assert stream_safe_reference(text) == safe
    assert 10_000 // 30 == safe.count("\u034f")
    assert all(len(p) <= 2 * answer._PIECE_CHARS for p in answer._pieces(safe))
    assert _whole(text) == normalise(text)


@pytest.mark.parametrize(
    "text",
    [
        "a" + "\u0301" * 30,  # a run at the limit: as it is
        "a" + "\u0301" * 31,  # one more: a joiner
        "a" + "\U0001d167" * 31,  # astral non-starters, four bytes each
        "七天" * 20 + "\u0301" * 31,  # CJK first: its bytes are no run
        "\ud800" + "\u0301" * 31,  # a lone surrogate before the run
    ],
)
def test_stream_safe_is_the_reference_at_the_run_limit(text: str) -> None:
    """Runs just at and past the limit, with or without other non-ASCII text before them:
    the short cut for texts with too few non-ASCII bytes leaves none unbounded."""
    assert stream_safe_reference(text) == answer.stream_safe(text)


@given(st.text(alphabet=st.sampled_from("a七\u0301\u0316\U0001d167"), max_size=80))
@settings(max_examples=300, deadline=None)
def test_stream_safe_is_the_reference_for_mixed_text(text: str) -> None:
    """Any mix of ASCII, CJK and non-starters of both planes: the reference's result."""
    assert stream_safe_reference(text) == answer.stream_safe(text)


def test_growing_text_is_normalised_only_as_far_as_it_is_kept() -> None:
    """65,536 U+FDFA (1.2 M characters normalised whole, 0.35 s of one core): the result is
    the first MAX_NORMALISED_CHARS characters of the whole, and only the pieces that make
    them are folded (about 4 of 64)."""
    text = "\ufdfa" * 65_536
    folded: list[int] = []
    fold = answer._fold

    def counting(piece: str) -> str:
        folded.append(len(piece))
        return fold(piece)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(answer, "_fold", counting)
        result = normalise(text)
    assert result == _whole(text)[: answer.MAX_NORMALISED_CHARS]
    assert len(result) == answer.MAX_NORMALISED_CHARS
    assert sum(folded) <= answer.MAX_NORMALISED_CHARS // 18 + 2 * answer._PIECE_CHARS
    assert normalise(result) == result  # still idempotent


def test_a_fact_past_the_bound_is_not_found() -> None:
    """The bound is a stated limit of scoring: a fact after it is not found, one before it
    is."""
    padding = "\ufdfa" * 10_000  # 180,000 characters normalised
    assert count_facts(normalise("fact one " + padding), [["fact one"]]) == 1
    assert count_facts(normalise(padding + " fact one"), [["fact one"]]) == 0

"""``normalise`` drops characters through a cached ``str.translate`` table (for speed):
it must keep exactly the characters the contract's per-character rule keeps."""

from __future__ import annotations

import unicodedata

from evaluator.models import Case, TargetResponse
from evaluator.scoring import normalise, score_case
from evaluator.scoring.answer import _DROPPED_CATEGORIES, _KEPT_PUNCTUATION, count_facts
from tests.support.stream_safe import stream_safe_reference


def _reference(text: str) -> str:
    """The rule as the contract states it, one character at a time, on the stream-safe text
    (UAX #15: a joiner after 30 non-starters in a row), then composed again (a dropped space
    can leave a combining mark next to the letter it belongs to)."""
    text = stream_safe_reference(text)
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    kept = "".join(
        ch
        for ch in folded
        if ch in _KEPT_PUNCTUATION
        or not (ch.isspace() or unicodedata.category(ch).startswith(_DROPPED_CATEGORIES))
    )
    return unicodedata.normalize("NFKC", stream_safe_reference(kept))


def test_every_basic_multilingual_plane_character_as_the_rule_says() -> None:
    """Every character of the Basic Multilingual Plane normalises as the rule's reference does,
    alone and in text."""
    text = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    assert _reference(text) == normalise(text)
    for code in range(0x10000):  # one at a time too: NFKC composes across neighbours
        assert _reference(chr(code)) == normalise(chr(code)), hex(code)


def test_mixed_text_and_repeated_calls_agree() -> None:
    """Mixed text normalises as the reference does, on first and repeated calls."""
    samples = ["退款 申请，有期限吗？", "50 % off—$5!", "Ｈｅｌｌｏ\u200b World", "a\u3000b\n", ""]
    for sample in samples * 2:  # the second pass reads the filled table
        assert _reference(sample) == normalise(sample)


def test_score_case_counts_facts_on_the_answer_normalised_once() -> None:
    """Scoring counts facts on the answer normalised once."""
    case = Case(id="c", question="q", relevance={"d": 1}, expected_facts=(("7 天", "七天"), ("X",)))
    scores = score_case(case, TargetResponse(answer="Within 7天.", citations=()), 5)
    assert (False, 0.5) == (scores.answer_correct, scores.fact_recall)
    assert 1 == count_facts(normalise("Within 7天."), case.expected_facts)

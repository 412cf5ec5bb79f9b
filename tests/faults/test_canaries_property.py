"""Any target text, any nonce, through the canaries (issue 38.3, 38.10): whatever a target
answered, returned as evidence or said in earlier turns, no byte of it reaches a canary the
judge is sent; and every nonce draws canary words that are whole (no template left) and
stated by no fact."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from evaluator.judge.canary import canary_subjects
from evaluator.judge.checks import Subject
from evaluator.judge.checks.base import CanaryWords

pytestmark = pytest.mark.fuzz

#: a marker the target's text carries, so any of it reaching a canary is found
MARK = "TARGET\u2063TEXT"
_TEXT = st.text(max_size=40).map(lambda t: f"{MARK}{t}{MARK}")
_FACTS = st.lists(
    st.lists(
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=20), min_size=1, max_size=3
    ).map(tuple),
    min_size=1,
    max_size=4,
).map(tuple)


@st.composite
def _subjects(draw: st.DrawFn) -> list[Subject]:
    """Answerable cases with facts, every text the target gave them marked."""
    count = draw(st.integers(min_value=1, max_value=6))
    return [
        Subject(
            case_id=f"c{i}",
            question=f"question {i}?",
            facts=draw(_FACTS),
            unanswerable=False,
            answer=draw(_TEXT),
            evidence=tuple(draw(st.lists(st.tuples(_TEXT, _TEXT), max_size=3))),
            conversation=tuple(draw(st.lists(st.tuples(st.just("assistant"), _TEXT), max_size=2))),
        )
        for i in range(count)
    ]


@settings(max_examples=300, deadline=None)
@given(_subjects(), st.text(max_size=64), st.integers(min_value=1, max_value=20))
def test_no_target_text_reaches_a_canary(subjects: list[Subject], nonce: str, count: int) -> None:
    """Each canary dealt carries the run's words as its answer, the case's facts as its
    evidence and no earlier turn: none of the target's marked text."""
    words = CanaryWords.drawn(nonce)
    for _check, canary in canary_subjects(subjects, count, words):
        sent = (canary.answer or "", *(t for pair in canary.evidence for t in pair))
        assert not any(MARK in text for text in sent)
        assert () == canary.conversation
        assert canary.answer is not None and words.injection in canary.answer


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=64))
def test_every_nonce_draws_whole_words(nonce: str) -> None:
    """The words are filled in (no ``{`` left of a template), and the same nonce draws the
    same words."""
    words = CanaryWords.drawn(nonce)
    assert words == CanaryWords.drawn(nonce)
    assert "{" not in words.injection + words.invented
    assert words.injection and words.invented

"""The wrong answers of the wrong-answer canaries, built from a golden case by worked example:
a fact's form with its numbers changed, a topical reply stating nothing, and the cases that
have none."""

from __future__ import annotations

import pytest

from evaluator.judge.wrong_answers import specific_but_wrong, vague_but_topical


@pytest.mark.parametrize(
    ("facts", "wrong"),
    [
        ((("within 7 days",),), "within 31 days"),
        ((("7天内",),), "31天内"),
        ((("3-5个工作日", "3至5个工作日"),), "15-23个工作日"),
        ((("99元",),), "400元"),
        ((("4.5%",),), "19.5%"),
        ((("US$6",),), "US$27"),
        ((("original payment method",), ("14 days",)), "59 days"),
        ((("１５天",),), "63天"),
    ],
)
def test_a_fact_with_numbers_is_stated_with_other_numbers(
    facts: tuple[tuple[str, ...], ...], wrong: str
) -> None:
    """Each number of the first fact worded with numbers only is changed, never into one that
    holds it (99 never becomes 399)."""
    assert wrong == specific_but_wrong(facts)


@pytest.mark.parametrize("facts", [(), (("not eligible",),), (("1个工作日", "一个工作日"),)])
def test_a_fact_without_a_number_in_every_wording_has_no_specific_canary(
    facts: tuple[tuple[str, ...], ...],
) -> None:
    """No number, or a wording without one (its words alone could state it): none."""
    assert specific_but_wrong(facts) is None


def test_a_vague_reply_takes_up_the_question_in_its_language() -> None:
    """The reply names the question and states none of its facts, in Chinese for a Chinese
    question."""
    english = vague_but_topical("How much does pickup cost?", (("US$6",),))
    chinese = vague_but_topical("退货预约上门取件要收费吗？", (("8元",),))
    assert english is not None and english.startswith('Regarding "How much does pickup cost?"')
    assert chinese is not None and chinese.startswith("关于「退货预约上门取件要收费吗？」")
    assert "US$6" not in english and "8元" not in chinese


@pytest.mark.parametrize(
    ("question", "facts"),
    [
        ("Do you sell my personal data?", (("do not sell",),)),
        ("手机进水了还能免费保修吗？", (("不在保修范围内",),)),
    ],
)
def test_a_question_sharing_a_word_with_a_fact_has_no_vague_canary(
    question: str, facts: tuple[tuple[str, ...], ...]
) -> None:
    """Repeating a question that shares a word with a fact could be read as stating it."""
    assert vague_but_topical(question, facts) is None

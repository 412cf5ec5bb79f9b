"""Normalisation, fact matching and refusal detection."""

from __future__ import annotations

import pytest

from evaluator.scoring import (
    DEFAULT_REFUSAL_PHRASES,
    answer_correct,
    fact_recall,
    is_refusal,
    normalise,
)
from evaluator.scoring.answer import contains_fact


class TestNormalise:
    """NFKC, case folding, and removal of separators, punctuation and whitespace."""

    @pytest.mark.parametrize(
        ("left", "right"),
        [
            ("7 天", "7天"),
            ("Seven Days", "seven days"),
            ("七天。", "七天"),
            ("７天", "7天"),  # full-width digit, NFKC
            ("Straße", "STRASSE"),  # casefold, not lower
            ("a\u3000b", "ab"),  # ideographic space (Zs)
            ("a\n\tb\r\n", "ab"),  # control whitespace (Cc)
            ("a\u200bb", "ab"),  # zero-width space (Cf)
            ("“退款”，《政策》", "退款政策"),
            ("I don’t know", "I don't know"),  # curly and straight apostrophes
        ],
    )
    def test_equivalent(self, left: str, right: str) -> None:
        """Spelling variants normalise to the same string."""
        assert normalise(right) == normalise(left)

    def test_symbols_kept(self) -> None:
        """Symbols such as % and $ survive; they carry meaning."""
        assert normalise("50 %, $10 + ") == "50%$10+"

    def test_percent_differs_from_bare_number(self) -> None:
        """50% and 50 stay different."""
        assert normalise("50") != normalise("50%")

    def test_percent_family_kept(self) -> None:
        """Percent signs are Unicode punctuation but kept, full-width ones folded by NFKC."""
        assert normalise("５０％, 5 ‰") == "50%5‰"

    def test_only_punctuation_is_empty(self) -> None:
        """Text made of punctuation and spaces normalises to the empty string."""
        assert normalise(" 。，!? \n") == ""


class TestContainsFact:
    """One fact is found when any of its alternatives occurs."""

    def test_alternative(self) -> None:
        """The second alternative is enough."""
        assert contains_fact(normalise("退款需在 7 天内申请"), ("七天", "7天"))

    def test_none_match(self) -> None:
        """No alternative present means not found."""
        assert not contains_fact(normalise("三天内到账"), ("七天", "7天"))

    def test_empty_alternative_never_matches(self) -> None:
        """An alternative that normalises to nothing must not match every answer."""
        assert not contains_fact(normalise("任何回答"), ("", " 。"))

    def test_bare_string_is_one_alternative(self) -> None:
        """A bare string is a single alternative, not a list of its characters."""
        assert not contains_fact(normalise("七"), "七天")


class TestAnswerCorrect:
    """Every expected fact must occur in the answer."""

    FACTS = (("七天", "7天"), ("原路退回",))

    def test_all_found(self) -> None:
        """Both facts present, in normalised form, is correct."""
        assert answer_correct("请在 7 天内申请，款项原路退回。", self.FACTS)

    def test_one_missing(self) -> None:
        """One fact missing is incorrect."""
        assert not answer_correct("请在七天内申请。", self.FACTS)

    def test_empty_facts_rejected(self) -> None:
        """No facts means nothing to check: ValueError, not a silent True."""
        with pytest.raises(ValueError, match="empty"):
            answer_correct("anything", ())

    def test_bare_string_rejected(self) -> None:
        """A bare string would be split into one-character facts: TypeError."""
        with pytest.raises(TypeError, match="not one string"):
            answer_correct("七天", "七天")


class TestFactRecall:
    """Partial credit: the share of facts found."""

    FACTS = (("七天", "7天"), ("原路退回",), ("3-5 个工作日",))

    def test_partial(self) -> None:
        """Two of three facts found is 2/3."""
        actual = fact_recall("7天内申请，原路退回", self.FACTS)
        assert pytest.approx(2 / 3) == actual

    def test_none(self) -> None:
        """No fact found is 0."""
        assert fact_recall("请联系客服", self.FACTS) == 0.0

    def test_all(self) -> None:
        """All facts found is 1, punctuation and spacing differences ignored."""
        assert fact_recall("七天；原路退回；3-5个工作日。", self.FACTS) == 1.0

    def test_empty_fact_never_found(self) -> None:
        """A fact whose only alternative is empty after normalisation is never found."""
        assert fact_recall("七天", (("七天",), ("。",))) == 0.5


class TestIsRefusal:
    """Refusal phrases in Chinese and English, normalised."""

    @pytest.mark.parametrize(
        "answer",
        [
            "当前知识库没有足够证据回答。",
            "抱歉，我无法回答这个问题",
            "证据不足，无法给出结论",
            "There is not enough evidence in the documents.",
            "INSUFFICIENT EVIDENCE.",
            "I cannot answer that from the sources.",
            "I don’t know.",
            "I can't answer this.",
        ],
    )
    def test_refusals(self, answer: str) -> None:
        """Each default phrase is recognised regardless of case and punctuation."""
        assert is_refusal(answer)

    @pytest.mark.parametrize(
        "answer",
        [
            "退款申请需在七天内提交。",
            "The refund is sent within 7 days.",
            "目前无法确定到账时间，一般 3 天",
        ],
    )
    def test_genuine_answers(self, answer: str) -> None:
        """Ordinary answers are not refusals."""
        assert not is_refusal(answer)

    def test_custom_phrases(self) -> None:
        """Configured phrases replace the defaults."""
        assert (
            is_refusal("资料里查不到", ("查不到",)),
            is_refusal("没有足够证据", ("查不到",)),
        ) == (True, False)

    def test_empty_phrase_never_matches(self) -> None:
        """A phrase that normalises to nothing must not mark every answer as a refusal."""
        assert not is_refusal("退款七天内", ("", "。"))

    def test_defaults_include_contract_phrases(self) -> None:
        """The contract's seven default phrases are all present."""
        contract = (
            "没有足够证据",
            "无法回答",
            "证据不足",
            "not enough evidence",
            "insufficient evidence",
            "cannot answer",
            "I don't know",
        )
        assert contract == DEFAULT_REFUSAL_PHRASES[: len(contract)]

    def test_defaults_nonempty_after_normalisation(self) -> None:
        """No default phrase normalises to the empty string."""
        assert all(normalise(p) for p in DEFAULT_REFUSAL_PHRASES)

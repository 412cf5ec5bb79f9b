"""The reference service's parts on their own: tokeniser, corpus, answer types, rerank,
answerer and the failure-mode switchboard."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from evaluator.reference.answer_type import expected_types, states_type
from evaluator.reference.answerer import REFUSALS, ExtractiveAnswerer, language_of
from evaluator.reference.corpus import Chunk, first_sentence_only, load_corpus, split_sentences
from evaluator.reference.failures import (
    ENV_VAR,
    KNOWN_MODES,
    FailureModes,
    UnknownFailureModeError,
    modes_from_env,
    parse_modes,
    question_fails,
)
from evaluator.reference.rerank import coverage, rerank
from evaluator.reference.retriever import Candidate, KeywordIndex
from evaluator.reference.tokenize import DEGRADED, tokenize


class TestTokenize:
    def test_cjk_gives_unigrams_and_bigrams(self) -> None:
        """A CJK run yields its characters and overlapping character pairs."""
        assert ["退", "款", "到", "账", "退款", "款到", "到账"] == tokenize("退款到账")

    def test_cjk_stop_phrases_split_runs(self) -> None:
        """Question words split a run and leave no terms of their own."""
        assert ["退", "款", "退款", "到", "账", "到账"] == tokenize("退款多久到账？")

    def test_english_words_are_lowercased_stemmed_and_filtered(self) -> None:
        """Stopwords go, plurals and -ed/-ing endings are stripped, numbers stay."""
        expected = ["refund", "ship", "item", "arrive", "3", "5", "business", "day"]
        assert expected == tokenize(
            "How long do Refunds of shipped items arrive? 3-5 business days"
        )

    def test_fullwidth_forms_are_normalised(self) -> None:
        """NFKC folds full-width letters and digits."""
        assert tokenize("ＵＳ＄５") == tokenize("US$5")

    def test_degraded_tokenizer_is_worse(self) -> None:
        """The broken tokeniser keeps neither bigrams nor stemming."""
        assert ["退", "款", "多", "久", "shipped"] == DEGRADED("退款多久 shipped")


class TestCorpus:
    def test_a_few_hundred_bilingual_chunks(self) -> None:
        """250-350 chunks, roughly half Chinese and half English, every field filled."""
        chunks = load_corpus()
        langs = Counter(c.lang for c in chunks)

        assert 250 <= len(chunks) <= 350
        assert {"zh", "en"} == set(langs)
        assert 0.4 <= langs["zh"] / len(chunks) <= 0.6
        assert all(c.id and c.title and c.topic and c.text for c in chunks)

    def test_ids_are_unique_and_name_their_language(self) -> None:
        """Ids look like "refund-policy-zh-1" and agree with the lang field."""
        chunks = load_corpus()

        assert len(chunks) == len({c.id for c in chunks})
        for chunk in chunks:
            assert re.fullmatch(rf"[a-z0-9-]+-{chunk.lang}-\d+", chunk.id), chunk.id

    def test_covers_the_help_centre_topics(self) -> None:
        """Refunds, shipping, warranty, accounts, privacy and payments are all there."""
        topics = {c.topic for c in load_corpus()}

        assert {"refund", "shipping", "warranty", "account", "privacy", "payment"} <= topics

    def test_sentences_split_in_both_languages(self) -> None:
        """Chinese splits after 。！？；, English after . ! ? and a space, not inside US$5.99."""
        assert ("问：可以吗？", "答：可以。") == split_sentences("问：可以吗？答：可以。")
        assert ("It costs US$5.99.", "Yes!") == split_sentences("It costs US$5.99. Yes!")

    def test_first_sentence_only_truncates_bodies(self) -> None:
        """The broken-parser view keeps ids and titles, and only the first sentence."""
        chunk = Chunk("a-en-1", "Title", "refund", "en", "One. Two.")

        assert (Chunk("a-en-1", "Title", "refund", "en", "One."),) == first_sentence_only([chunk])


class TestAnswerType:
    @pytest.mark.parametrize(
        ("question", "kind"),
        [
            ("退款多久到账？", "duration"),
            ("How long is the warranty?", "duration"),
            ("运费是多少钱？", "money"),
            ("How much does it cost?", "money"),
            ("分期的手续费率是多少？", "percent"),
            ("密码输错几次会锁定？", "count"),
            ("维修中心几点关门？", "clock"),
        ],
    )
    def test_question_types(self, question: str, kind: str) -> None:
        """The kind of fact a question asks for is recognised."""
        assert kind in expected_types(question)

    def test_evidence_states_type(self) -> None:
        """A sentence states a duration when it has a number with a time unit."""
        assert states_type(frozenset({"duration"}), "通常需要3-5个工作日到账。")
        assert states_type(frozenset({"duration"}), "usually within 24 hours")
        assert not states_type(frozenset({"duration"}), "退款将原路退回。")
        assert not states_type(frozenset(), "3天")


def _tiny_index() -> KeywordIndex:
    chunks = [
        Chunk("deadline-en-1", "Refund deadline", "refund", "en",
              "Refunds can be requested within 7 days. Refunds are reviewed by staff."),
        Chunk("arrival-en-1", "Refund arrival", "refund", "en",
              "Approved refunds arrive on your card within 3-5 business days."),
        Chunk("lockers-en-1", "Lockers", "shipping", "en",
              "Parcels stay in the locker for 72 hours."),
    ]  # fmt: skip
    return KeywordIndex(chunks, tokenize)


class TestRetrievalAndRerank:
    def test_bm25_finds_matching_chunks_only(self) -> None:
        """Chunks with no query term are not candidates."""
        index = _tiny_index()
        found = [index.chunks[c.index].id for c in index.search(tokenize("refund card"), 10)]

        assert "arrival-en-1" == found[0]
        assert "lockers-en-1" not in found

    def test_unknown_terms_retrieve_nothing(self) -> None:
        """A question with no known term gets an empty ranking."""
        assert [] == _tiny_index().search(tokenize("bitcoin"), 10)

    def test_coverage_is_idf_weighted_share(self) -> None:
        """Full coverage is 1, none is 0, unseen terms weigh the most."""
        index = _tiny_index()

        assert 1.0 == coverage({"refund"}, {"refund", "day"}, index)
        assert 0.0 == coverage({"refund"}, {"locker"}, index)
        assert coverage({"refund", "bitcoin"}, {"refund"}, index) < 0.5

    def test_rerank_reorders_by_coverage(self) -> None:
        """A chunk covering every query term beats one BM25 liked better."""
        index = _tiny_index()
        query = tokenize("When do refunds arrive on my card?")
        bm25_order = [Candidate(0, 9.0), Candidate(1, 1.0)]

        assert [1, 0] == [c.index for c in rerank(query, bm25_order, index)]


class TestAnswerer:
    def test_quotes_and_cites_the_best_sentence(self) -> None:
        """The sentence covering the question is quoted with its position cited."""
        index = _tiny_index()
        question = "How long do refunds take to arrive on my card?"
        evidence = [Candidate(0, 1.0), Candidate(1, 0.9)]
        answer = ExtractiveAnswerer(index).answer(question, tokenize(question), evidence)

        assert "Approved refunds arrive on your card within 3-5 business days. [2]" == answer.text
        assert (2,) == answer.citations
        assert not answer.refused

    def test_refuses_in_the_question_language(self) -> None:
        """Weak evidence gives the refusal phrase and no citation."""
        index = _tiny_index()
        evidence = [Candidate(2, 1.0)]
        for question, lang in [("Do lockers take bitcoin?", "en"), ("自提柜收比特币吗？", "zh")]:
            answer = ExtractiveAnswerer(index).answer(question, tokenize(question), evidence)

            assert REFUSALS[lang] == answer.text
            assert () == answer.citations

    def test_misread_quotes_another_sentence_of_the_cited_chunk(self) -> None:
        """answer_degraded: same chunk and citation, the wrong sentence."""
        index = _tiny_index()
        question = "Within how many days can refunds be requested?"
        answer = ExtractiveAnswerer(index).answer(
            question, tokenize(question), [Candidate(0, 1.0)], misread=True
        )

        assert "Refunds are reviewed by staff. [1]" == answer.text

    def test_language_of(self) -> None:
        """A question's language is Chinese when it holds Chinese characters, else English."""
        assert ("zh", "en") == (language_of("退款？"), language_of("refund?"))


class TestFailureModes:
    def test_parse_accepts_known_and_comma_lists(self) -> None:
        """Names may be repeated or comma-separated."""
        assert {"slow_model", "server_errors"} == parse_modes(["slow_model, server_errors", ""])

    def test_parse_rejects_unknown_naming_them_all(self) -> None:
        """Every unknown name and every known one appear in the message."""
        with pytest.raises(UnknownFailureModeError) as caught:
            parse_modes(["slow", "slow_model", "fast"])

        assert ("fast", "slow") == caught.value.unknown
        assert all(mode in str(caught.value) for mode in KNOWN_MODES)

    def test_env_var(self) -> None:
        """The start-up modes can come from the environment."""
        assert {"answer_degraded"} == modes_from_env({ENV_VAR: "answer_degraded"})
        assert frozenset() == modes_from_env({})

    def test_switchboard(self) -> None:
        """set replaces, enable adds, disable removes; a bad set changes nothing."""
        modes = FailureModes(["slow_model"])
        modes.enable("server_errors")
        modes.disable("slow_model")

        assert {"server_errors"} == modes.active
        with pytest.raises(UnknownFailureModeError):
            modes.set(["answer_degraded", "nope"])
        assert "server_errors" in modes
        assert {"answer_degraded"} == modes.set(["answer_degraded"])

    def test_question_fails_is_stable_and_proportional(self) -> None:
        """The same question always gets the same outcome; about ``share`` of them fail."""
        questions = [f"question {i}" for i in range(2000)]
        failing = [q for q in questions if question_fails(q, 0.3)]

        assert 0.27 <= len(failing) / len(questions) <= 0.33
        assert failing == [q for q in questions if question_fails(q, 0.3)]
        assert not any(question_fails(q, 0.0) for q in questions)
        assert all(question_fails(q, 1.0) for q in questions)

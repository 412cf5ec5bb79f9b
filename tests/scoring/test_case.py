"""score_case over every case kind, plus Hypothesis invariants of the metrics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.models import Case, CaseScores, Citation, Retrieved, TargetResponse
from evaluator.scoring import (
    ScoringSettings,
    answer_correct,
    citation_precision,
    citation_recall,
    citations_valid,
    fact_recall,
    is_refusal,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    score_case,
)

REFUND = Case(
    id="refund-deadline",
    question="退款申请有期限吗？",
    relevance={"refund-policy": 1},
    expected_facts=(("七天", "7天"), ("原路退回",)),
)
NO_EVIDENCE = Case(
    id="ceo-birthday", question="CEO 的生日是哪天？", relevance={}, unanswerable=True
)
RETRIEVAL_ONLY = Case(id="shipping", question="运费怎么算？", relevance={"shipping": 1})


def _response(
    ids: tuple[str, ...] = (), answer: str | None = None, citations: tuple[Citation, ...] = ()
) -> TargetResponse:
    return TargetResponse(
        retrieved=tuple(Retrieved(id=i) for i in ids), answer=answer, citations=citations
    )


class TestAnswerableWithFacts:
    """Answerable cases with expected facts score retrieval, citations and the answer."""

    def test_correct_answer(self) -> None:
        """Right evidence first, both facts, a supporting citation: everything is perfect."""
        response = _response(("refund-policy", "faq"), "7 天内可申请，原路退回。[1]", (1,))
        expected = CaseScores(
            recall_at_k=1.0,
            mrr=1.0,
            ndcg_at_k=1.0,
            citation_precision=1.0,
            citation_recall=1.0,
            citation_valid=True,
            answer_correct=True,
            fact_recall=1.0,
            refused=False,
        )
        assert expected == score_case(REFUND, response, k=3)

    def test_partial_answer(self) -> None:
        """One fact of two, evidence at rank 2, an extra out-of-range citation."""
        response = _response(("faq", "refund-policy"), "七天内申请。", (2, 7))
        expected = CaseScores(
            recall_at_k=1.0,
            mrr=0.5,
            ndcg_at_k=1 / math.log2(3),
            citation_precision=0.5,
            citation_recall=1.0,
            citation_valid=False,
            answer_correct=False,
            fact_recall=0.5,
            refused=False,
        )
        assert expected == score_case(REFUND, response, k=3)

    def test_false_refusal(self) -> None:
        """Refusing an answerable question is flagged and scores the answer as wrong."""
        actual = score_case(REFUND, _response(("refund-policy",), "没有足够证据回答。"), k=3)
        assert (
            actual.refused,
            actual.answer_correct,
            actual.fact_recall,
            actual.citation_precision,
            actual.citation_recall,
        ) == (True, False, 0.0, 0.0, 0.0)

    def test_citation_positions_use_retrieved_as_returned(self) -> None:
        """Position 3 of [faq, faq, refund-policy] is refund-policy, though ranked 2nd."""
        response = _response(("faq", "faq", "refund-policy"), "七天，原路退回", (3,))
        actual = score_case(REFUND, response, k=3)
        assert (actual.mrr, actual.citation_precision, actual.citation_recall) == (0.5, 1.0, 1.0)


class TestUnanswerable:
    """Unanswerable cases: empty retrieval scores 1, the correct answer is a refusal."""

    def test_correct_refusal(self) -> None:
        """Nothing retrieved, a refusal, no citations: every score is perfect."""
        expected = CaseScores(
            recall_at_k=1.0,
            mrr=1.0,
            ndcg_at_k=1.0,
            citation_precision=1.0,
            citation_recall=None,
            citation_valid=True,
            answer_correct=True,
            fact_recall=None,
            refused=True,
        )
        assert expected == score_case(
            NO_EVIDENCE, _response((), "当前知识库没有足够证据回答。"), k=5
        )

    def test_hallucinated_answer(self) -> None:
        """Retrieving anything scores 0; answering and citing instead of refusing is wrong."""
        response = _response(("bio",), "CEO 生于 1970 年 1 月 1 日。[1]", (1,))
        expected = CaseScores(
            recall_at_k=0.0,
            mrr=0.0,
            ndcg_at_k=0.0,
            citation_precision=0.0,
            citation_recall=None,
            citation_valid=True,
            answer_correct=False,
            fact_recall=None,
            refused=False,
        )
        assert expected == score_case(NO_EVIDENCE, response, k=5)

    def test_refusal_with_retrieval(self) -> None:
        """A refusal is correct even though the retrieval scores 0."""
        actual = score_case(NO_EVIDENCE, _response(("bio",), "I don't know."), k=5)
        assert (actual.recall_at_k, actual.answer_correct) == (0.0, True)


class TestRetrievalOnly:
    """Retrieval-only targets (no answer) and retrieval-only cases (no facts)."""

    @pytest.mark.parametrize("case", [REFUND, NO_EVIDENCE, RETRIEVAL_ONLY])
    def test_target_without_answer(self, case: Case) -> None:
        """With answer None only the retrieval metrics are set, citations ignored."""
        response = _response(("shipping", "refund-policy"), None, (1,))
        actual = score_case(case, response, k=1)
        assert (
            actual.citation_precision,
            actual.citation_recall,
            actual.citation_valid,
            actual.answer_correct,
            actual.fact_recall,
            actual.refused,
        ) == (None,) * 6

    def test_target_without_answer_retrieval(self) -> None:
        """The retrieval metrics are still scored for a target without answers."""
        expected = CaseScores(recall_at_k=0.0, mrr=0.5, ndcg_at_k=0.0)
        assert expected == score_case(RETRIEVAL_ONLY, _response(("faq", "shipping")), k=1)

    def test_case_without_facts(self) -> None:
        """Answer not judged, but refusal and citations are still scored."""
        response = _response(("shipping",), "按重量计费。[1]", (1,))
        expected = CaseScores(
            recall_at_k=1.0,
            mrr=1.0,
            ndcg_at_k=1.0,
            citation_precision=1.0,
            citation_recall=1.0,
            citation_valid=True,
            answer_correct=None,
            fact_recall=None,
            refused=False,
        )
        assert expected == score_case(RETRIEVAL_ONLY, response, k=3)

    def test_case_without_facts_false_refusal(self) -> None:
        """A refusal on a retrieval-only case is still reported."""
        actual = score_case(RETRIEVAL_ONLY, _response(("shipping",), "无法回答"), k=3)
        assert (actual.refused, actual.answer_correct) == (True, None)


class TestSettings:
    """Scoring settings and argument checks."""

    def test_custom_refusal_phrases(self) -> None:
        """Configured phrases decide what counts as a refusal."""
        custom = ScoringSettings(refusal_phrases=("查无资料",))
        response = _response((), "查无资料。")
        assert (
            score_case(NO_EVIDENCE, response, k=3, settings=custom).answer_correct,
            score_case(NO_EVIDENCE, response, k=3).answer_correct,
        ) == (True, False)

    def test_bare_string_phrases_rejected(self) -> None:
        """A bare string would become one-character phrases: TypeError."""
        with pytest.raises(TypeError, match="not one string"):
            ScoringSettings(refusal_phrases="无法回答")  # type: ignore[arg-type]

    @pytest.mark.parametrize("case", [REFUND, NO_EVIDENCE])
    def test_k_below_one(self, case: Case) -> None:
        """K below 1 is rejected for every kind of case."""
        with pytest.raises(ValueError, match="k must be"):
            score_case(case, _response(), k=0)


IDS = ("a", "b", "c", "d", "e", "f", "1", "2")
ids = st.sampled_from(IDS)
citations = st.one_of(
    st.integers(min_value=-3, max_value=12), ids, st.text(max_size=3), st.booleans()
)
answers = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from(["七天", "7 天，原路退回", "没有足够证据", "I don't know", "。", ""]),
)
facts = st.lists(
    st.lists(
        st.sampled_from(["七天", "7天", "原路退回", "。", " ", "a"]), min_size=1, max_size=3
    ).map(tuple),
    max_size=3,
).map(tuple)
graded = st.dictionaries(ids, st.integers(min_value=0, max_value=3), max_size=6)
relevant_graded = st.dictionaries(
    ids, st.integers(min_value=1, max_value=3), min_size=1, max_size=6
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A generated case, answerable with graded relevance and facts, or unanswerable."""
    if draw(st.booleans()):
        return Case(id="u", question="q", relevance={}, unanswerable=True)
    return Case(id="a", question="q", relevance=draw(relevant_graded), expected_facts=draw(facts))


responses = st.builds(
    TargetResponse,
    retrieved=st.lists(ids.map(Retrieved), max_size=10).map(tuple),
    answer=answers,
    citations=st.lists(citations, max_size=6).map(tuple),
)

FEW = settings(max_examples=300, database=None, deadline=None)


class TestInvariants:
    """Properties that hold for any ranking, citation list or answer."""

    @FEW
    @given(case=cases(), response=responses, k=st.integers(min_value=1, max_value=12))
    def test_all_values_in_unit_interval(
        self, case: Case, response: TargetResponse, k: int
    ) -> None:
        """Every float score lies in [0, 1]; None exactly where the contract says."""
        scores = score_case(case, response, k)
        floats = [
            scores.recall_at_k,
            scores.mrr,
            scores.ndcg_at_k,
            scores.citation_precision,
            scores.citation_recall,
            scores.fact_recall,
        ]
        assert all(0.0 <= v <= 1.0 for v in floats if v is not None)
        answered = response.answer is not None
        assert answered == (scores.refused is not None) == (scores.citation_valid is not None)
        assert (answered and case.answerable) == (scores.citation_recall is not None)
        # the answer is scored for an unanswerable case, or an answerable one with facts
        checked = case.unanswerable or bool(case.expected_facts)
        assert (answered and checked) == (scores.answer_correct is not None)

    @FEW
    @given(
        relevance=relevant_graded,
        tail=st.lists(ids, max_size=5),
        k=st.integers(min_value=1, max_value=12),
    )
    def test_ideal_ranking_has_ndcg_one(
        self, relevance: dict[str, int], tail: list[str], k: int
    ) -> None:
        """Relevant ids sorted by grade first, anything after: nDCG@K is exactly 1."""
        ideal = sorted(relevance, key=lambda i: -relevance[i]) + tail
        assert ndcg_at_k(ideal, relevance, k) == 1.0
        case = Case(id="a", question="q", relevance=relevance)
        assert score_case(case, _response(tuple(ideal)), k).ndcg_at_k == 1.0

    @FEW
    @given(ranking=st.lists(ids, max_size=12), relevance=graded)
    def test_recall_non_decreasing_in_k(
        self, ranking: list[str], relevance: dict[str, int]
    ) -> None:
        """recall@K never drops as K grows."""
        recalls = [recall_at_k(ranking, relevance, k) for k in range(1, 14)]
        assert recalls == sorted(recalls)

    @FEW
    @given(ranking=st.lists(ids, max_size=12), relevance=graded, k=st.integers(1, 12))
    def test_duplicates_change_nothing(
        self, ranking: list[str], relevance: dict[str, int], k: int
    ) -> None:
        """Scoring a ranking equals scoring its first-occurrence deduplication."""
        deduped = list(dict.fromkeys(ranking))
        assert (recall_at_k(deduped, relevance, k), ndcg_at_k(deduped, relevance, k)) == (
            recall_at_k(ranking, relevance, k),
            ndcg_at_k(ranking, relevance, k),
        )

    @FEW
    @given(case=cases(), response=responses, k=st.integers(min_value=1, max_value=12))
    def test_equals_the_public_metric_functions(
        self, case: Case, response: TargetResponse, k: int
    ) -> None:
        """score_case computes each input once (deduplicated ranking, resolved citations,
        normalised answer); its values are exactly those of the documented functions."""
        scores = score_case(case, response, k)
        ranked = [r.id for r in response.retrieved]
        retrieved = tuple(ranked)
        if case.unanswerable:
            empty = 0.0 if response.retrieved else 1.0
            assert (empty, empty, empty) == (scores.recall_at_k, scores.mrr, scores.ndcg_at_k)
        else:
            assert recall_at_k(ranked, case.relevance, k) == scores.recall_at_k
            assert reciprocal_rank(ranked, case.relevance) == scores.mrr
            assert ndcg_at_k(ranked, case.relevance, k) == scores.ndcg_at_k
        if response.answer is None:
            return
        cites = response.citations
        assert is_refusal(response.answer) == scores.refused
        assert citations_valid(cites, retrieved) == scores.citation_valid
        assert scores.citation_precision == citation_precision(
            cites, retrieved, case.relevance, unanswerable=case.unanswerable
        )
        if case.answerable:
            assert citation_recall(cites, retrieved, case.relevance) == scores.citation_recall
        if case.answerable and case.expected_facts:
            assert answer_correct(response.answer, case.expected_facts) == scores.answer_correct
            assert fact_recall(response.answer, case.expected_facts) == scores.fact_recall

"""Hand-computed worked examples and edge cases for the retrieval metrics."""

from __future__ import annotations

from typing import ClassVar

import pytest

from evaluator.scoring import ndcg_at_k, recall_at_k, reciprocal_rank

ARTICLE_RANKING = ["a", "b", "c", "d"]
ARTICLE_RELEVANCE = {"b": 1, "d": 1}


class TestArticleExample:
    """The worked example of docs/metrics.md: ranking [a,b,c,d], relevant {b,d}, K=3."""

    def test_recall(self) -> None:
        """Only b of {b, d} is in the top 3."""
        assert recall_at_k(ARTICLE_RANKING, ARTICLE_RELEVANCE, 3) == 0.5

    def test_reciprocal_rank(self) -> None:
        """The first relevant id, b, is at rank 2."""
        assert reciprocal_rank(ARTICLE_RANKING, ARTICLE_RELEVANCE) == 0.5

    def test_ndcg(self) -> None:
        """DCG = 1/log2(3) = 0.63093; IDCG = 1 + 1/log2(3) = 1.63093."""
        assert pytest.approx(0.38685, abs=1e-5) == ndcg_at_k(ARTICLE_RANKING, ARTICLE_RELEVANCE, 3)


class TestRecallAtK:
    """recall@K counts relevant ids in the top K over all relevant ids."""

    def test_all_found(self) -> None:
        """Every relevant id in the top K gives 1."""
        assert recall_at_k(["b", "d", "a"], ARTICLE_RELEVANCE, 2) == 1.0

    def test_cutoff_excludes_later_hits(self) -> None:
        """A relevant id below rank K does not count."""
        assert recall_at_k(["a", "c", "b"], ARTICLE_RELEVANCE, 2) == 0.0

    def test_grade_zero_is_not_relevant(self) -> None:
        """Ids graded 0 neither count as found nor in the denominator."""
        assert recall_at_k(["b"], {"b": 1, "z": 0}, 5) == 1.0

    def test_graded_relevance_counts_each_id_once(self) -> None:
        """Grades do not weigh recall: 1 of 2 relevant ids is 0.5 whatever the grades."""
        assert recall_at_k(["a"], {"a": 1, "b": 3}, 5) == 0.5


class TestReciprocalRank:
    """Reciprocal rank of the first relevant id over the whole ranking."""

    def test_first_rank(self) -> None:
        """A relevant id at rank 1 gives 1."""
        assert reciprocal_rank(["b", "a"], ARTICLE_RELEVANCE) == 1.0

    def test_no_cutoff(self) -> None:
        """A relevant id far down the ranking still counts."""
        ranking = [f"x{i}" for i in range(9)] + ["d"]
        assert reciprocal_rank(ranking, ARTICLE_RELEVANCE) == 0.1

    def test_none_relevant(self) -> None:
        """A ranking without relevant ids gives 0."""
        assert reciprocal_rank(["a", "c"], ARTICLE_RELEVANCE) == 0.0


class TestNdcgAtK:
    """nDCG@K with linear gain, hand-computed on graded relevance."""

    GRADED: ClassVar[dict[str, int]] = {"a": 1, "b": 3, "c": 2}

    def test_graded_full(self) -> None:
        """(1 + 3/log2 3 + 2/2) / (3 + 2/log2 3 + 1/2) = 3.89279 / 4.76186."""
        assert pytest.approx(0.8174935, abs=1e-6) == ndcg_at_k(["a", "b", "c"], self.GRADED, 3)

    def test_graded_cut(self) -> None:
        """(1 + 3/log2 3) / (3 + 2/log2 3) = 2.89279 / 4.26186: the ideal is cut at K too."""
        assert pytest.approx(0.6787622, abs=1e-6) == ndcg_at_k(["a", "b", "c"], self.GRADED, 2)

    def test_ideal_order(self) -> None:
        """Grades sorted descending give exactly 1."""
        assert ndcg_at_k(["b", "c", "a"], self.GRADED, 3) == 1.0

    def test_relevant_not_retrieved_lowers_ideal_ratio(self) -> None:
        """(2/log2 3) / (2 + 1/log2 3): b is relevant but never retrieved."""
        actual = ndcg_at_k(["x", "a"], {"a": 2, "b": 1}, 2)
        assert pytest.approx(0.4796249, abs=1e-6) == actual

    def test_binary(self) -> None:
        """Binary relevance uses gain 1 for every relevant id."""
        assert ndcg_at_k(["d", "b", "a"], ARTICLE_RELEVANCE, 2) == 1.0


class TestEdgeCases:
    """Empty inputs, short rankings, duplicates and unknown ids."""

    @pytest.mark.parametrize("k", [1, 3, 10])
    def test_empty_ranking(self, k: int) -> None:
        """Nothing retrieved scores 0 on every metric."""
        actual = (
            recall_at_k([], ARTICLE_RELEVANCE, k),
            reciprocal_rank([], ARTICLE_RELEVANCE),
            ndcg_at_k([], ARTICLE_RELEVANCE, k),
        )
        assert actual == (0.0, 0.0, 0.0)

    def test_empty_relevance(self) -> None:
        """With no relevant id there is nothing to find: every metric is 0."""
        actual = (
            recall_at_k(["a"], {}, 3),
            reciprocal_rank(["a"], {}),
            ndcg_at_k(["a"], {}, 3),
        )
        assert actual == (0.0, 0.0, 0.0)

    def test_all_grades_zero(self) -> None:
        """Relevance with only grade-0 ids is treated like empty relevance."""
        actual = (
            recall_at_k(["a"], {"a": 0}, 3),
            reciprocal_rank(["a"], {"a": 0}),
            ndcg_at_k(["a"], {"a": 0}, 3),
        )
        assert actual == (0.0, 0.0, 0.0)

    def test_k_beyond_ranking(self) -> None:
        """A K larger than the ranking uses the ranking whole."""
        assert (
            recall_at_k(["b", "d"], ARTICLE_RELEVANCE, 100),
            ndcg_at_k(["b", "d"], ARTICLE_RELEVANCE, 100),
        ) == (1.0, 1.0)

    def test_duplicates_cannot_exceed_one(self) -> None:
        """A relevant id repeated cannot push recall or nDCG over 1."""
        ranking = ["b", "b", "b"]
        assert (
            recall_at_k(ranking, ARTICLE_RELEVANCE, 3),
            reciprocal_rank(ranking, ARTICLE_RELEVANCE),
        ) == (0.5, 1.0)
        assert ndcg_at_k(ranking, {"b": 1}, 3) == 1.0

    def test_duplicates_do_not_take_ranks(self) -> None:
        """First occurrence kept: [a, a, b] ranks b second, not third."""
        assert reciprocal_rank(["a", "a", "b"], ARTICLE_RELEVANCE) == 0.5
        assert recall_at_k(["a", "a", "b"], ARTICLE_RELEVANCE, 2) == 0.5

    def test_unknown_ids(self) -> None:
        """Ids absent from relevance score nothing and cause no error."""
        assert (
            recall_at_k(["zz", "yy"], ARTICLE_RELEVANCE, 2),
            ndcg_at_k(["zz", "yy"], ARTICLE_RELEVANCE, 2),
        ) == (0.0, 0.0)

    @pytest.mark.parametrize("k", [0, -1])
    def test_k_below_one_raises(self, k: int) -> None:
        """K must be at least 1; a ValueError says so."""
        with pytest.raises(ValueError, match="k must be"):
            recall_at_k(["a"], ARTICLE_RELEVANCE, k)
        with pytest.raises(ValueError, match="k must be"):
            ndcg_at_k(["a"], ARTICLE_RELEVANCE, k)

"""Independent cross-check of the retrieval metrics against trec_eval (pytrec_eval)."""

from __future__ import annotations

import random

import pytest
import pytrec_eval

from evaluator.scoring import ndcg_at_k, recall_at_k, reciprocal_rank

CUTOFFS = (1, 3, 5, 10)
POOL = [f"d{i:02d}" for i in range(30)]


def _random_query(rng: random.Random) -> tuple[list[str], dict[str, int]]:
    """A ranking of distinct ids and graded qrels with at least one relevant id."""
    ranking = rng.sample(POOL, rng.randint(1, 15))
    judged = rng.sample(POOL, rng.randint(1, 12))
    qrels = {doc_id: rng.choice((0, 1, 1, 2, 3)) for doc_id in judged}
    qrels[judged[0]] = max(1, qrels[judged[0]])
    return ranking, qrels


def _trec_eval(ranking: list[str], qrels: dict[str, int]) -> dict[str, float]:
    measures = {"recip_rank"} | {f"{m}.{k}" for m in ("recall", "ndcg_cut") for k in CUTOFFS}
    evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, measures)
    # strictly decreasing scores, so trec_eval's score-then-docid ordering is our order
    run = {"q": {doc_id: float(len(ranking) - i) for i, doc_id in enumerate(ranking)}}
    result: dict[str, float] = evaluator.evaluate(run)["q"]
    return result


class TestAgainstTrecEval:
    """Our metrics equal trec_eval's on random graded rankings."""

    @pytest.mark.parametrize("seed", range(300))
    def test_random_query(self, seed: int) -> None:
        """recall_K, ndcg_cut_K and recip_rank agree to 1e-9 for K in 1, 3, 5, 10."""
        ranking, qrels = _random_query(random.Random(seed))
        trec = _trec_eval(ranking, qrels)
        ours = {"recip_rank": reciprocal_rank(ranking, qrels)}
        for k in CUTOFFS:
            ours[f"recall_{k}"] = recall_at_k(ranking, qrels, k)
            ours[f"ndcg_cut_{k}"] = ndcg_at_k(ranking, qrels, k)
        assert pytest.approx(trec, abs=1e-9) == ours

"""Retrieval metrics over a ranked list of ids and graded relevance (trec_eval semantics).

Every function keeps the first occurrence of each id, so a ranking that repeats an id can
never score above 1, and treats an id as relevant when its grade is >= 1. With no relevant
id at all (empty or all-zero ``relevance``) every metric is 0.0, as docs/metrics.md defines it:
there is nothing to find. Unanswerable cases are scored by :func:`evaluator.scoring.score_case`,
not here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "Retrieval",
    "ndcg_at_k",
    "ndcg_of_unique",
    "rank_of_unique",
    "recall_at_k",
    "recall_of_unique",
    "reciprocal_rank",
    "relevant_ids",
    "retrieval_of_unique",
]


def _dedupe(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def relevant_ids(relevance: Mapping[str, int]) -> set[str]:
    """The ids graded >= 1."""
    return {doc_id for doc_id, grade in relevance.items() if grade >= 1}


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Share of the relevant ids that appear in the top ``k`` of the ranking.

    ``recall@K = |{relevant ids in top K}| / |{relevant ids}|``, as trec_eval's ``recall_K``.

    Args:
        ranked: ids best first; later duplicates are ignored.
        relevance: id -> grade; ids with grade >= 1 are relevant.
        k: cutoff, >= 1; a ranking shorter than ``k`` is used whole.

    Returns:
        A value in [0, 1]; 0.0 when there is no relevant id.

    Raises:
        ValueError: ``k`` is below 1.
    """
    _check_k(k)
    return recall_of_unique(_dedupe(ranked), relevant_ids(relevance), k)


def recall_of_unique(unique: Sequence[str], relevant: set[str], k: int) -> float:
    """:func:`recall_at_k` of a ranking already without duplicates, ``relevant`` the ids
    graded >= 1 (:func:`evaluator.scoring.score_case` computes both once per case)."""
    if not relevant:
        return 0.0
    # ``unique`` holds each id once: the relevant ones among its first k, counted in C
    return len(relevant.intersection(unique[:k])) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], relevance: Mapping[str, int]) -> float:
    """Reciprocal of the rank of the first relevant id, over the whole ranking (no cutoff).

    ``RR = 1 / rank(first relevant id)``, ranks 1-based; as trec_eval's ``recip_rank``.

    Args:
        ranked: ids best first; later duplicates are ignored.
        relevance: id -> grade; ids with grade >= 1 are relevant.

    Returns:
        A value in (0, 1], or 0.0 when no relevant id is ranked.
    """
    return rank_of_unique(_dedupe(ranked), relevance)


def rank_of_unique(unique: Sequence[str], relevance: Mapping[str, int]) -> float:
    """:func:`reciprocal_rank` of a ranking already without duplicates."""
    for rank, doc_id in enumerate(unique, start=1):
        if relevance.get(doc_id, 0) >= 1:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` with linear gain, as trec_eval's ndcg_cut.

    ``DCG@K = sum over ranks r = 1..K of grade(r) / log2(r + 1)``;
    ``nDCG@K = DCG@K / IDCG@K``, where IDCG@K is the DCG@K of the grades sorted descending.
    Ids absent from ``relevance`` or graded below 1 gain 0.

    Args:
        ranked: ids best first; later duplicates are ignored.
        relevance: id -> grade (1 for binary relevance).
        k: cutoff, >= 1.

    Returns:
        A value in [0, 1]; 0.0 when there is no relevant id.

    Raises:
        ValueError: ``k`` is below 1.
    """
    _check_k(k)
    return ndcg_of_unique(_dedupe(ranked), relevance, k)


def ndcg_of_unique(unique: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """:func:`ndcg_at_k` of a ranking already without duplicates."""
    grades = [g for g in relevance.values() if g >= 1]
    if not grades:
        return 0.0
    if max(grades) == 1 and len(grades) < _TABLED:
        # binary relevance (every grade 1): the ideal DCG of n relevant ids, from the table
        ideal = _IDEAL_BINARY[min(len(grades), k)]
    else:
        ideal = _dcg(sorted(grades, reverse=True)[:k])
    if ideal <= 0.0:
        return 0.0
    # the gains of _dcg, added in rank order: the same float as _dcg of the gain list
    dcg: float = 0
    for rank, doc_id in enumerate(unique[:k], start=1):
        g = relevance.get(doc_id, 0)
        if g >= 1:
            dcg += g / (_LOG2[rank] if rank < _TABLED else math.log2(rank + 1))
    # DCG <= IDCG in exact arithmetic; the clamp only guards against rounding.
    return min(1.0, dcg / ideal)


class Retrieval(NamedTuple):
    """The retrieval metrics of one ranking, and how many ids are relevant."""

    recall: float
    reciprocal_rank: float
    ndcg: float
    relevant: int


def retrieval_of_unique(unique: Sequence[str], relevance: Mapping[str, int], k: int) -> Retrieval:
    """:func:`recall_of_unique`, :func:`rank_of_unique` and :func:`ndcg_of_unique` of one
    ranking in one pass over it (what :func:`evaluator.scoring.score_case` needs per case),
    with the number of relevant ids: the same values, each from the same float operations in
    the same order as those functions (``tests/scoring/test_fast_paths.py``)."""
    grades = [g for g in relevance.values() if g >= 1]
    relevant = len(grades)
    if not relevant:
        # nothing to find: every metric 0.0 (no id is relevant, so no rank either)
        return Retrieval(0.0, 0.0, 0.0, 0)
    if max(grades) == 1 and relevant < _TABLED:
        ideal = _IDEAL_BINARY[min(relevant, k)]
    else:
        ideal = _dcg(sorted(grades, reverse=True)[:k])
    hits = 0
    rr = 0.0
    dcg: float = 0
    for rank, doc_id in enumerate(unique, start=1):
        if rank > k and rr:
            break  # past the cutoff only the first relevant rank was still wanted
        g = relevance.get(doc_id, 0)
        if g >= 1:
            if not rr:
                rr = 1.0 / rank
            if rank <= k:
                hits += 1
                dcg += g / (_LOG2[rank] if rank < _TABLED else math.log2(rank + 1))
    # relevance's ids are distinct and so are the ranking's: the hits are the relevant ids
    # in the top k, the intersection recall_of_unique counts
    ndcg = min(1.0, dcg / ideal) if ideal > 0.0 else 0.0
    return Retrieval(hits / relevant, rr, ndcg, relevant)


#: ranks (and relevant-id counts) with a precomputed value
_TABLED = 64
#: log2(rank + 1) of the first ranks: the same values math.log2 gives, computed once
_LOG2 = tuple(math.log2(rank + 1) for rank in range(_TABLED))


def _dcg(gains: Sequence[int]) -> float:
    # the terms added in rank order from 0, as sum() over them would: the same float
    total: float = 0
    for rank, g in enumerate(gains, start=1):
        if g:
            total += g / (_LOG2[rank] if rank < _TABLED else math.log2(rank + 1))
    return total


#: the ideal DCG of n ids graded 1 (n < _TABLED): computed by _dcg itself, so the same floats
_IDEAL_BINARY = tuple(_dcg([1] * n) for n in range(_TABLED))

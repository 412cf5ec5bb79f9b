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
    "check_k",
    "ndcg_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "relevant_ids",
    "retrieval_of_unique",
]


def _dedupe(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def check_k(k: int) -> None:
    """Raise ValueError unless ``k`` is an integer >= 1 (a bool is not one)."""
    if type(k) is int and k >= 1:  # the usual K, once per scored case
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def relevant_ids(relevance: Mapping[str, int]) -> set[str]:
    """The ids graded >= 1."""
    return {doc_id for doc_id, grade in relevance.items() if grade >= 1}


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Share of the relevant ids that appear in the top ``k`` of the ranking.

    ``recall@K = |{relevant ids in top K}| / |{relevant ids}|``, as trec_eval's ``recall_K``.
    A view of :func:`retrieval_of_unique`.

    Args:
        ranked: ids best first; later duplicates are ignored.
        relevance: id -> grade; ids with grade >= 1 are relevant.
        k: cutoff, >= 1; a ranking shorter than ``k`` is used whole.

    Returns:
        A value in [0, 1]; 0.0 when there is no relevant id.

    Raises:
        ValueError: ``k`` is below 1.
    """
    check_k(k)
    return retrieval_of_unique(_dedupe(ranked), relevance, k).recall


def reciprocal_rank(ranked: Sequence[str], relevance: Mapping[str, int]) -> float:
    """Reciprocal of the rank of the first relevant id, over the whole ranking (no cutoff).

    ``RR = 1 / rank(first relevant id)``, ranks 1-based; as trec_eval's ``recip_rank``.
    A view of :func:`retrieval_of_unique` (whose reciprocal rank ignores its cutoff).

    Args:
        ranked: ids best first; later duplicates are ignored.
        relevance: id -> grade; ids with grade >= 1 are relevant.

    Returns:
        A value in (0, 1], or 0.0 when no relevant id is ranked.
    """
    return retrieval_of_unique(_dedupe(ranked), relevance, 1).reciprocal_rank


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` with linear gain, as trec_eval's ndcg_cut.

    ``DCG@K = sum over ranks r = 1..K of grade(r) / log2(r + 1)``;
    ``nDCG@K = DCG@K / IDCG@K``, where IDCG@K is the DCG@K of the grades sorted descending.
    Ids absent from ``relevance`` or graded below 1 gain 0. A view of
    :func:`retrieval_of_unique`.

    Args:
        ranked: ids best first; later duplicates are ignored.
        relevance: id -> grade (1 for binary relevance).
        k: cutoff, >= 1.

    Returns:
        A value in [0, 1]; 0.0 when there is no relevant id.

    Raises:
        ValueError: ``k`` is below 1.
    """
    check_k(k)
    return retrieval_of_unique(_dedupe(ranked), relevance, k).ndcg


class Retrieval(NamedTuple):
    """The retrieval metrics of one ranking, and how many ids are relevant."""

    recall: float
    reciprocal_rank: float
    ndcg: float
    relevant: int


def retrieval_of_unique(unique: Sequence[str], relevance: Mapping[str, int], k: int) -> Retrieval:
    """The retrieval metrics of a ranking without duplicates, in one pass over it: the one
    implementation, of which :func:`recall_at_k`, :func:`reciprocal_rank` and
    :func:`ndcg_at_k` are views (their docstrings give the formulas), and what
    :func:`evaluator.scoring.score_case` calls once per case.

    Args:
        unique: ids best first, each once (``TargetResponse.ranked_ids``).
        relevance: id -> grade; ids with grade >= 1 are relevant.
        k: cutoff, >= 1 (not checked here: the callers check it once). The reciprocal rank
            is over the whole ranking whatever ``k``.

    Returns:
        Recall@K, reciprocal rank, nDCG@K, and the number of relevant ids.
    """
    grades = [g for g in relevance.values() if g >= 1]
    relevant = len(grades)
    if not relevant:
        # nothing to find: every metric 0.0 (no id is relevant, so no rank either)
        return Retrieval(0.0, 0.0, 0.0, 0)
    ideal = _ideal_dcg(grades, k)
    hits = 0
    rr = 0.0
    dcg: float = 0
    for rank, doc_id in enumerate(unique[:k], start=1):
        g = relevance.get(doc_id, 0)
        if g >= 1:
            hits += 1
            # the gains of _dcg, added in rank order: the same float as _dcg of them
            dcg += _gain(g, rank)
            if not rr:
                rr = 1.0 / rank
    if not rr:
        rr = _reciprocal_rank_after(unique, relevance, k)
    # relevance's ids are distinct and so are the ranking's: the hits are the relevant ids
    # in the top k. DCG <= IDCG in exact arithmetic; the clamp only guards against rounding.
    ndcg = min(1.0, dcg / ideal) if ideal > 0.0 else 0.0
    return Retrieval(hits / relevant, rr, ndcg, relevant)


def _reciprocal_rank_after(unique: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """1 / the rank of the first relevant id past rank ``k``, 0.0 when there is none (the
    reciprocal rank has no cutoff)."""
    for rank in range(k + 1, len(unique) + 1):
        if relevance.get(unique[rank - 1], 0) >= 1:
            return 1.0 / rank
    return 0.0


#: ranks (and relevant-id counts) with a precomputed value
_TABLED = 64
#: log2(rank + 1) of the first ranks: the same values math.log2 gives, computed once
_LOG2 = tuple(math.log2(rank + 1) for rank in range(_TABLED))


def _gain(grade: int, rank: int) -> float:
    """What an id of ``grade`` at ``rank`` adds to the DCG: ``grade / log2(rank + 1)``."""
    return grade / (_LOG2[rank] if rank < _TABLED else math.log2(rank + 1))


def _dcg(gains: Sequence[int]) -> float:
    """DCG of grades in rank order: the terms added from 0, as sum() over them would."""
    total: float = 0
    for rank, g in enumerate(gains, start=1):
        if g:
            total += _gain(g, rank)
    return total


def _ideal_dcg(grades: list[int], k: int) -> float:
    """IDCG@K of the relevant ids' grades (each >= 1, at least one): the DCG of the best
    ``k`` grades, best first; for binary relevance read from the table."""
    if max(grades) == 1 and len(grades) < _TABLED:
        return _IDEAL_BINARY[min(len(grades), k)]
    return _dcg(sorted(grades, reverse=True)[:k])


#: the ideal DCG of n ids graded 1 (n < _TABLED): computed by _dcg itself, so the same floats
_IDEAL_BINARY = tuple(_dcg([1] * n) for n in range(_TABLED))

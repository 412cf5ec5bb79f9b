"""Rerank: reorder BM25's candidates by how completely each one covers the question.

BM25 rewards frequent matches of any query term; a help-centre answer needs the passage
that contains *all* the question's rare terms, ideally in one sentence, and states a fact of
the kind asked for (a duration for "how long", an amount for "how much"). Each candidate gets

    score = 0.30 * coverage(chunk) + 0.30 * max coverage(sentence)
          + 0.20 * bm25 / best bm25 + 0.10 * coverage(title) + 0.10 * states answer type

where ``coverage(x)`` is the IDF-weighted share of the question's distinct terms found in x.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from evaluator.reference.answer_type import states_type
from evaluator.reference.retriever import Candidate, KeywordIndex

__all__ = ["coverage", "rerank"]


def coverage(
    query_terms: Collection[str] | Mapping[str, float],
    terms: Collection[str],
    index: KeywordIndex,
) -> float:
    """IDF-weighted share of ``query_terms`` present in ``terms``, in [0, 1]; a mapping
    gives each query term a weight of its own too (a follow-up's context terms count less:
    :mod:`evaluator.reference.context`)."""
    if isinstance(query_terms, Mapping):
        weighed = sum(index.idf(t) * w for t, w in query_terms.items())
        if weighed <= 0.0:
            return 0.0
        found = sum(index.idf(t) * w for t, w in query_terms.items() if t in terms)
        return found / weighed
    total = sum(index.idf(t) for t in query_terms)
    if total <= 0.0:
        return 0.0
    return sum(index.idf(t) for t in query_terms if t in terms) / total


def rerank(
    query_tokens: Collection[str] | Mapping[str, float],
    candidates: Sequence[Candidate],
    index: KeywordIndex,
    answer_types: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """Rescore and reorder ``candidates`` (best first); ties keep BM25 order.

    ``query_tokens`` are the question's terms, or each term's weight (a follow-up read
    with its context); ``answer_types`` are the kinds of fact the question asks for
    (:func:`~evaluator.reference.answer_type.expected_types`).
    """
    if not candidates:
        return []
    query = query_tokens if isinstance(query_tokens, Mapping) else frozenset(query_tokens)
    best_bm25 = max(c.score for c in candidates) or 1.0
    rescored: list[Candidate] = []
    for candidate in candidates:
        i = candidate.index
        sentence_cover = max(
            (coverage(query, terms, index) for terms in index.sentence_token_sets[i]),
            default=0.0,
        )
        score = (
            0.30 * coverage(query, index.token_sets[i], index)
            + 0.30 * sentence_cover
            + 0.20 * candidate.score / best_bm25
            + 0.10 * coverage(query, index.title_token_sets[i], index)
            + 0.10 * states_type(answer_types, index.chunks[i].text)
        )
        rescored.append(Candidate(candidate.index, score))
    return sorted(rescored, key=lambda c: c.score, reverse=True)

"""The documented formulas, written out here, equal the implementation where trec_eval
(tests/scoring/test_retrieval_trec_eval.py) cannot check it, bit for bit.

nDCG of binary relevance reads its ideal DCG from a table of 64 entries and ranks below 64
read log2 from another (trec_eval's comparison stays within 15 ids), rankings may repeat an
id (trec_eval's runs cannot), and citation precision of citations that all resolve counts
distinct ids (trec_eval has no citations): each is compared with the formula as
docs/metrics.md writes it, on the same floats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.models import Citation
from evaluator.scoring import citation_precision, ndcg_at_k
from evaluator.scoring.citation import resolve_citation

IDS = [f"d{i}" for i in range(80)]
ids = st.sampled_from(IDS[:12]) | st.sampled_from(IDS)
MANY = settings(max_examples=600, database=None)


def _dcg(gains: Sequence[float]) -> float:
    """DCG@K = sum over ranks r of grade(r) / log2(r + 1), added in rank order."""
    total: float = 0
    for rank, g in enumerate(gains, start=1):
        if g:
            total += g / math.log2(rank + 1)
    return total


def _ndcg(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    unique = list(dict.fromkeys(ranked))
    ideal = _dcg(sorted((g for g in relevance.values() if g >= 1), reverse=True)[:k])
    if ideal <= 0.0:
        return 0.0
    gains = [g if (g := relevance.get(i, 0)) >= 1 else 0 for i in unique[:k]]
    return min(1.0, _dcg(gains) / ideal)


@MANY
@given(
    ranked=st.lists(ids, max_size=90),
    relevant=st.lists(ids, max_size=70, unique=True),
    grades=st.sampled_from(["binary", "graded", "with zeros"]),
    k=st.integers(min_value=1, max_value=90),
    data=st.data(),
)
def test_ndcg_equals_its_formula(
    ranked: list[str], relevant: list[str], grades: str, k: int, data: st.DataObject
) -> None:
    """Binary (the table), graded and zero-graded relevance, rankings and counts past the
    table's 64 entries: the very same float as the formula."""
    relevance: dict[str, int] = {}
    for doc_id in relevant:
        if grades == "binary":
            relevance[doc_id] = 1
        else:
            low = 0 if grades == "with zeros" else 1
            relevance[doc_id] = data.draw(st.integers(min_value=low, max_value=3))
    got, want = ndcg_at_k(ranked, relevance, k), _ndcg(ranked, relevance, k)
    assert got.hex() == want.hex()


def _precision(
    citations: Sequence[Citation],
    retrieved: Sequence[str],
    relevance: Mapping[str, int],
    unanswerable: bool,
) -> float:
    """|supported distinct citations| / |distinct citations|; no citation: 1.0 for an
    unanswerable case, else 0.0."""
    distinct: dict[object, str | None] = {}
    for c in citations:
        doc_id = resolve_citation(c, retrieved)
        distinct[("doc", doc_id) if doc_id is not None else (type(c).__name__, repr(c))] = doc_id
    if not distinct:
        return 1.0 if unanswerable else 0.0
    supported = sum(1 for d in distinct.values() if d is not None and relevance.get(d, 0) >= 1)
    return supported / len(distinct)


@MANY
@given(
    retrieved=st.lists(ids, max_size=8),
    citations=st.lists(st.integers(min_value=-1, max_value=9) | ids, max_size=8),
    relevance=st.dictionaries(ids, st.integers(min_value=0, max_value=2), max_size=6),
    unanswerable=st.booleans(),
)
def test_citation_precision_equals_its_formula(
    retrieved: list[str],
    citations: list[Citation],
    relevance: dict[str, int],
    unanswerable: bool,
) -> None:
    """Positions in and out of range and ids, repeated or not: the formula's share."""
    got = citation_precision(citations, retrieved, relevance, unanswerable=unanswerable)
    assert got == _precision(citations, retrieved, relevance, unanswerable)

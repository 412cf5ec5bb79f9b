"""The scoring shortcuts equal the documented definitions, bit for bit.

nDCG of binary relevance reads its ideal DCG from a table, and citation precision of
citations that all resolve counts distinct ids: each is compared here with the formula as
docs/metrics.md writes it, on the same floats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.models import Case, CaseScores, Citation, Retrieved, TargetResponse
from evaluator.scoring import (
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
from evaluator.scoring.answer import contains_fact, count_facts, normalise
from evaluator.scoring.case import score_ranked
from evaluator.scoring.citation import resolve_citation
from evaluator.scoring.retrieval import retrieval_of_unique

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


def _case_and_response(
    retrieved: list[str],
    citations: list[Citation],
    relevance: dict[str, int],
    unanswerable: bool,
    answer: str | None,
    facts: tuple[tuple[str, ...], ...],
) -> tuple[Case, TargetResponse]:
    """A case (no relevance or facts when unanswerable) and a response from drawn parts."""
    case = Case(
        id="c",
        question="q",
        relevance={} if unanswerable else relevance,
        unanswerable=unanswerable,
        expected_facts=() if unanswerable else facts,
    )
    response = TargetResponse(
        retrieved=tuple(map(Retrieved, retrieved)), answer=answer, citations=tuple(citations)
    )
    return case, response


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
    got = citation_precision(citations, retrieved, relevance, unanswerable=unanswerable)
    assert got == _precision(citations, retrieved, relevance, unanswerable)


@MANY
@given(
    retrieved=st.lists(ids, max_size=8),
    citations=st.lists(st.integers(min_value=-1, max_value=9) | ids, max_size=6),
    relevance=st.dictionaries(ids, st.integers(min_value=1, max_value=2), min_size=1),
    unanswerable=st.booleans(),
    answer=st.none() | st.sampled_from(["七天", "I don't know", ""]),
    k=st.integers(min_value=1, max_value=10),
)
def test_score_ranked_is_score_case(
    retrieved: list[str],
    citations: list[Citation],
    relevance: dict[str, int],
    unanswerable: bool,
    answer: str | None,
    k: int,
) -> None:
    """What the runner calls (the ranking computed once, shared with the record) gives
    exactly score_case's scores, with and without repeated ids."""
    case, response = _case_and_response(
        retrieved, citations, relevance, unanswerable, answer, (("七天",),)
    )
    assert score_ranked(case, response, response.ranked_ids, k) == score_case(case, response, k)


@MANY
@given(
    ranked=st.lists(ids, max_size=90, unique=True),
    relevance=st.dictionaries(ids, st.integers(min_value=0, max_value=3), max_size=70)
    | st.dictionaries(ids, st.just(1), max_size=70),
    k=st.integers(min_value=1, max_value=90),
)
def test_retrieval_in_one_pass_equals_the_three_functions(
    ranked: list[str], relevance: dict[str, int], k: int
) -> None:
    got = retrieval_of_unique(ranked, relevance, k)
    want = (
        recall_at_k(ranked, relevance, k),
        reciprocal_rank(ranked, relevance),
        ndcg_at_k(ranked, relevance, k),
    )
    assert [v.hex() for v in got[:3]] == [v.hex() for v in want]
    assert got.relevant == sum(1 for g in relevance.values() if g >= 1)


@MANY
@given(
    retrieved=st.lists(ids, max_size=12),
    citations=st.lists(st.integers(min_value=-1, max_value=13) | ids | st.booleans(), max_size=6),
    relevance=st.dictionaries(ids, st.integers(min_value=0, max_value=3), max_size=8),
    unanswerable=st.booleans(),
    answer=st.none() | st.sampled_from(["七天", "I don't know", "", "7 天，原路退回"]),
    k=st.integers(min_value=1, max_value=14),
)
def test_score_case_equals_the_public_functions(
    retrieved: list[str],
    citations: list[Citation],
    relevance: dict[str, int],
    unanswerable: bool,
    answer: str | None,
    k: int,
) -> None:
    """Every field, zero grades and repeated ids included, from the documented functions."""
    case, response = _case_and_response(
        retrieved, citations, relevance, unanswerable, answer, (("七天", "7天"), ("原路退回",))
    )
    got = score_case(case, response, k)
    rel = case.relevance
    if unanswerable:
        empty = 0.0 if retrieved else 1.0
        retrieval = (empty, empty, empty)
    else:
        retrieval = (
            recall_at_k(retrieved, rel, k),
            reciprocal_rank(retrieved, rel),
            ndcg_at_k(retrieved, rel, k),
        )
    assert (got.recall_at_k, got.mrr, got.ndcg_at_k) == retrieval
    if answer is None:
        recall, rr, ndcg = retrieval
        assert got == CaseScores(recall_at_k=recall, mrr=rr, ndcg_at_k=ndcg)
        return
    assert got.citation_precision == citation_precision(
        citations, retrieved, rel, unanswerable=unanswerable
    )
    assert got.citation_recall == (
        None if unanswerable else citation_recall(citations, retrieved, rel)
    )
    assert got.citation_valid == citations_valid(citations, retrieved)
    assert got.refused == is_refusal(answer)
    if not unanswerable:
        assert got.answer_correct == answer_correct(answer, case.expected_facts)
        assert got.fact_recall == fact_recall(answer, case.expected_facts)


@MANY
@given(
    answer=st.text(max_size=20) | st.sampled_from(["7 天，原路退回", "七天内", "Seven Days."]),
    facts=st.lists(
        st.sampled_from(["七天", "7天", "原路退回", "。", " ", "", "seven days", "a"])
        | st.lists(st.sampled_from(["七天", "7 天", "。", "", "x"]), max_size=3).map(tuple),
        min_size=1,
        max_size=4,
    ),
)
def test_count_facts_is_contains_fact_of_each(
    answer: str, facts: list[str | tuple[str, ...]]
) -> None:
    """One alternative of each fact (a bare string is one alternative), as documented."""
    normalised = normalise(answer)
    assert count_facts(normalised, facts) == sum(contains_fact(normalised, f) for f in facts)

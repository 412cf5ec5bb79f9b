"""Score one golden-set case against one target response: every metric of CaseScores."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from evaluator.models import Case, CaseScores, TargetResponse
from evaluator.scoring.answer import (
    DEFAULT_REFUSAL_PHRASES,
    contains_any,
    count_facts,
    needles,
    normalise,
)
from evaluator.scoring.citation import precision_of_resolved, recall_of_resolved, resolve_all
from evaluator.scoring.retrieval import check_k, relevant_ids, retrieval_of_unique

__all__ = ["ScoringSettings", "score_case"]


@dataclass(frozen=True)
class ScoringSettings:
    """Knobs of per-case scoring that a configuration may change."""

    #: an answer containing any of these (normalised) is a refusal
    refusal_phrases: tuple[str, ...] = DEFAULT_REFUSAL_PHRASES
    #: the target's citations are mapped; False: citation metrics are n/a (None), as a
    #: missing answer makes the answer metrics n/a, instead of 0 for citing nothing
    citations: bool = True
    #: the target's ids are mapped; False: retrieval metrics are n/a (None), not the 0 (or
    #: an unanswerable case's 1) of an empty ranking that says nothing about the service
    retrieval: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.refusal_phrases, str):
            # a bare string would be split into one-character phrases matching almost anything
            raise TypeError("refusal_phrases must be a tuple of phrases, not one string")

    @cached_property
    def refusal_needles(self) -> tuple[str, ...]:
        """The refusal phrases normalised, empty ones left out (once, not per case)."""
        return needles(self.refusal_phrases)


def score_case(
    case: Case,
    response: TargetResponse,
    k: int,
    settings: ScoringSettings = ScoringSettings(),
    ranked: tuple[str, ...] | None = None,
) -> CaseScores:
    """Score one response: retrieval, citations and answer, each value in [0, 1] or None.

    Retrieval, answerable case: recall@K, reciprocal rank and nDCG@K over ``case.relevance``.
    Retrieval, unanswerable case: each is 1.0 when nothing was retrieved, else 0.0.
    ``response.answer is None`` (retrieval-only target): every citation and answer field
    is None. Otherwise ``refused = is_refusal(answer)``, citation precision and validity
    are scored, and: unanswerable → ``answer_correct = refused``; answerable with
    expected facts → ``answer_correct`` = all facts found, ``fact_recall`` = found / facts,
    ``citation_recall`` scored; answerable without facts → answer fields None except
    ``refused`` (a false refusal), citation metrics scored.

    Each step calls the documented metric's own implementation with its inputs computed
    once per case (the ranking without duplicates, the resolved citations, the normalised
    answer), so the scores are those functions' by construction.

    Args:
        case: the golden-set case.
        response: what the target returned for ``case.question``.
        k: retrieval cutoff, >= 1.
        settings: scoring knobs (refusal phrases).
        ranked: ``response.ranked_ids`` when the caller has them already (the runner keeps
            them for the record too); computed here otherwise.

    Returns:
        The case's scores.

    Raises:
        ValueError: ``k`` is below 1.
    """
    check_k(k)
    if ranked is None:
        ranked = response.ranked_ids
    recall, rr, ndcg = (
        _retrieval_scores(case, ranked, k, settings)
        if response.retrieval_reported
        else (None, None, None)
    )
    if response.answer is None:
        return CaseScores(recall_at_k=recall, mrr=rr, ndcg_at_k=ndcg)
    precision, cited_recall, valid = _citation_scores(case, response, ranked, settings)
    normalised = normalise(response.answer)
    refused = contains_any(normalised, settings.refusal_needles)
    correct, facts = _answer_scores(case, normalised, refused)
    return CaseScores(
        recall_at_k=recall,
        mrr=rr,
        ndcg_at_k=ndcg,
        citation_precision=precision,
        citation_recall=cited_recall,
        citation_valid=valid,
        answer_correct=correct,
        fact_recall=facts,
        refused=refused,
    )


_Retrieved = tuple[float | None, float | None, float | None]


def _retrieval_scores(
    case: Case, ranked: tuple[str, ...], k: int, settings: ScoringSettings
) -> _Retrieved:
    """(recall@K, reciprocal rank, nDCG@K): None when the target's ids are not mapped; for an
    unanswerable case 1.0 each when nothing was retrieved, else 0.0."""
    if not settings.retrieval:
        return None, None, None
    if case.unanswerable:
        empty = 1.0 if not ranked else 0.0
        return empty, empty, empty
    recall, rr, ndcg, _ = retrieval_of_unique(ranked, case.relevance, k)
    return recall, rr, ndcg


def _citation_scores(
    case: Case, response: TargetResponse, ranked: tuple[str, ...], settings: ScoringSettings
) -> tuple[float | None, float | None, bool | None]:
    """(citation precision, citation recall, citations valid): None each when the target's
    citations are not mapped; recall None for an unanswerable case."""
    if not settings.citations:
        return None, None, None
    citations = response.citations
    retrieved = response.retrieved
    # positions point into the ids as returned, duplicates kept: the ranking itself when it
    # has none
    ids = ranked if len(ranked) == len(retrieved) else [r.id for r in retrieved]
    resolved = resolve_all(citations, ids)
    relevance = case.relevance
    unanswerable = case.unanswerable
    precision = precision_of_resolved(citations, resolved, relevance, unanswerable=unanswerable)
    recall = None if unanswerable else recall_of_resolved(resolved, relevant_ids(relevance))
    return precision, recall, None not in resolved


def _answer_scores(case: Case, normalised: str, refused: bool) -> tuple[bool | None, float | None]:
    """(answer correct, fact recall) of a normalised answer: a refusal is the right answer to
    an unanswerable case; an answerable one needs every expected fact (None without any)."""
    if case.unanswerable:
        return refused, None
    facts = case.expected_facts
    if not facts:
        return None, None
    found = count_facts(normalised, facts)
    return found == len(facts), found / len(facts)

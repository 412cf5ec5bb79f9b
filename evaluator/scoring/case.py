"""Score one golden-set case against one target response: every metric of CaseScores."""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.models import Case, CaseScores, TargetResponse
from evaluator.scoring.answer import (
    DEFAULT_REFUSAL_PHRASES,
    contains_fact,
    count_facts,
    normalise,
)
from evaluator.scoring.citation import citation_precision, citation_recall, citations_valid
from evaluator.scoring.retrieval import _check_k, ndcg_at_k, recall_at_k, reciprocal_rank

__all__ = ["ScoringSettings", "score_case"]


@dataclass(frozen=True)
class ScoringSettings:
    """Knobs of per-case scoring that a configuration may change."""

    #: an answer containing any of these (normalised) is a refusal
    refusal_phrases: tuple[str, ...] = DEFAULT_REFUSAL_PHRASES

    def __post_init__(self) -> None:
        if isinstance(self.refusal_phrases, str):
            # a bare string would be split into one-character phrases matching almost anything
            raise TypeError("refusal_phrases must be a tuple of phrases, not one string")


def score_case(
    case: Case,
    response: TargetResponse,
    k: int,
    settings: ScoringSettings = ScoringSettings(),
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

    Args:
        case: the golden-set case.
        response: what the target returned for ``case.question``.
        k: retrieval cutoff, >= 1.
        settings: scoring knobs (refusal phrases).

    Returns:
        The case's scores.

    Raises:
        ValueError: ``k`` is below 1.
    """
    _check_k(k)
    ranked = response.ranked_ids
    if case.unanswerable:
        empty = 1.0 if not ranked else 0.0
        recall, rr, ndcg = empty, empty, empty
    else:
        recall = recall_at_k(ranked, case.relevance, k)
        rr = reciprocal_rank(ranked, case.relevance)
        ndcg = ndcg_at_k(ranked, case.relevance, k)
    if response.answer is None:
        return CaseScores(recall_at_k=recall, mrr=rr, ndcg_at_k=ndcg)

    answer = response.answer
    retrieved_ids = tuple(r.id for r in response.retrieved)
    citations = response.citations
    # normalised once for the refusal check and every fact: is_refusal, answer_correct and
    # fact_recall would each normalise it again
    normalised = normalise(answer)
    refused = contains_fact(normalised, settings.refusal_phrases)
    correct: bool | None = None
    facts: float | None = None
    if case.unanswerable:
        correct = refused
    elif case.expected_facts:
        found = count_facts(normalised, case.expected_facts)
        correct = found == len(case.expected_facts)
        facts = found / len(case.expected_facts)
    return CaseScores(
        recall_at_k=recall,
        mrr=rr,
        ndcg_at_k=ndcg,
        citation_precision=citation_precision(
            citations, retrieved_ids, case.relevance, unanswerable=case.unanswerable
        ),
        citation_recall=(
            None if case.unanswerable else citation_recall(citations, retrieved_ids, case.relevance)
        ),
        citation_valid=citations_valid(citations, retrieved_ids),
        answer_correct=correct,
        fact_recall=facts,
        refused=refused,
    )

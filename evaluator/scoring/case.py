"""Score one golden-set case against one target response: every metric of CaseScores."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from evaluator.models import Case, CaseScores, TargetResponse
from evaluator.scoring.answer import (
    DEFAULT_REFUSAL_PHRASES,
    count_facts,
    needles,
    normalise,
)
from evaluator.scoring.citation import precision_of_resolved, recall_of_resolved, resolve_all
from evaluator.scoring.retrieval import _check_k, relevant_ids, retrieval_of_unique

__all__ = ["ScoringSettings", "score_case", "score_ranked"]


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
    return score_ranked(case, response, response.ranked_ids, k, settings)


def score_ranked(
    case: Case,
    response: TargetResponse,
    ranked: tuple[str, ...],
    k: int,
    settings: ScoringSettings = ScoringSettings(),
) -> CaseScores:
    """:func:`score_case` with ``ranked`` the response's ``ranked_ids`` already computed (the
    runner keeps them too)."""
    _check_k(k)
    # the metric functions of retrieval, citation and answer, each input computed once:
    # the ranking without duplicates, the resolved citations, the normalised answer (each
    # public function would recompute them), retrieval in one pass over the ranking
    relevance = case.relevance
    unanswerable = case.unanswerable
    relevant = 0
    recall: float | None
    rr: float | None
    ndcg: float | None
    if not settings.retrieval:
        recall, rr, ndcg = None, None, None
    elif unanswerable:
        empty = 1.0 if not ranked else 0.0
        recall, rr, ndcg = empty, empty, empty
    else:
        recall, rr, ndcg, relevant = retrieval_of_unique(ranked, relevance, k)
    if response.answer is None:
        return CaseScores(recall_at_k=recall, mrr=rr, ndcg_at_k=ndcg)

    citations = response.citations
    retrieved = response.retrieved
    # the ids in the order returned, duplicates kept: the ranking itself when it has none
    ids = ranked if len(ranked) == len(retrieved) else [r.id for r in retrieved]
    resolved = resolve_all(citations, ids)
    valid: bool | None = None not in resolved
    precision: float | None
    cited_recall: float | None
    if not settings.citations:
        precision, cited_recall, valid = None, None, None
    elif valid:
        # every citation resolved (the usual answer): the distinct targets are the distinct
        # ids cited, and the supported ones are also the relevant ids cited
        supported = 0
        if resolved:
            cited = set(resolved)
            for doc_id in cited:
                if relevance.get(doc_id, 0) >= 1:  # type: ignore[arg-type]
                    supported += 1
            precision = supported / len(cited)
        else:
            precision = 1.0 if unanswerable else 0.0
        cited_recall = None if unanswerable else (supported / relevant if relevant else 0.0)
    else:
        precision = precision_of_resolved(citations, resolved, relevance, unanswerable=unanswerable)
        cited_recall = (
            None if unanswerable else recall_of_resolved(resolved, relevant_ids(relevance))
        )
    normalised = normalise(response.answer)
    refused = False
    for needle in settings.refusal_needles:
        if needle in normalised:
            refused = True
            break
    correct: bool | None = None
    facts: float | None = None
    if unanswerable:
        correct = refused
    elif case.expected_facts:
        found = count_facts(normalised, case.expected_facts)
        correct = found == len(case.expected_facts)
        facts = found / len(case.expected_facts)
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

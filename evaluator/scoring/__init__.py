"""Pure per-case scoring: retrieval, citation and answer metrics, and score_case."""

from __future__ import annotations

from evaluator.scoring.answer import (
    DEFAULT_REFUSAL_PHRASES,
    answer_correct,
    fact_recall,
    is_refusal,
    normalise,
)
from evaluator.scoring.case import ScoringSettings, score_case
from evaluator.scoring.citation import citation_precision, citation_recall, citations_valid
from evaluator.scoring.retrieval import ndcg_at_k, recall_at_k, reciprocal_rank

__all__ = [
    "DEFAULT_REFUSAL_PHRASES",
    "ScoringSettings",
    "answer_correct",
    "citation_precision",
    "citation_recall",
    "citations_valid",
    "fact_recall",
    "is_refusal",
    "ndcg_at_k",
    "normalise",
    "recall_at_k",
    "reciprocal_rank",
    "score_case",
]

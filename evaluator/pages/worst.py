"""Which cases of a run went worst: one ranking for the terminal, the pages and HTML reports."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from operator import itemgetter

from evaluator.models import CaseRecord, CaseScores

__all__ = ["badness", "worst_cases"]


def badness(case: CaseRecord) -> float:
    """How bad a case went: errors first, then wrong answers and lost retrieval."""
    s = case.outcome  # not the ``scores`` view: this runs for every case of a run
    if not isinstance(s, CaseScores):
        return 10.0
    recall, rr = s.recall_at_k, s.mrr  # None: the target's ids are not mapped
    bad = 0.0 if recall is None or rr is None else (1 - recall) + (1 - rr)
    if s.answer_correct is False:
        bad += 2
    if s.citation_precision is not None:
        bad += 1 - s.citation_precision
    return bad


def worst_cases(cases: Iterable[CaseRecord], n: int) -> list[CaseRecord]:
    """The ``n`` worst cases, worst first; perfect cases are never listed."""
    # each case's badness once, and only the n worst kept (not every case sorted): ties
    # stay in case order, exactly as sorted(..., reverse=True)[:n] leaves them
    bad = ((b, c) for c in cases if (b := badness(c)) > 0)
    return [c for _, c in heapq.nlargest(n, bad, key=itemgetter(0))]

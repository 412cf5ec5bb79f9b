"""Which cases of a run went worst: one ranking for the terminal, the pages and HTML reports."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from operator import itemgetter

from evaluator.models import CaseRecord, CaseScores

__all__ = ["badness", "reasons", "worst_cases"]


def _retrieval(case: CaseRecord, s: CaseScores) -> tuple[float, float] | None:
    """(recall, RR) when they say something about the case: not when the target's ids are
    not mapped, nor for an unanswerable case (it has no relevant id: what it retrieved is no
    fault of a service that refused, and a wrong answer is counted on its own)."""
    recall, rr = s.recall_at_k, s.mrr
    if recall is None or rr is None or case.case.unanswerable:
        return None
    return recall, rr


def badness(case: CaseRecord) -> float:
    """How bad a case went: errors first, then wrong answers and lost retrieval."""
    s = case.outcome  # not the ``scores`` view: this runs for every case of a run
    if not isinstance(s, CaseScores):
        return 10.0
    retrieval = _retrieval(case, s)
    bad = 0.0 if retrieval is None else (1 - retrieval[0]) + (1 - retrieval[1])
    if s.answer_correct is False:
        bad += 2
    if s.citation_precision is not None:
        bad += 1 - s.citation_precision
    return bad


def reasons(case: CaseRecord) -> tuple[str, ...]:
    """Why :func:`badness` counts a case bad, in words: one phrase per term it adds (none for
    a perfect case). A failed call names its error kind only: its message came from outside
    and is shown, redacted, where the case is."""
    s = case.outcome
    if not isinstance(s, CaseScores):
        return (f"the call failed ({s.kind})",)
    out: list[str] = []
    if s.answer_correct is False:
        out.append("answer incorrect")
    retrieval = _retrieval(case, s)
    if retrieval is not None:
        recall, rr = retrieval
        if recall < 1:
            out.append(f"recall {recall:.2f}: a relevant id is missing from the top K")
        if rr <= 0:
            out.append("no relevant id anywhere in the ranking")
        elif rr < 1:
            # RR is 1/rank of the first relevant id: the rank, said as such
            out.append(f"first relevant id at rank {round(1 / rr)} (RR {rr:.2f})")
    if s.citation_precision is not None and s.citation_precision < 1:
        out.append(
            f"citation precision {s.citation_precision:.2f}: a citation points at no relevant id"
        )
    return tuple(out)


def worst_cases(cases: Iterable[CaseRecord], n: int) -> list[CaseRecord]:
    """The ``n`` worst cases, worst first; perfect cases are never listed."""
    # each case's badness once, and only the n worst kept (not every case sorted): ties
    # stay in case order, exactly as sorted(..., reverse=True)[:n] leaves them
    bad = ((b, c) for c in cases if (b := badness(c)) > 0)
    return [c for _, c in heapq.nlargest(n, bad, key=itemgetter(0))]

"""What history keeps of one case in one run: the binary checks and the rank metrics."""

from __future__ import annotations

import msgspec

from evaluator.models import CaseError, CaseRecord
from evaluator.repeat_summary import verdicts

__all__ = ["CaseOutcome", "outcome_of"]


# gc=False, as the report's records (see evaluator.models): strings, numbers and tuples of
# those, no cycle. A daemon with 100 jobs of 1,000 cases holds 30,000 of each; tracked, they
# were most of what each full collection walked (20-28 ms with the event loop stopped).
class CaseOutcome(msgspec.Struct, frozen=True, gc=False):
    """One case in one run.

    ``answer`` is the answer check (None: the case has none, or the target is retrieval-only);
    ``hit`` is "a relevant id in the top K" (None for unanswerable cases, which have no
    relevant id). A failed case has ``error_kind`` set and every check None: an error is not
    a score, so it is neither a pass nor a fail. ``run_outcome`` is the run's (``complete``,
    ``incomplete``): the stability classes and the drift read complete runs only.
    """

    run_id: str
    finished_at: float
    answer: bool | None
    hit: bool | None
    mrr: float | None
    ndcg_at_k: float | None
    error_kind: str | None = None
    citation_precision: float | None = None
    run_outcome: str = "complete"

    @property
    def passed(self) -> bool | None:
        """The case's verdict: its answer check when it has one, else retrieval (``hit``)."""
        return self.answer if self.answer is not None else self.hit


def outcome_of(record: CaseRecord, run_id: str, finished_at: float) -> CaseOutcome:
    """The history row of a report's case."""
    scores = record.outcome
    if isinstance(scores, CaseError):
        return CaseOutcome(run_id, finished_at, None, None, None, None, scores.kind)
    answer, hit = verdicts(record)
    return CaseOutcome(
        run_id,
        finished_at,
        answer,
        hit,
        scores.mrr,
        scores.ndcg_at_k,
        None,
        scores.citation_precision,
    )

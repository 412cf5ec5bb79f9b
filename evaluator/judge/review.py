"""Which cases a reviewer labels, in which order: first those where the deterministic check
and the judge disagree (the judge's most informative cases), then a stratified sample of
the rest (round-robin over check x judge verdict, seeded, so both verdicts of every check
get labels early and a reviewer who stops half-way leaves a balanced set).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from evaluator.judge.checks import check as judged_check
from evaluator.judge.labels import Label, outcome_verdict
from evaluator.judge.record import CheckOutcome, JudgedRun
from evaluator.models import CaseRecord
from evaluator.scoring.conversation import turns_before

__all__ = ["ReviewItem", "deterministic_verdict", "review_queue"]


@dataclass(frozen=True, slots=True)
class ReviewItem:
    record: CaseRecord
    answer_hash: str
    outcome: CheckOutcome
    judge: bool
    deterministic: bool | None
    #: a conversation's turn: the records of the turns before it (the reviewer reads the
    #: question in their light, as the judge did)
    earlier: tuple[CaseRecord, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return self.record.id, self.answer_hash, self.outcome.check

    @property
    def disagree(self) -> bool:
        return self.deterministic is not None and self.deterministic != self.judge


def deterministic_verdict(record: CaseRecord, check: str) -> bool | None:
    """The deterministic scoring's pass/fail on the same question (None: it has none)."""
    scores = record.scores
    return None if scores is None else judged_check(check).deterministic(scores)


def review_queue(
    records: tuple[CaseRecord, ...],
    judged: JudgedRun,
    labelled: Mapping[tuple[str, str, str], Label],
    *,
    seed: int = 0,
) -> list[ReviewItem]:
    """The unlabelled judged checks of a report, disagreements first, then stratified."""
    items = _unlabelled(records, judged, labelled)
    return [i for i in items if i.disagree] + _stratified(
        [i for i in items if not i.disagree], seed
    )


def _unlabelled(
    records: tuple[CaseRecord, ...],
    judged: JudgedRun,
    labelled: Mapping[tuple[str, str, str], Label],
) -> list[ReviewItem]:
    """Every judge verdict (an outcome with a pass or fail) of a case the report holds and
    no label covers, in the judged run's order."""
    by_id = {r.id: r for r in records}
    before = turns_before(records)
    items = []
    for case in judged.cases:
        record = by_id.get(case.case_id)
        if record is None:
            continue
        for outcome in case.outcomes:
            verdict = outcome_verdict(outcome)
            if verdict is None or (case.case_id, case.answer_hash, outcome.check) in labelled:
                continue
            deterministic = deterministic_verdict(record, outcome.check)
            items.append(
                ReviewItem(
                    record,
                    case.answer_hash,
                    outcome,
                    verdict,
                    deterministic,
                    before.get(record.id, ()),
                )
            )
    return items


def _stratified(items: list[ReviewItem], seed: int) -> list[ReviewItem]:
    """Round-robin over the strata (check x judge verdict, sorted), each shuffled with
    ``seed``: both verdicts of every check come early."""
    strata: dict[tuple[str, bool], list[ReviewItem]] = {}
    for item in items:
        strata.setdefault((item.outcome.check, item.judge), []).append(item)
    shuffler = random.Random(seed)
    for stratum in strata.values():
        shuffler.shuffle(stratum)
    out = []
    queues = [strata[k] for k in sorted(strata)]
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop())
    return out

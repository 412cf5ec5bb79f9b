"""Which cases a reviewer labels, in which order: first those where the deterministic check
and the judge disagree (the judge's most informative cases), then a stratified sample of
the rest (round-robin over check x judge verdict, seeded, so both verdicts of every check
get labels early and a reviewer who stops half-way leaves a balanced set).

A second reviewer may instead take an overlap sample (:func:`overlap_queue`): answers a
first reviewer labelled, shown without that label, the judge's verdict or the deterministic
check, so that the two reviewers' agreement measures the check itself (the human ceiling
``evaluator calibrate`` reports beside the judge's agreement).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from evaluator.judge.checks import check as judged_check
from evaluator.judge.labels import Label, outcome_verdict
from evaluator.judge.record import CheckOutcome, JudgedRun
from evaluator.models import CaseRecord
from evaluator.scoring.conversation import turns_before

__all__ = ["ReviewItem", "deterministic_verdict", "overlap_queue", "review_queue"]


@dataclass(frozen=True, slots=True)
class ReviewItem:
    record: CaseRecord
    answer_hash: str
    outcome: CheckOutcome
    #: the judge's verdict (None: it gave none, e.g. its votes split)
    judge: bool | None
    deterministic: bool | None
    #: a conversation's turn: the records of the turns before it (the reviewer reads the
    #: question in their light, as the judge did)
    earlier: tuple[CaseRecord, ...] = ()
    #: an overlap item: shown without the judge's verdict or the deterministic check (the
    #: first reviewer's label is never shown), so the second label is independent
    blind: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return self.record.id, self.answer_hash, self.outcome.check

    @property
    def disagree(self) -> bool:
        return None not in (self.deterministic, self.judge) and self.deterministic != self.judge


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
    return [
        item
        for item in _items(records, judged, blind=False)
        if item.judge is not None and item.key not in labelled
    ]


def overlap_queue(
    records: tuple[CaseRecord, ...],
    judged: JudgedRun,
    reviews: Mapping[tuple[str, str, str], Sequence[Label]],
    reviewer: str,
    *,
    size: int,
    seed: int = 0,
) -> list[ReviewItem]:
    """An overlap sample for a second reviewer: up to ``size`` answers of the report that
    another reviewer labelled and ``reviewer`` has not, stratified over check x the first
    label's verdict (seeded), each shown blind."""
    first: dict[tuple[str, str, str], bool] = {}
    items = []
    for item in _items(records, judged, blind=True):
        labels = reviews.get(item.key, ())
        if labels and all(label.reviewer != reviewer for label in labels):
            first[item.key] = labels[0].verdict
            items.append(item)
    return _stratified(items, seed, lambda i: (i.outcome.check, first[i.key]))[:size]


def _items(
    records: tuple[CaseRecord, ...], judged: JudgedRun, *, blind: bool
) -> Iterator[ReviewItem]:
    """Every check outcome of a case the report holds, in the judged run's order."""
    by_id = {r.id: r for r in records}
    before = turns_before(records)
    for case in judged.cases:
        record = by_id.get(case.case_id)
        if record is None:
            continue
        for outcome in case.outcomes:
            yield ReviewItem(
                record,
                case.answer_hash,
                outcome,
                outcome_verdict(outcome),
                deterministic_verdict(record, outcome.check),
                before.get(record.id, ()),
                blind=blind,
            )


def _by_judge(item: ReviewItem) -> tuple[str, bool]:
    return item.outcome.check, bool(item.judge)


def _stratified(
    items: list[ReviewItem],
    seed: int,
    stratum_of: Callable[[ReviewItem], tuple[str, bool]] = _by_judge,
) -> list[ReviewItem]:
    """Round-robin over the strata (check x a verdict, by default the judge's; sorted), each
    shuffled with ``seed``: both verdicts of every check come early."""
    strata: dict[tuple[str, bool], list[ReviewItem]] = {}
    for item in items:
        strata.setdefault(stratum_of(item), []).append(item)
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

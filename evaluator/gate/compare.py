"""Whether two reports can be compared, which cases they share, and which cases moved.

Two reports are comparable when they ran the same golden set (content hash) at the same
K. A candidate claiming the baseline's golden set (its hash) must hold that golden set's
cases: a baseline case it lacks fails the gate, a case the baseline does not have is
refused (a report cannot add invented cases to the golden set it names). With
``allow_dataset_change`` a different golden set is accepted and only the cases present in
both count. Either way the rules judge summaries derived from the matched cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, count
from operator import itemgetter, ne
from typing import Any

from evaluator.errors import GateError
from evaluator.gate.repeats import summary_over_rounds
from evaluator.metrics import FLOAT_TOLERANCE, METRICS
from evaluator.models import CaseError, CaseRecord
from evaluator.report import RunReport
from evaluator.report.columns import SCORE_FIELDS, CaseColumns
from evaluator.scoring.conversation import turns_before
from evaluator.summary import Summary

__all__ = [
    "Alignment",
    "CaseChange",
    "CaseDiff",
    "align",
    "check_run_comparable",
    "diff_cases",
    "record_moves",
]

#: The per-case scores a case diff lists moves of, with their labels, in report order.
_DIFFED = tuple(
    (spec.case_label, SCORE_FIELDS.index(spec.score))
    for spec in METRICS
    if spec.case_label is not None and spec.score is not None
)
#: where a case's answer flag is in its scores as :meth:`CaseColumns.keys` has them
_ANSWER = SCORE_FIELDS.index("answer_correct")
_CHANGE = itemgetter(2)
#: Severity weights: a new error outranks a flipped answer, which outranks lost retrieval.
_ERROR_WEIGHT = 10.0
_ANSWER_WEIGHT = 3.0


def check_run_comparable(
    baseline: RunReport,
    *,
    k: int,
    dataset: str,
    dataset_hash: str,
    case_ids: Iterable[str],
    allow_dataset_change: bool = False,
) -> None:
    """Raise :class:`GateError` when a run of the candidate (made, or not made yet: a live
    gate fails early) cannot be compared with ``baseline``.

    A different K is never comparable (recall@5 and recall@10 measure different things);
    a different golden set is, with ``allow_dataset_change``.

    Raises:
        GateError: a different K, or a different golden set without ``allow_dataset_change``.
    """
    if baseline.k != k:
        raise GateError(
            f"reports are not comparable: different K (baseline K={baseline.k}, "
            f"candidate K={k}); run the candidate with --k {baseline.k}"
        )
    if baseline.dataset_hash != dataset_hash and not allow_dataset_change:
        shared = len({c.id for c in baseline.cases} & set(case_ids))
        raise GateError(
            "reports are not comparable: different golden sets "
            f"(baseline {baseline.dataset} {baseline.dataset_hash[:12]}, "
            f"candidate {dataset} {dataset_hash[:12]}); "
            f"pass --allow-dataset-change to compare the {shared} shared case(s)"
        )


@dataclass(frozen=True, slots=True)
class Alignment:
    """The two reports matched case by case, and the summaries the rules are applied to.

    ``missing_ids`` (baseline cases absent from a candidate of the same golden set) fail
    the gate; ``removed_ids``/``added_ids`` are informational: with a changed golden set
    they are the cases left out of the comparison.
    """

    baseline_summary: Summary
    candidate_summary: Summary
    #: the cases compared (on a changed golden set, the shared ones), in report order
    baseline_cases: CaseColumns
    candidate_cases: CaseColumns
    shared_ids: tuple[str, ...]
    missing_ids: tuple[str, ...]
    removed_ids: tuple[str, ...]
    added_ids: tuple[str, ...]
    dataset_changed: bool


def _split_ids(
    base_list: list[str], cand_list: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(shared ids in baseline order, ids only the baseline has, ids only the candidate has)."""
    if base_list == cand_list:  # the usual pair: the same cases, in the same order
        return tuple(base_list), (), ()
    cand_ids, base_ids = set(cand_list), set(base_list)
    shared = tuple(i for i in base_list if i in cand_ids)
    only_base = tuple(i for i in base_list if i not in cand_ids)
    only_cand = tuple(i for i in cand_list if i not in base_ids)
    return shared, only_base, only_cand


def _check_shared(
    baseline: RunReport,
    candidate: RunReport,
    shared: tuple[str, ...],
    only_cand: tuple[str, ...],
    *,
    same_set: bool,
) -> None:
    """Refuse (GateError) a candidate holding cases its golden set lacks, and two golden
    sets that share no case."""
    if same_set and only_cand and baseline.cases:
        listed = ", ".join(repr(i) for i in only_cand[:5])
        more = f" and {len(only_cand) - 5} more" if len(only_cand) > 5 else ""
        raise GateError(
            f"{candidate.dataset}: the candidate holds {len(only_cand)} case(s) that the "
            f"golden set it names (dataset_hash {baseline.dataset_hash[:12]}, the "
            f"baseline's) does not have: {listed}{more}; a report's cases must be "
            "those of its golden set"
        )
    if not same_set and not shared:
        raise GateError(
            f"the golden sets share no case (baseline {baseline.dataset}: "
            f"{baseline.case_count} cases, candidate {candidate.dataset}: "
            f"{candidate.case_count} cases): nothing to compare"
        )


def _kept(cases: tuple[CaseRecord, ...], keep: set[str]) -> tuple[CaseRecord, ...]:
    """The cases whose id is in ``keep``, in their order."""
    return tuple(c for c in cases if c.id in keep)


def _judged_summary(report: RunReport, cases: tuple[CaseRecord, ...]) -> Summary:
    """The summary the rules judge: of the matched cases (with repeats, each case's mean over
    the rounds), or the report's written summary when it has no cases."""
    return summary_over_rounds(report, cases) if report.cases else report.summary


def align(
    baseline: RunReport, candidate: RunReport, *, allow_dataset_change: bool = False
) -> Alignment:
    """Match the cases of two comparable reports by id; the summaries the rules judge are
    those of the matched cases (:func:`~evaluator.gate.repeats.summary_over_rounds`: with
    repeats, each case's mean over the rounds), or a report's written summary when it has
    no cases.

    Raises:
        GateError: not comparable (see :func:`check_run_comparable`), a candidate holding cases
            that the golden set its hash names does not, or a changed golden set that
            shares no case with the baseline's.
    """
    check_run_comparable(
        baseline,
        k=candidate.k,
        dataset=candidate.dataset,
        dataset_hash=candidate.dataset_hash,
        # read only when the golden sets differ (to count the shared cases): not listed
        # for the usual pair
        case_ids=(c.id for c in candidate.cases),
        allow_dataset_change=allow_dataset_change,
    )
    shared, only_base, only_cand = _split_ids(
        [c.id for c in baseline.cases], [c.id for c in candidate.cases]
    )
    same_set = baseline.dataset_hash == candidate.dataset_hash
    _check_shared(baseline, candidate, shared, only_cand, same_set=same_set)
    keep = set(shared)
    base_cases = _kept(baseline.cases, keep) if only_base else baseline.cases
    cand_cases = _kept(candidate.cases, keep) if only_cand else candidate.cases
    return Alignment(
        _judged_summary(baseline, base_cases),
        _judged_summary(candidate, cand_cases),
        CaseColumns.of_records(base_cases),
        CaseColumns.of_records(cand_cases),
        shared,
        missing_ids=only_base if same_set else (),
        removed_ids=() if same_set else only_base,
        added_ids=() if same_set else only_cand,
        dataset_changed=not same_set,
    )


@dataclass(frozen=True, slots=True)
class CaseChange:
    """How one case moved between the baseline and the candidate.

    ``changes`` are short phrases, regressions first (``"answer correct → incorrect"``,
    ``"recall 1.00 → 0.50"``, ``"new error timeout: ..."``); ``severity`` orders the list,
    worst (or best) first.
    """

    id: str
    question: str
    severity: float
    changes: tuple[str, ...]
    relevant_ids: tuple[str, ...]
    # named (and ordered) as the gate's JSON names a change's fields (render._change_dict)
    baseline_ranked_ids: tuple[str, ...]
    candidate_ranked_ids: tuple[str, ...]
    #: a conversation's turn: the questions of the turns before it, in order (the context
    #: a follow-up cannot be read without); empty for a question of its own
    earlier: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CaseDiff:
    """Cases that regressed (worst first) and improved (best first) among the shared ones."""

    regressed: tuple[CaseChange, ...]
    improved: tuple[CaseChange, ...]
    compared: int

    @property
    def unchanged(self) -> int:
        return self.compared - len(self.regressed) - len(self.improved)


def _moves(
    be: CaseError | None, bs: tuple[Any, ...], ce: CaseError | None, cs: tuple[Any, ...]
) -> tuple[list[str], float, list[str], float]:
    """(regressions, their weight, improvements, their weight) of one case: each side's
    error (None when scored) and scores (its :meth:`CaseColumns.keys`, the
    :class:`CaseScores` fields in field order)."""
    if ce is not None or be is not None:
        return _error_moves(be, ce)
    worse: list[str] = []
    better: list[str] = []
    bad = good = 0.0
    b_answer, c_answer = bs[_ANSWER], cs[_ANSWER]
    if b_answer is True and c_answer is False:
        worse.append("answer correct → incorrect")
        bad += _ANSWER_WEIGHT
    elif b_answer is False and c_answer is True:
        better.append("answer incorrect → correct")
        good += _ANSWER_WEIGHT
    bad_scores, good_scores = _score_moves(bs, cs, worse, better)
    return worse, bad + bad_scores, better, good + good_scores


def _error_moves(
    be: CaseError | None, ce: CaseError | None
) -> tuple[list[str], float, list[str], float]:
    """A case that failed on either side: a new error is a regression, a fixed one an
    improvement, an error on both sides no move."""
    if ce is not None:
        if be is not None:
            return [], 0.0, [], 0.0
        return [f"new error {ce.kind}: {ce.message}"], _ERROR_WEIGHT, [], 0.0
    assert be is not None  # _moves calls this with an error on one side at least
    return [], 0.0, [f"error fixed (was {be.kind})"], _ERROR_WEIGHT


def _score_moves(
    bs: tuple[Any, ...], cs: tuple[Any, ...], worse: list[str], better: list[str]
) -> tuple[float, float]:
    """Each diffed score that moved beyond float noise, appended to ``worse`` or
    ``better``; returns (what was lost, what was gained)."""
    bad = good = 0.0
    for label, at in _DIFFED:
        before, after = bs[at], cs[at]
        if before is None or after is None:
            continue
        delta = after - before
        if delta < -FLOAT_TOLERANCE:  # smaller moves are float noise, not a change
            worse.append(f"{label} {before:.2f} → {after:.2f}")
            bad -= delta
        elif delta > FLOAT_TOLERANCE:
            better.append(f"{label} {before:.2f} → {after:.2f}")
            good += delta
    return bad, good


def record_moves(
    baseline: CaseRecord, candidate: CaseRecord
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(regressions, improvements) of one case between two runs, in the phrases of
    :func:`diff_cases`'s ``changes`` (the daemon's case view asks this of one case)."""
    before, after = CaseColumns.of_records([baseline]), CaseColumns.of_records([candidate])
    worse, _, better, _ = _moves(
        before.errors[0], before.keys()[0], after.errors[0], after.keys()[0]
    )
    return tuple(worse), tuple(better)


def _pairs(
    base: CaseColumns,
    cand: CaseColumns,
    base_keys: Sequence[tuple[Any, ...]],
    cand_keys: Sequence[tuple[Any, ...]],
) -> tuple[Sequence[int | None], int, Iterable[int]]:
    """Each baseline case's position in the candidate (None: not there), how many are in
    both, and the baseline positions whose scores differ."""
    found: Sequence[int | None]
    if base.ids == cand.ids:  # the usual pair: the same cases in the same order
        found = range(len(base.ids))
        return found, len(found), compress(count(), map(ne, base_keys, cand_keys))
    # each baseline case's position in the candidate, looked up in C
    where = dict(zip(cand.ids, range(len(cand.ids)), strict=True))
    found = list(map(where.get, base.ids))
    moved = [i for i, j in enumerate(found) if j is not None and base_keys[i] != cand_keys[j]]
    return found, len(found) - found.count(None), moved


def diff_cases(alignment: Alignment) -> CaseDiff:
    """Which shared cases regressed and which improved.

    A case with any regression is listed as regressed (its improvements follow its
    regressions in ``changes``); severity: a new error 10, a flipped answer 3, plus the
    lost recall, reciprocal rank and citation precision.
    """
    base, cand = alignment.baseline_cases, alignment.candidate_cases
    base_keys, cand_keys = base.keys(), cand.keys()
    found, compared, moved = _pairs(base, cand, base_keys, cand_keys)
    base_errors, cand_errors = base.errors, cand.errors
    base_ids, cand_rows = base.ids, cand.rows
    # (-severity, baseline order, change): sorted as plain tuples, worst (or best) first,
    # ties in baseline order; the order is unique, so a change is never compared
    regressed: list[tuple[float, int, CaseChange]] = []
    improved: list[tuple[float, int, CaseChange]] = []
    earlier = turns_before(base.rows)
    for order in moved:  # equal scores (or two failures): nothing moved
        j = found[order]
        assert j is not None
        worse, bad, better, good = _moves(
            base_errors[order], base_keys[order], cand_errors[j], cand_keys[j]
        )
        if not worse and not better:
            continue
        severity = bad if worse else good
        record = base.rows[order]
        change = CaseChange(
            id=base_ids[order],
            question=record.case.question,
            severity=severity,
            changes=(*worse, *better),
            relevant_ids=tuple(record.case.relevance),
            baseline_ranked_ids=record.ranked_ids,
            candidate_ranked_ids=cand_rows[j].ranked_ids,
            earlier=tuple(t.case.question for t in earlier.get(record.case.id, ())),
        )
        (regressed if worse else improved).append((-severity, order, change))
    regressed.sort()
    improved.sort()
    return CaseDiff(
        regressed=tuple(map(_CHANGE, regressed)),
        improved=tuple(map(_CHANGE, improved)),
        compared=compared,
    )

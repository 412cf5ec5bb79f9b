"""Whether two reports can be compared, which cases they share, and which cases moved.

Two reports are comparable when they ran the same golden set (content hash) at the same
K. With ``allow_dataset_change`` a different golden set is accepted: only the cases
present in both count, and both summaries are recomputed over them. A baseline case
missing from a candidate of the same golden set fails the gate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter, itemgetter

from evaluator.errors import GateError
from evaluator.metrics import FLOAT_TOLERANCE, METRICS
from evaluator.models import CaseError, CaseRecord
from evaluator.report import RunReport
from evaluator.summary import Summary, summarise

__all__ = [
    "Alignment",
    "CaseChange",
    "CaseDiff",
    "align",
    "check_comparable",
    "check_run_comparable",
    "diff_cases",
]

#: Per-case score moves smaller than this are float noise, not a change.
_EPSILON = FLOAT_TOLERANCE
#: The per-case scores a case diff lists moves of, with their labels, in report order.
_DIFFED = tuple(
    (spec.case_label, spec.per_case)
    for spec in METRICS
    if spec.case_label is not None and spec.per_case is not None
)
_ID = attrgetter("case.id")
_CHANGE = itemgetter(2)
#: Severity weights: a new error outranks a flipped answer, which outranks lost retrieval.
_ERROR_WEIGHT = 10.0
_ANSWER_WEIGHT = 3.0


def check_comparable(
    baseline: RunReport, candidate: RunReport, *, allow_dataset_change: bool = False
) -> None:
    """Raise :class:`GateError` when the reports cannot be compared.

    A different K is never comparable (recall@5 and recall@10 measure different things);
    a different golden set is, with ``allow_dataset_change``.
    """
    check_run_comparable(
        baseline,
        k=candidate.k,
        dataset=candidate.dataset,
        dataset_hash=candidate.dataset_hash,
        # read only when the golden sets differ (to count the shared cases)
        case_ids=(c.case.id for c in candidate.cases),
        allow_dataset_change=allow_dataset_change,
    )


def check_run_comparable(
    baseline: RunReport,
    *,
    k: int,
    dataset: str,
    dataset_hash: str,
    case_ids: Iterable[str],
    allow_dataset_change: bool = False,
) -> None:
    """:func:`check_comparable` against a run not made yet (so a live gate fails early).

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
    baseline_cases: tuple[CaseRecord, ...]
    candidate_cases: tuple[CaseRecord, ...]
    shared_ids: tuple[str, ...]
    missing_ids: tuple[str, ...]
    removed_ids: tuple[str, ...]
    added_ids: tuple[str, ...]
    dataset_changed: bool


def align(
    baseline: RunReport, candidate: RunReport, *, allow_dataset_change: bool = False
) -> Alignment:
    """Match the cases of two comparable reports by id.

    Raises:
        GateError: not comparable (see :func:`check_comparable`), or a changed golden set
            that shares no case with the baseline's.
    """
    check_comparable(baseline, candidate, allow_dataset_change=allow_dataset_change)
    base_list = [c.case.id for c in baseline.cases]
    cand_list = [c.case.id for c in candidate.cases]
    cand_ids, base_ids = set(cand_list), set(base_list)
    shared = tuple(dict.fromkeys([i for i in base_list if i in cand_ids]))
    only_base = tuple(dict.fromkeys([i for i in base_list if i not in cand_ids]))
    only_cand = tuple(dict.fromkeys([i for i in cand_list if i not in base_ids]))
    if baseline.dataset_hash == candidate.dataset_hash:
        # same golden set: the recorded summaries are judged; a lost case is a failure
        return Alignment(
            baseline.summary,
            candidate.summary,
            baseline.cases,
            candidate.cases,
            shared,
            missing_ids=only_base,
            removed_ids=(),
            added_ids=only_cand,
            dataset_changed=False,
        )
    if not shared:
        raise GateError(
            f"the golden sets share no case (baseline {baseline.dataset}: "
            f"{baseline.case_count} cases, candidate {candidate.dataset}: "
            f"{candidate.case_count} cases): nothing to compare"
        )
    keep = set(shared)
    base_cases = tuple([c for c in baseline.cases if c.case.id in keep])
    cand_cases = tuple([c for c in candidate.cases if c.case.id in keep])
    return Alignment(
        summarise(base_cases),
        summarise(cand_cases),
        base_cases,
        cand_cases,
        shared,
        missing_ids=(),
        removed_ids=only_base,
        added_ids=only_cand,
        dataset_changed=True,
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
    baseline_ranked: tuple[str, ...]
    candidate_ranked: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CaseDiff:
    """Cases that regressed (worst first) and improved (best first) among the shared ones."""

    regressed: tuple[CaseChange, ...]
    improved: tuple[CaseChange, ...]
    compared: int

    @property
    def unchanged(self) -> int:
        return self.compared - len(self.regressed) - len(self.improved)


def _moves(b: CaseRecord, c: CaseRecord) -> tuple[list[str], float, list[str], float]:
    """(regressions, their weight, improvements, their weight) of one case."""
    worse: list[str] = []
    better: list[str] = []
    bad = good = 0.0
    bs, cs = b.outcome, c.outcome
    if isinstance(cs, CaseError):
        if isinstance(bs, CaseError):
            return [], 0.0, [], 0.0
        return [f"new error {cs.kind}: {cs.message}"], _ERROR_WEIGHT, [], 0.0
    if isinstance(bs, CaseError):
        return [], 0.0, [f"error fixed (was {bs.kind})"], _ERROR_WEIGHT
    if bs.answer_correct is True and cs.answer_correct is False:
        worse.append("answer correct → incorrect")
        bad += _ANSWER_WEIGHT
    elif bs.answer_correct is False and cs.answer_correct is True:
        better.append("answer incorrect → correct")
        good += _ANSWER_WEIGHT
    for label, per_case in _DIFFED:
        before, after = per_case(bs), per_case(cs)
        if before is None or after is None:
            continue
        delta = after - before
        if delta < -_EPSILON:
            worse.append(f"{label} {before:.2f} → {after:.2f}")
            bad -= delta
        elif delta > _EPSILON:
            better.append(f"{label} {before:.2f} → {after:.2f}")
            good += delta
    return worse, bad, better, good


def diff_cases(alignment: Alignment) -> CaseDiff:
    """Which shared cases regressed and which improved.

    A case with any regression is listed as regressed (its improvements follow its
    regressions in ``changes``); severity: a new error 10, a flipped answer 3, plus the
    lost recall, reciprocal rank and citation precision.
    """
    candidates = alignment.candidate_cases
    cand = dict(zip(map(_ID, candidates), candidates, strict=True))
    # each baseline case's candidate, looked up in C
    found = list(map(cand.get, map(_ID, alignment.baseline_cases)))
    compared = len(found) - found.count(None)
    # (-severity, baseline order, change): sorted as plain tuples, worst (or best) first,
    # ties in baseline order; the order is unique, so a change is never compared
    regressed: list[tuple[float, int, CaseChange]] = []
    improved: list[tuple[float, int, CaseChange]] = []
    for order, (b, c) in enumerate(zip(alignment.baseline_cases, found, strict=True)):
        if c is None or b.outcome == c.outcome:
            continue  # not shared; or the same scores (two equal errors): nothing moved
        worse, bad, better, good = _moves(b, c)
        if not worse and not better:
            continue
        severity = bad if worse else good
        case = b.case
        # by position (CaseChange's field order), a case of a changed report at a time
        change = CaseChange(
            case.id,
            case.question,
            severity,
            (*worse, *better),
            tuple(case.relevance),
            b.ranked_ids,
            c.ranked_ids,
        )
        (regressed if worse else improved).append((-severity, order, change))
    regressed.sort()
    improved.sort()
    return CaseDiff(
        regressed=tuple(map(_CHANGE, regressed)),
        improved=tuple(map(_CHANGE, improved)),
        compared=compared,
    )

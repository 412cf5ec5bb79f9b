"""A report read back for judging, as columns: what ``evaluator gate`` compares, and no more.

Reading a report whole builds three records per case (the case, its scores, the record).
Judging two saved reports needs far less: each case's id, outcome and population, and
for the few cases a diff shows, their question and rankings. :class:`ReportColumns` is a
report read and validated exactly as :func:`~evaluator.report.read.read_report` reads one
(the same decoding, the same checks, the same errors), holding each case as its decoded
entry and the columns of :class:`CaseTable` instead of records: two 100,000-case reports
are judged without building 600,000 objects. :meth:`ReportColumns.report` builds the
whole :class:`RunReport` when something needs the records (an HTML page, a quarantine,
repeats, a changed golden set).

A :class:`CaseTable` is also built from a report's records (:meth:`CaseTable.of_records`),
so the gate compares two reports one way whichever way they were read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from operator import attrgetter
from typing import Any, Protocol

from evaluator.models import CaseError, CaseRecord, CaseScores
from evaluator.repeats import Repeats
from evaluator.report.model import SCHEMA_VERSION, RunReport
from evaluator.summary import Summary

__all__ = [
    "SCORE_FIELDS",
    "CaseTable",
    "ErrorLike",
    "Judged",
    "ReportColumns",
    "as_report",
    "ids_of",
    "table_of",
]

#: the CaseScores fields, in field order: how :meth:`CaseTable.keys` holds a case's scores
SCORE_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(CaseScores))
#: every CaseScores field, read in C from anything carrying them (scores, decoded entries)
_SCORES: Callable[[Any], tuple[Any, ...]] = attrgetter(*SCORE_FIELDS)
#: a failed case's scores, as a decoded entry has them
_NO_SCORES = (None,) * len(dataclasses.fields(CaseScores))
_OUTCOME = attrgetter("outcome")
_ID = attrgetter("case.id")
_UNANSWERABLE = attrgetter("case.unanswerable")

#: what a case diff shows of a case: its question, relevant ids and ranked ids
Shown = tuple[str, tuple[str, ...], tuple[str, ...]]


class ErrorLike(Protocol):
    """Why a case failed: a :class:`CaseError`, or a report's decoded error."""

    @property
    def kind(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def status(self) -> int | None: ...


def _shown_record(record: CaseRecord) -> Shown:
    return record.case.question, tuple(record.case.relevance), record.ranked_ids


@dataclass(frozen=True, slots=True)
class CaseTable:
    """A report's cases as the gate compares them: one column per quantity, case order."""

    ids: Sequence[str]
    #: each case's error, None for a scored case
    errors: Sequence[ErrorLike | None]
    #: each case's scores: anything with the :class:`CaseScores` fields (scores, a decoded
    #: entry), read by name; a failed case's is never read
    scores: Sequence[Any]
    unanswerable: Sequence[bool]
    #: each case as held (a record, a decoded entry), for :attr:`show`
    rows: Sequence[Any]
    #: what a case diff shows of a row
    show: Callable[[Any], Shown]
    #: what is computed once for the paired differences and the case diff (:meth:`keys`)
    _memo: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of_records(cls, records: Sequence[CaseRecord]) -> CaseTable:
        outcomes = list(map(_OUTCOME, records))
        return cls(
            ids=list(map(_ID, records)),
            errors=[o if isinstance(o, CaseError) else None for o in outcomes],
            scores=outcomes,
            unanswerable=list(map(_UNANSWERABLE, records)),
            rows=records,
            show=_shown_record,
        )

    def shown(self, i: int) -> Shown:
        return self.show(self.rows[i])

    def ranked(self, i: int) -> tuple[str, ...]:
        """The ids case ``i`` ranked (its row's ``ranked_ids``: a record's, an entry's)."""
        ranked: tuple[str, ...] = self.rows[i].ranked_ids
        return ranked

    def keys(self) -> list[tuple[Any, ...]]:
        """Each case's scores as one value: two cases whose values are equal have nothing
        to compare (the same scores, or both failed: a failed case's scores are all null,
        which no scored case's are). Computed once; not to be changed."""
        keys: list[tuple[Any, ...]] | None = self._memo.get("keys")
        if keys is None:
            try:  # in C: a decoded entry has every score field, a failed one null
                keys = list(map(_SCORES, self.scores))
            except AttributeError:  # records: a failed case's outcome is its error
                keys = [
                    _SCORES(s) if e is None else _NO_SCORES
                    for s, e in zip(self.scores, self.errors, strict=True)
                ]
            self._memo["keys"] = keys
        return keys

    def score_columns(self) -> dict[str, tuple[Any, ...]]:
        """Each :class:`CaseScores` field's value for every case, in case order (None for a
        failed case): :meth:`keys` transposed, in C. Computed once; not to be changed."""
        columns: dict[str, tuple[Any, ...]] | None = self._memo.get("columns")
        if columns is None:
            names = SCORE_FIELDS
            keys = self.keys()
            columns = (
                dict(zip(names, zip(*keys, strict=True), strict=True))
                if keys
                else dict.fromkeys(names, ())
            )
            self._memo["columns"] = columns
        return columns

    def scored(self) -> tuple[list[Any], list[str], list[bool]]:
        """The scored cases' scores, ids and unanswerable flags, in case order."""
        flags = [e is None for e in self.errors]
        return (
            list(compress(self.scores, flags)),
            list(compress(self.ids, flags)),
            list(compress(self.unanswerable, flags)),
        )


@dataclass(frozen=True, slots=True)
class ReportColumns:
    """A validated report whose cases are held as a :class:`CaseTable`, not as records.

    Its header fields are a :class:`RunReport`'s, with the same meaning.
    """

    run_id: str
    generated_at: datetime
    config_hash: str
    dataset_hash: str
    target: str
    dataset: str
    k: int
    duration_seconds: float
    summary: Summary
    table: CaseTable
    #: the report's records, built on demand (``share`` as in ``read_report``)
    records: Callable[[RunReport | None], tuple[CaseRecord, ...]]
    repeats: Repeats | None = None
    interrupted: bool = False
    #: the LLM judge's block, as RunReport.judge
    judge: Mapping[str, Any] | None = None
    evaluator_version: str = ""
    schema_version: int = SCHEMA_VERSION

    @property
    def case_count(self) -> int:
        return len(self.table.ids)

    @property
    def error_count(self) -> int:
        errors = self.table.errors
        return len(errors) - errors.count(None)

    def report(self, share: RunReport | None = None) -> RunReport:
        """The whole report, records built: the one ``read_report`` returns for its file."""
        return RunReport(
            run_id=self.run_id,
            generated_at=self.generated_at,
            config_hash=self.config_hash,
            dataset_hash=self.dataset_hash,
            target=self.target,
            dataset=self.dataset,
            k=self.k,
            duration_seconds=self.duration_seconds,
            summary=self.summary,
            cases=self.records(share),
            repeats=self.repeats,
            interrupted=self.interrupted,
            judge=self.judge,
            evaluator_version=self.evaluator_version,
            schema_version=self.schema_version,
        )


#: a report as the gate takes it: read whole, or read as columns
Judged = RunReport | ReportColumns


def table_of(report: Judged) -> CaseTable:
    """The report's cases as a :class:`CaseTable`."""
    if isinstance(report, ReportColumns):
        return report.table
    return CaseTable.of_records(report.cases)


def ids_of(report: Judged) -> Iterable[str]:
    """The report's case ids in case order (read as they are iterated)."""
    if isinstance(report, ReportColumns):
        return report.table.ids
    return (c.case.id for c in report.cases)


def as_report(report: Judged, share: RunReport | None = None) -> RunReport:
    """The report with its records (built once more when it was read as columns)."""
    return report.report(share) if isinstance(report, ReportColumns) else report

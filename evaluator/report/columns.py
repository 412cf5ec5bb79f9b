"""A report's cases as columns: the one columnar view, built from records, that the gate
compares two reports on (case diff, paired differences, intervals).

Each column holds one quantity of every case in case order, so that the gate reads a
quantity of 100,000 cases in C (``map``, ``compress``, ``zip``) rather than walking the
records once per metric.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Any

from evaluator.models import CaseError, CaseRecord, CaseScores

__all__ = ["SCORE_FIELDS", "CaseColumns"]

#: the CaseScores fields, in field order: how :meth:`CaseColumns.keys` holds a case's scores
SCORE_FIELDS: tuple[str, ...] = CaseScores.__struct_fields__
_SCORES: Callable[[Any], tuple[Any, ...]] = attrgetter(*SCORE_FIELDS)
#: a failed case's scores
_NO_SCORES = (None,) * len(SCORE_FIELDS)


@dataclass(frozen=True, slots=True)
class CaseColumns:
    """A report's cases as the gate compares them: one column per quantity, case order."""

    ids: Sequence[str]
    #: each case's error, None for a scored case
    errors: Sequence[CaseError | None]
    #: each case's outcome (a failed case's is never read as scores)
    scores: Sequence[Any]
    unanswerable: Sequence[bool]
    rows: Sequence[CaseRecord]
    #: what is computed once for the paired differences and the case diff (:meth:`keys`)
    _memo: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of_records(cls, records: Sequence[CaseRecord]) -> CaseColumns:
        outcomes = [r.outcome for r in records]
        return cls(
            ids=[r.case.id for r in records],
            errors=[o if isinstance(o, CaseError) else None for o in outcomes],
            scores=outcomes,
            unanswerable=[r.case.unanswerable for r in records],
            rows=records,
        )

    def keys(self) -> list[tuple[Any, ...]]:
        """Each case's scores as one value: two cases whose values are equal have nothing
        to compare (the same scores, or both failed: a failed case's scores are all null,
        which no scored case's are). Computed once; not to be changed."""
        keys: list[tuple[Any, ...]] | None = self._memo.get("keys")
        if keys is None:
            keys = [
                _SCORES(s) if e is None else _NO_SCORES
                for s, e in zip(self.scores, self.errors, strict=True)
            ]
            self._memo["keys"] = keys
        return keys

    def scored(self) -> tuple[list[Any], list[str], list[bool]]:
        """The scored cases' scores, ids and unanswerable flags, in case order."""
        flags = [e is None for e in self.errors]
        return (
            list(compress(self.scores, flags)),
            list(compress(self.ids, flags)),
            list(compress(self.unanswerable, flags)),
        )

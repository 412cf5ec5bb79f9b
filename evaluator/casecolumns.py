"""The per-case values a run's summary reads, in flat columns, filled case by case.

:func:`evaluator.summary.summarise` of 100,000 records used to walk the records once per
quantity and per tag (nine metrics, latency, seven stages, eight summaries), each walk a
cache miss per case: about a second at the end of a run. Here each case's values are copied
once into flat arrays of numbers (``array``, ``bytearray``), in one pass over the records; a
summary then reads the arrays in C, a tag's cases as a mask over them. (Copying each case
as it finished, inside the run loop, measured twice the CPU of this pass after it: ~5 us
against ~2.5 us a case.)

Cases are added by position (their place in the golden set), in any order; a summary reads
the scores in position order, so its sums add the same values in the same order as a walk
over the records would. Pure data: no clock, no I/O.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Hashable, Iterable, Sequence
from operator import attrgetter, is_
from typing import Generic, TypeVar

from evaluator.metrics import METRICS
from evaluator.models import DELIVERY_FIELDS, CaseRecord, CaseScores

__all__ = ["DELIVERY_READ", "SCORE_FIELDS", "CaseColumns", "Codes", "Layout", "Mask"]

#: a set of positions: one byte each, 1 for a position in the set
Mask = bytes | bytearray

#: the CaseScores fields the quality metrics average, each once, in registry order
SCORE_FIELDS: tuple[str, ...] = tuple(
    dict.fromkeys(spec.score for spec in METRICS if spec.score is not None)
)
_WIDTH = len(SCORE_FIELDS)
_SCORES = attrgetter(*SCORE_FIELDS)
#: a row of scores as the doubles of ``CaseColumns.scores`` (flags as 0.0 and 1.0)
_ROW = struct.Struct(f"={_WIDTH}d")
#: the delivery measurements a summary reads (streamed answers, usage, cost), record order
DELIVERY_READ: tuple[str, ...] = tuple(name for name in DELIVERY_FIELDS if name != "trace_id")
_DELIVERY = attrgetter(*DELIVERY_READ)
_NO_DELIVERY = (None,) * len(DELIVERY_READ)
_NONES = (None,) * _WIDTH

_K = TypeVar("_K", bound=Hashable)


class Codes(Generic[_K]):
    """A small number per position for a value many positions share (a case's tag list,
    its stage names): ``keys[code]`` is the value, code 0 the one given first.

    Held one byte a position while there are at most 256 distinct values, so that the
    positions holding some of them are one ``bytes.translate`` (see :meth:`mask`).
    """

    def __init__(self, size: int, none: _K) -> None:
        self.numbers: bytearray | array[int] = bytearray(size)
        self.keys: list[_K] = [none]
        self._code: dict[_K, int] = {none: 0}

    def set(self, index: int, key: _K) -> None:
        """Give position ``index`` the code of ``key``."""
        self.numbers[index] = self.code(key)

    def code(self, key: _K) -> int:
        """The code of ``key``, a new one when first seen."""
        code = self._code.get(key)
        if code is None:
            code = self._code[key] = len(self.keys)
            self.keys.append(key)
            if code == 256:
                # widened, not reinterpreted: a bytes initializer would be read as raw memory
                self.numbers = array("q", iter(self.numbers))
        return code

    def mask(self, chosen: Iterable[int]) -> Mask:
        """The positions whose code is one of ``chosen``, as a mask (1 for those)."""
        table = bytearray(max(len(self.keys), 256))
        for code in chosen:
            table[code] = 1
        numbers = self.numbers
        if isinstance(numbers, bytearray):
            return numbers.translate(table)
        return bytes(map(table.__getitem__, numbers))


class Layout:
    """The stage timings of the cases that report one sequence of stage names: their
    positions and, row by row in the same order, their values (``names`` wide)."""

    __slots__ = ("code", "names", "positions", "values")

    def __init__(self, names: tuple[str, ...], code: int) -> None:
        self.names = names
        self.code = code
        self.positions: list[int] = []
        self.values = array("d")


class CaseColumns:
    """Columns of ``size`` positions; :meth:`add` fills one position from its record.

    Attributes (read by the summary, written only by :meth:`add`):
        added, scored, unanswerable: one flag (0 or 1) per position.
        kinds: the error kind of a failed case, "" elsewhere.
        tags: each case's tag list, as :class:`Codes`.
        latency: each case's latency (0.0 where not added).
        scores: each scored case's :data:`SCORE_FIELDS` values, row by row (0.0 for None);
            ``missing`` is 1 where a value was None (same layout).
        stage_names: each case's stage names, as :class:`Codes`; ``layouts`` the timings
            per distinct sequence of names, in the order of its code.
        delivery: per :data:`DELIVERY_READ` measurement, each case's value (None where
            none); None until a case reports one.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.added = bytearray(size)
        self.scored = bytearray(size)
        self.unanswerable = bytearray(size)
        self.kinds: list[str] = [""] * size
        self.tags: Codes[tuple[str, ...]] = Codes(size, ())
        self.latency = array("d", bytes(8 * size))
        self.scores = array("d", bytes(8 * _WIDTH * size))
        self.missing = bytearray(_WIDTH * size)
        self.stage_names: Codes[tuple[str, ...]] = Codes(size, ())
        self.layouts: list[Layout] = [Layout((), 0)]
        self._last_layout = self.layouts[0]
        self.delivery: tuple[list[float | int | None], ...] | None = None

    @classmethod
    def of(cls, records: Sequence[CaseRecord]) -> CaseColumns:
        """The columns of ``records``, position ``i`` the ``i``-th record."""
        columns = cls(len(records))
        add = columns.add
        for index, record in enumerate(records):
            add(index, record)
        return columns

    def add(self, index: int, record: CaseRecord) -> None:
        """Copy the values the summary reads of ``record``, the case at ``index``."""
        self.added[index] = 1
        case = record.case
        tags = case.tags
        if tags:
            self.tags.set(index, tags)
        if case.unanswerable:
            self.unanswerable[index] = 1
        self.latency[index] = record.latency_seconds
        outcome = record.outcome
        if isinstance(outcome, CaseScores):
            self.scored[index] = 1
            row = _SCORES(outcome)
            try:  # one C call for the whole row (an array of it, then a slice, took twice)
                _ROW.pack_into(self.scores, index * _ROW.size, *row)
            except struct.error:  # a None among them (not a float): marked missing
                self._add_missing(index, row)
        else:
            self.kinds[index] = outcome.kind
        timings = record.stage_seconds
        if timings:
            values: Iterable[float]
            if type(timings) is dict:  # as a run scores it (no attribute lookup to fail)
                names, values = tuple(timings), timings.values()
            else:
                compact = getattr(timings, "row", None)
                # a streamed run's compact stages (report.stream): (names, values) already
                names, values = (
                    compact if compact is not None else (tuple(timings), timings.values())
                )
            layout = self._last_layout
            # the same names as the case before, as a run's cases almost always are: a
            # comparison of shared strings, not a hash of the tuple
            if names != layout.names:
                layout = self._last_layout = self._layout(names)
            self.stage_names.numbers[index] = layout.code
            layout.positions.append(index)
            layout.values.extend(values)
        measured = _DELIVERY(record)
        if measured != _NO_DELIVERY:
            self._add_delivery(index, measured)

    def _add_missing(self, index: int, row: tuple[float | bool | None, ...]) -> None:
        start = index * _WIDTH
        self.missing[start : start + _WIDTH] = bytes(map(is_, row, _NONES))
        values = tuple(0.0 if value is None else value for value in row)
        _ROW.pack_into(self.scores, index * _ROW.size, *values)

    def _layout(self, names: tuple[str, ...]) -> Layout:
        """The layout of ``names``, new when first seen."""
        code = self.stage_names.code(names)
        if code == len(self.layouts):
            self.layouts.append(Layout(names, code))
        return self.layouts[code]

    def _add_delivery(self, index: int, measured: Iterable[float | int | None]) -> None:
        if self.delivery is None:
            self.delivery = tuple([None] * self.size for _ in DELIVERY_READ)
        for column, value in zip(self.delivery, measured, strict=True):
            column[index] = value

"""A run's report written while the run goes: each case encoded and spooled to disk as it
finishes, the header (which needs every case: summary, label audit) put in front at the end.

``evaluator run`` of 100,000 cases would otherwise hold every case's evidence texts until the
end, then walk the whole graph again to audit, redact and encode it. Here each case is
audited once, encoded once (through the same egress redaction as :func:`write_report`) and
appended to a spool file next to the report; what the run keeps of it is the record without
its texts (the summary, the worst cases and the run's diagnostics do not read them). At the
end the header and the spooled cases become the report, atomically: the bytes are exactly
those :func:`~evaluator.report.write.write_report` writes for the same report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import BinaryIO, ClassVar, Self

import msgspec

from evaluator.models import CaseRecord
from evaluator.report.model import RunReport
from evaluator.report.read import _NO_CUTS, _NO_TEXTS
from evaluator.report.write import (
    _BUFFER,
    _ENCODER,
    _atomic_file,
    _case_to_dict,
    _egress,
    _header_chunk,
    _header_to_dict,
)
from evaluator.scoring.labels import AuditTotals, LabelAudit, audit_labels, audit_record

__all__ = ["ReportStream", "without_texts"]


def without_texts(record: CaseRecord) -> CaseRecord:
    """``record`` without its evidence texts (by far its largest part), once they are in
    the report file; its stage timings kept compactly."""
    stages = record.stage_seconds
    return msgspec.structs.replace(
        record,
        stage_seconds=_Stages.of(stages) if stages else _NO_STAGES,
        texts=_NO_TEXTS,
        cut_texts=_NO_CUTS,
    )


class _Stages(Mapping[str, float]):
    """A case's stage timings, read-only: the names shared by every case that reports the
    same stages, the values a tuple. A dict of seven stages is about 360 bytes a case
    (36 MiB over 100,000 cases); this is about 100."""

    __slots__ = ("_names", "_values")

    #: every distinct sequence of stage names seen, shared (few: one or two per target)
    _known: ClassVar[dict[tuple[str, ...], tuple[str, ...]]] = {}

    def __init__(self, names: tuple[str, ...], values: tuple[float, ...]) -> None:
        self._names = names
        self._values = values

    @classmethod
    def of(cls, stages: Mapping[str, float]) -> _Stages:
        names = tuple(stages)
        if len(cls._known) < 1024:  # a target naming stages at random cannot grow it
            names = cls._known.setdefault(names, names)
        return cls(names, tuple(stages.values()))

    def __getitem__(self, name: str) -> float:
        try:
            return self._values[self._names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    # the summary's stage P95s and the run's warnings read every case's values or items:
    # Mapping's views would look each name up again through __getitem__ (a Python call
    # and a tuple search per stage per case, 1.5 s over 100,000 cases and their tags)
    def values(self) -> ValuesView[float]:
        return _StageValues(self)

    def items(self) -> ItemsView[str, float]:
        return _StageItems(self)

    def __repr__(self) -> str:
        return repr(dict(zip(self._names, self._values, strict=True)))


class _StageValues(ValuesView[float]):
    """A :class:`_Stages`' values, iterated straight from its tuple."""

    __slots__ = ()
    _mapping: _Stages

    def __iter__(self) -> Iterator[float]:
        return iter(self._mapping._values)


class _StageItems(ItemsView[str, float]):
    """A :class:`_Stages`' (name, value) pairs, paired in C."""

    __slots__ = ()
    _mapping: _Stages

    def __iter__(self) -> Iterator[tuple[str, float]]:
        stages = self._mapping
        return zip(stages._names, stages._values, strict=True)


_NO_STAGES: Mapping[str, float] = MappingProxyType({})


class ReportStream:
    """The report at ``path``, written case by case as a run's cases finish.

    Use as a context manager around the run: :meth:`add` each first-round case with its
    position in the golden set (any completion order), then :meth:`finish` with the run's
    report (whose cases are those added, without texts). Leaving the block without
    :meth:`finish` (an error, the run refused) removes the spool and leaves ``path`` as it
    was.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open the spool next to ``path``.

        Raises:
            OSError: the folder cannot be created or written.
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, spool = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".cases.tmp", dir=self.path.parent
        )
        self._spool_path = Path(spool)
        self._spool: BinaryIO = os.fdopen(fd, "w+b", buffering=_BUFFER)
        self._next = 0  # the golden-set position whose line is appended next
        self._pending: dict[int, bytes] = {}  # lines of cases that finished ahead of it
        self._lines = 0
        self._checked = 0  # checked cases whose label is not suspect
        self._suspect: dict[int, tuple[str, LabelAudit]] = {}
        self._failure: ValueError | OSError | None = None
        #: the run's label audit, once :meth:`finish` has written the report
        self.audit: AuditTotals | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Remove the spool (the report, if finished, stays)."""
        self._spool.close()
        with contextlib.suppress(OSError):
            self._spool_path.unlink()

    def add(self, index: int, record: CaseRecord) -> CaseRecord:
        """Audit and encode the case at golden-set position ``index``; what to keep of it.

        A case that cannot be encoded (NaN) or a spool that cannot be written (a full disk)
        fails the report at :meth:`finish`, as :func:`~evaluator.report.write.write_report`
        would fail after the run, not the run half-way.
        """
        audit = audit_record(record)
        if audit.suspect:
            self._suspect[index] = (record.id, audit)
        elif audit.checked:
            self._checked += 1
        if self._failure is None:
            try:
                self._place(index, _egress(_ENCODER.encode(_case_to_dict(record, audit))))
            except (ValueError, OSError) as exc:
                self._failure = exc
                self._pending.clear()
        return without_texts(record)

    def _place(self, index: int, line: str) -> None:
        """Append the line at ``index`` and every line waiting behind it, or keep it until
        the cases before it have finished."""
        if index != self._next:
            self._pending[index] = line.encode()
            return
        self._append(line.encode())
        self._next += 1
        while self._next in self._pending:
            self._append(self._pending.pop(self._next))
            self._next += 1

    def _append(self, line: bytes) -> None:
        if self._lines:
            self._spool.write(b",\n")
        self._spool.write(line)
        self._lines += 1

    def finish(self, report: RunReport) -> None:
        """Write the report: ``report``'s header, then the added cases in golden-set order.

        Raises:
            ValueError: a number is NaN or infinite; ``path`` is left as it was.
            OSError: the report cannot be written; ``path`` is left as it was.
        """
        if self._failure is not None:
            raise self._failure
        # an interrupted run: the cases after the first one that did not finish
        for index in sorted(self._pending):
            self._append(self._pending.pop(index))
        if self._lines != report.case_count:
            raise ValueError(f"{self._lines} cases were streamed for {report.case_count}")
        # the suspect cases in golden-set order, plus the checked ones counted as they came
        # (not one pair each through audit_labels: 100,000 iterations for a count)
        audit = audit_labels(self._suspect[i] for i in sorted(self._suspect))
        self.audit = dataclasses.replace(audit, checked=audit.checked + self._checked)
        self._spool.flush()
        with _atomic_file(self.path) as out:
            out.write(_header_chunk(_header_to_dict(report, self.audit)).encode())
            out.flush()
            _copy(self._spool, out, self._spool.tell())
            out.write(b"\n]}\n" if self._lines else b"]}\n")


def _copy(source: BinaryIO, target: BinaryIO, size: int) -> None:
    """Append ``size`` bytes of ``source`` (from its start) to ``target``: in the kernel
    where it can (no 200 MB through Python), else through a buffer."""
    offset = 0
    try:
        while offset < size:
            copied = os.copy_file_range(
                source.fileno(), target.fileno(), size - offset, offset_src=offset
            )
            if copied == 0:
                break
            offset += copied
    except OSError:
        pass  # another file system, an old kernel: the rest through a buffer
    # the kernel moved the file's offset, not the buffered writer's idea of it
    target.seek(0, os.SEEK_END)
    if offset < size:
        source.seek(offset)
        shutil.copyfileobj(source, target, _BUFFER)

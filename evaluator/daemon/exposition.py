"""A Prometheus exposition kept encoded: each job's series of a family re-encoded only when
one of them changes.

prometheus_client encodes a registry from scratch on every scrape, at microseconds per
series; 50 jobs are ~10,000 series, and while runs overlap something always changed, so a
whole-exposition cache never applies. Here the series of one family for one job (a *cell*)
keep their encoded lines until one of them changes, and a family keeps its joined bytes until
one of its cells changes: a scrape pays for what changed since the last one.

The same cells feed a prometheus_client collector (:meth:`Exposition.collect`); the bytes
served equal what prometheus_client's own encoders make of it (tests compare them), so the
format stays prometheus_client's. Headers (HELP, TYPE) come from those encoders directly.

Not thread-safe on its own: the owner (:class:`evaluator.daemon.exporter.Metrics`) holds one
lock around every change, encoding and collection.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate, chain
from typing import Literal

from prometheus_client.core import Metric
from prometheus_client.exposition import generate_latest as text_encoding
from prometheus_client.openmetrics import exposition as _om
from prometheus_client.samples import Exemplar, Sample
from prometheus_client.utils import floatToGoString as _float_to_go

__all__ = [
    "CLOCK_EVERY",
    "OPENMETRICS",
    "TEXT",
    "Cell",
    "CounterCell",
    "Exposition",
    "Family",
    "GaugeCell",
    "HistogramCell",
    "Kind",
]

Kind = Literal["counter", "gauge", "histogram", "info"]
#: the two encodings, as indexes of the per-format caches
TEXT, OPENMETRICS = 0, 1
_EOF = b"# EOF\n"
#: stale cells encoded between two readings of the clock in :meth:`Exposition.refresh`: a
#: stage histogram cell of one job (6 stages) is about 40 µs to encode, a reading 1 µs
CLOCK_EVERY = 4
#: above this, Go (and prometheus_client) write a float with an exponent; below, repr() is it
_REPR_LIMIT = 1e6

# prometheus_client's helpers are untyped; their types here
floatToGoString: Callable[[float], str] = _float_to_go
openmetrics_encoding: Callable[[_Collected], bytes] = _om.generate_latest


def _go(value: float) -> str:
    """``floatToGoString`` with its common case (finite, below a million) done inline."""
    if -math.inf < value < _REPR_LIMIT:
        return repr(value)
    return floatToGoString(value)


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _label_text(pairs: Iterable[tuple[str, str]]) -> str:
    """``{a="1",b="2"}`` with names sorted, as both encoders write labels ("" for none)."""
    inner = ",".join(f'{name}="{_escape(value)}"' for name, value in sorted(pairs))
    return "{" + inner + "}" if inner else ""


class _Collected:
    """A fixed list of families, to run prometheus_client's encoders on."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return self._metrics


class Family:
    """One metric family: its headers per format and its cells (one per job), in order.

    ``labels`` are the family's base label names (``target``, ``dataset``; none for a
    process-wide family); a cell adds its own extra label names.
    """

    def __init__(self, name: str, kind: Kind, help: str) -> None:
        self.name = name
        self.kind: Kind = kind
        self.help = help
        empty = Metric(name, help, kind)
        self.headers = (
            text_encoding(_Collected([empty])),
            openmetrics_encoding(_Collected([empty])).removesuffix(_EOF),
        )
        #: samples are named after the family, as prometheus_client names them
        self.sample_name = {"counter": f"{name}_total", "info": f"{name}_info"}.get(kind, name)
        self.cells: dict[tuple[str, ...], Cell] = {}
        self._joined: list[bytes | None] = [None, None]

    def add(self, key: tuple[str, ...], cell: Cell) -> None:
        self.cells[key] = cell
        self.invalidate()

    def remove(self, key: tuple[str, ...]) -> None:
        if self.cells.pop(key, None) is not None:
            self.invalidate()

    def invalidate(self) -> None:
        self._joined = [None, None]

    def stale(self, fmt: int) -> bool:
        return self._joined[fmt] is None

    def encoded(self, fmt: int) -> bytes:
        """The family's text: its headers and every cell's lines; nothing without a cell (a
        family no job has, as the judge's in a daemon without a judge, is not declared)."""
        joined = self._joined[fmt]
        if joined is None:
            cells = [c.encoded(fmt) for c in self.cells.values()]
            joined = b"".join([self.headers[fmt], *cells]) if cells else b""
            self._joined[fmt] = joined
        return joined

    def metric(self) -> Metric:
        """The family as prometheus_client represents it, every cell's samples in order."""
        metric = Metric(self.name, self.help, self.kind)
        for cell in self.cells.values():
            for name, labels, value, exemplar in cell.samples():
                metric.samples.append(Sample(name, labels, value, None, exemplar))
        return metric


class Cell:
    """The series of one family for one job, encoded once per change and format."""

    __slots__ = ("_encoded", "family", "labels")

    def __init__(self, family: Family, labels: Mapping[str, str]) -> None:
        self.family = family
        self.labels = dict(labels)
        self._encoded: list[bytes | None] = [None, None]

    def changed(self) -> None:
        """The one invalidation: this cell's lines and its family's joined bytes."""
        self._encoded = [None, None]
        self.family.invalidate()

    def stale(self, fmt: int) -> bool:
        return self._encoded[fmt] is None

    def encoded(self, fmt: int) -> bytes:
        data = self._encoded[fmt]
        if data is None:
            data = self._encoded[fmt] = self._encode(fmt).encode()
        return data

    def _encode(self, fmt: int) -> str:
        raise NotImplementedError

    def samples(self) -> Iterator[tuple[str, dict[str, str], float, Exemplar | None]]:
        raise NotImplementedError


class CounterCell(Cell):
    """Counters of one job, one per extra label values; ``names`` are the extra label names."""

    __slots__ = ("_names", "_prefixes", "_values")

    def __init__(
        self, family: Family, labels: Mapping[str, str], names: Sequence[str] = ()
    ) -> None:
        super().__init__(family, labels)
        self._names = tuple(names)
        self._values: dict[tuple[str, ...], float] = {}
        self._prefixes: dict[tuple[str, ...], str] = {}

    def create(self, extra: Sequence[str] = ()) -> None:
        """The series at zero, so it exists before its first increment."""
        key = tuple(extra)
        if key not in self._values:
            self._values[key] = 0.0
            labels = self._labels(key)
            self._prefixes[key] = f"{self.family.sample_name}{_label_text(labels.items())} "
            self.changed()

    def inc(self, extra: Sequence[str] = (), amount: float = 1.0) -> None:
        key = tuple(extra)
        self.create(key)
        self._values[key] += amount
        self.changed()

    def value(self, extra: Sequence[str] = ()) -> float | None:
        return self._values.get(tuple(extra))

    def discard(self, extra: Sequence[str]) -> None:
        """Withdraw one series (what it counted no longer exists, such as a dropped SLO)."""
        key = tuple(extra)
        if self._values.pop(key, None) is not None:
            del self._prefixes[key]
            self.changed()

    def series(self) -> list[tuple[str, ...]]:
        """The extra label values of every series, in exposition order."""
        return list(self._values)

    def _labels(self, extra: tuple[str, ...]) -> dict[str, str]:
        return {**self.labels, **dict(zip(self._names, extra, strict=True))}

    def _encode(self, fmt: int) -> str:
        prefixes = self._prefixes
        return "".join([f"{prefixes[k]}{_go(v)}\n" for k, v in self._values.items()])

    def samples(self) -> Iterator[tuple[str, dict[str, str], float, Exemplar | None]]:
        for key, value in self._values.items():
            yield self.family.sample_name, self._labels(key), value, None


class GaugeCell(Cell):
    """Gauges (or an info) of one job, replaced whole: ``(extra label values, value)`` pairs."""

    __slots__ = ("_names", "_samples")

    def __init__(
        self, family: Family, labels: Mapping[str, str], names: Sequence[str] = ()
    ) -> None:
        super().__init__(family, labels)
        self._names = tuple(names)
        self._samples: list[tuple[tuple[str, ...], float]] = []

    def set(self, samples: Iterable[tuple[Sequence[str], float]]) -> None:
        new = [(tuple(extra), float(value)) for extra, value in samples]
        if new != self._samples:
            self._samples = new
            self.changed()

    def _labels(self, extra: tuple[str, ...]) -> dict[str, str]:
        return {**self.labels, **dict(zip(self._names, extra, strict=True))}

    def _encode(self, fmt: int) -> str:
        name = self.family.sample_name
        return "".join(
            f"{name}{_label_text(self._labels(extra).items())} {_go(value)}\n"
            for extra, value in self._samples
        )

    def samples(self) -> Iterator[tuple[str, dict[str, str], float, Exemplar | None]]:
        for extra, value in self._samples:
            yield self.family.sample_name, self._labels(extra), value, None


class _Histogram:
    """One histogram series: counts per bucket (not cumulative), sum, the latest exemplar
    per bucket, and its lines as %-templates built once."""

    __slots__ = ("_bounds", "_exemplar_text", "_templates", "counts", "exemplars", "sum")

    def __init__(self, name: str, labels: dict[str, str], bounds: Sequence[float]) -> None:
        self._bounds = bounds
        self.counts = [0.0] * len(bounds)
        self.sum = 0.0
        #: the latest exemplar per bucket as observed, (labels, value, Unix time): an
        #: Exemplar is built only when a scrape asks for samples (seven were built per case)
        self.exemplars: list[tuple[Mapping[str, str], float, float] | None] = [None] * len(bounds)
        self._exemplar_text = [""] * len(bounds)
        plain = _label_text(labels.items()).replace("%", "%%")
        buckets = [
            f"{name}_bucket{_label_text([*labels.items(), ('le', floatToGoString(b))])} "
            for b in bounds
        ]
        buckets = [b.replace("%", "%%") for b in buckets]
        # counts are whole numbers: below a million, "%d.0" writes what repr() would, without
        # a repr() per bucket; at a million and beyond, Go's exponent form (strings)
        self._templates: dict[tuple[int, bool], str] = {}
        for fast, count in ((True, "%d.0"), (False, "%s")):
            tail = f"{name}_count{plain} {count}\n{name}_sum{plain} %s\n"
            self._templates[TEXT, fast] = "".join(f"{b}{count}\n" for b in buckets) + tail
            self._templates[OPENMETRICS, fast] = "".join(f"{b}{count}%s\n" for b in buckets) + tail

    def observe(self, value: float, exemplar: Mapping[str, str] | None) -> None:
        # the first bucket whose bound is >= the value, as prometheus_client's Histogram;
        # a NaN goes into the sum only, as there
        self.sum += value
        if value != value:
            return
        i = bisect_left(self._bounds, value)
        self.counts[i] += 1.0
        if exemplar:
            # kept, not copied: the exporter makes one mapping per case and never changes it
            self.exemplars[i] = (exemplar, value, time.time())
            self._exemplar_text[i] = ""  # encoded on the next OpenMetrics scrape

    def cumulative(self) -> list[float]:
        return list(accumulate(self.counts))

    def encode(self, fmt: int) -> str:
        counts = self.cumulative()
        fast = counts[-1] < _REPR_LIMIT
        values: Sequence[float | str] = counts if fast else [_go(v) for v in counts]
        template = self._templates[fmt, fast]
        total = _go(self.sum)
        if fmt == TEXT:
            return template % (*values, values[-1], total)
        pairs = chain.from_iterable(zip(values, self._exemplar_texts(), strict=True))
        return template % (*pairs, values[-1], total)

    def _exemplar_texts(self) -> list[str]:
        texts = self._exemplar_text
        for i, exemplar in enumerate(self.exemplars):
            if exemplar is not None and not texts[i]:
                labels, value, timestamp = exemplar
                texts[i] = f" # {_label_text(labels.items())} {_go(value)} {timestamp}"
        return texts


class HistogramCell(Cell):
    """Histograms of one job, one per extra label values (a stage), created when first
    observed unless created ahead; ``bounds`` end with +Inf."""

    __slots__ = ("_bounds", "_le", "_names", "_series")

    def __init__(
        self,
        family: Family,
        labels: Mapping[str, str],
        bounds: Sequence[float],
        names: Sequence[str] = (),
    ) -> None:
        super().__init__(family, labels)
        self._bounds = tuple(bounds)
        self._le = [floatToGoString(b) for b in self._bounds]
        self._names = tuple(names)
        self._series: dict[tuple[str, ...], _Histogram] = {}

    def create(self, extra: Sequence[str] = ()) -> _Histogram:
        key = tuple(extra)
        series = self._series.get(key)
        if series is None:
            labels = {**self.labels, **dict(zip(self._names, key, strict=True))}
            series = self._series[key] = _Histogram(self.family.name, labels, self._bounds)
            self.changed()
        return series

    def observe(
        self, value: float, exemplar: Mapping[str, str] | None, extra: Sequence[str] = ()
    ) -> None:
        self.create(extra).observe(value, exemplar)
        self.changed()

    def _encode(self, fmt: int) -> str:
        return "".join([s.encode(fmt) for s in self._series.values()])

    def samples(self) -> Iterator[tuple[str, dict[str, str], float, Exemplar | None]]:
        name = self.family.name
        for key, series in self._series.items():
            labels = {**self.labels, **dict(zip(self._names, key, strict=True))}
            acc = series.cumulative()
            for le, count, kept in zip(self._le, acc, series.exemplars, strict=True):
                exemplar = None if kept is None else Exemplar(dict(kept[0]), kept[1], kept[2])
                yield f"{name}_bucket", {**labels, "le": le}, count, exemplar
            yield f"{name}_count", labels, acc[-1], None
            yield f"{name}_sum", labels, series.sum, None


class Exposition:
    """Families in exposition order; :meth:`refresh` encodes in slices, :meth:`body` serves.

    Example::

        runs = Family("rag_eval_runs", "counter", "Runs by outcome")
        exposition = Exposition([runs])
        cell = CounterCell(runs, {"target": "t", "dataset": "d"}, ["outcome"])
        runs.add(("t", "d"), cell)
        cell.inc(["complete"])
        exposition.body(openmetrics=False)   # b'# HELP rag_eval_runs_total ...'
    """

    def __init__(self, families: Sequence[Family]) -> None:
        self.families = tuple(families)

    def refresh(self, *, openmetrics: bool, budget_seconds: float) -> bool:
        """Encode stale cells, and join each family once its cells are encoded, until
        nothing is left (True) or the budget is spent (False), so a caller on an event loop
        can let other work run between slices. After True, :meth:`parts` only gathers kept
        bytes: with 100 jobs the families' joins were 1.6 MiB of copying, done in one go
        with the body's assembly after the last slice.

        The budget is this thread's CPU time, not wall time: on a busy machine the process
        is also descheduled mid-slice, and cutting the slice short then would only make the
        scrape wait for the loop again without sparing it any work. The clock is a system
        call, so it is read every ``CLOCK_EVERY`` cells.
        """
        fmt = OPENMETRICS if openmetrics else TEXT
        deadline = time.thread_time() + budget_seconds
        encoded = 0
        for family in self.families:
            if not family.stale(fmt):
                continue
            for cell in family.cells.values():
                if cell.stale(fmt):
                    cell.encoded(fmt)
                    encoded += 1
                    if encoded % CLOCK_EVERY == 0 and time.thread_time() > deadline:
                        return False
            family.encoded(fmt)  # a join: memory copied, about 0.1 ms a MiB
        return True

    def parts(self, *, openmetrics: bool) -> list[bytes]:
        """The whole exposition, family by family (OpenMetrics without its ``# EOF``: the
        caller ends it), for one join with whatever the caller adds."""
        fmt = OPENMETRICS if openmetrics else TEXT
        return [family.encoded(fmt) for family in self.families]

    def body(self, *, openmetrics: bool) -> bytes:
        return b"".join(self.parts(openmetrics=openmetrics))

    def collect(self) -> Iterator[Metric]:
        """Each family with a cell, as prometheus_client represents it (what /metrics serves)."""
        for family in self.families:
            if family.cells:
                yield family.metric()

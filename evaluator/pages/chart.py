"""A trend chart: a metric over a job's runs, on a time axis, with the lines it is judged by.

What the status page draws for each trend metric, as numbers an inline SVG template lays out
(no script, no external asset):

- the runs on a time axis: ``x`` is proportional to each run's finish time, a tick per run
  and a few labelled ticks (UTC), and the window's range in words;
- the y range written at both ends of the axis;
- horizontal :class:`Limit` lines: the baseline's value, the gate rules' limits against it,
  the shipped alerts' fixed thresholds;
- vertical :class:`Marker` lines where the configuration or the golden set changed (the
  config and dataset hashes history keeps per run), and where a change began.

Pure: rows and limits in, a :class:`Chart` out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from evaluator.pages.trend import TrendRun

__all__ = [
    "Chart",
    "Dot",
    "Limit",
    "Marker",
    "Tick",
    "hash_changes",
    "trend_chart",
]

#: labelled ticks on the time axis at most (a tick per run besides, unlabelled)
LABELLED_TICKS = 4
#: a run at most this far (in pixels) from a labelled tick gets no label of its own
_LABEL_GAP = 58.0

LimitKind = Literal["baseline", "gate", "alert"]


@dataclass(frozen=True, slots=True)
class Limit:
    """A horizontal line on one metric's chart: a value it is judged against.

    ``bad_above``: crossing the line upwards is the bad side (a ceiling); else downwards.
    """

    metric: str
    value: float
    kind: LimitKind
    label: str
    bad_above: bool = False


@dataclass(frozen=True, slots=True)
class DrawnLimit:
    limit: Limit
    y: float
    #: the value as the metric is written
    text: str


@dataclass(frozen=True, slots=True)
class Marker:
    """A vertical line at one run: ``kind`` config, dataset (golden set) or began."""

    x: float
    kind: Literal["config", "dataset", "began"]
    run_id: str
    label: str


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    #: empty: an unlabelled tick
    label: str
    anchor: Literal["start", "middle", "end"] = "middle"


@dataclass(frozen=True, slots=True)
class Dot:
    """One run's value: where it is drawn, and what its tooltip says."""

    x: float
    y: float
    outcome: str
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    metric: str
    width: int
    height: int
    #: the plot area: left, top, right, bottom
    box: tuple[float, float, float, float]
    points: str
    dots: list[Dot]
    ticks: list[Tick]
    #: the y range's ends as written (bottom, top)
    y_low: str
    y_high: str
    limits: list[DrawnLimit]
    markers: list[Marker]
    #: the window in words: how many runs, from when to when
    window: str
    count: int
    last: float | None
    low: float | None
    high: float | None
    end: tuple[float, float] | None = None


#: a window shorter than this labels its ticks to the second (runs minutes apart would all
#: read the same minute)
_SECONDS_SPAN = 600.0


def _time(at: float, *, with_date: bool, with_seconds: bool = False) -> str:
    moment = datetime.fromtimestamp(at, UTC)
    if with_date:
        return moment.strftime("%m-%d %H:%M")
    return moment.strftime("%H:%M:%S" if with_seconds else "%H:%M")


def _window(rows: Sequence[TrendRun]) -> str:
    if not rows:
        return ""
    first, last = rows[0].finished_at, rows[-1].finished_at
    start = datetime.fromtimestamp(first, UTC)
    end = datetime.fromtimestamp(last, UTC)
    same_day = start.date() == end.date()
    runs = f"{len(rows)} run{'s' if len(rows) != 1 else ''}"
    span = (
        f"{start:%Y-%m-%d %H:%M} – {end:%H:%M} UTC"
        if same_day
        else (f"{start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M} UTC")
    )
    return f"{runs}, {span}"


def hash_changes(rows: Sequence[TrendRun]) -> list[tuple[int, Literal["config", "dataset"], str]]:
    """Where the configuration or the golden set changed: (index, kind, words), oldest first.

    A run whose dataset hash differs from the run before it changed the golden set (its config
    hash, which covers the dataset's content, changes too: one marker, the golden set's);
    a run whose config hash alone differs changed the configuration (target, K, scoring,
    evaluator version). Rows without hashes (this process's runs before history) mark nothing.
    """
    out: list[tuple[int, Literal["config", "dataset"], str]] = []
    for i in range(1, len(rows)):
        before, now = rows[i - 1], rows[i]
        if before.dataset_hash and now.dataset_hash and before.dataset_hash != now.dataset_hash:
            out.append(
                (
                    i,
                    "dataset",
                    f"golden set changed ({before.dataset_hash[:8]} → {now.dataset_hash[:8]})",
                )
            )
        elif before.config_hash and now.config_hash and before.config_hash != now.config_hash:
            out.append(
                (i, "config", f"config changed ({before.config_hash[:8]} → {now.config_hash[:8]})")
            )
    return out


def _spans_days(times: Sequence[float]) -> bool:
    """Whether the window crosses a date: its tick labels then carry the date."""
    if times[-1] - times[0] >= 86400:
        return True
    first = datetime.fromtimestamp(times[0], UTC).date()
    return first != datetime.fromtimestamp(times[-1], UTC).date()


def _labelled(xs: Sequence[float], gap: float) -> dict[int, Literal["start", "middle", "end"]]:
    """Which ticks carry a label: the first, the last, and up to :data:`LABELLED_TICKS`
    evenly between, none closer than ``gap`` to another. Runs at one instant are drawn at the
    right edge (:meth:`_Plot.x`): one label, ending there, inside the chart."""
    if xs[-1] - xs[0] <= 0:
        return {len(xs) - 1: "end"}
    labelled: dict[int, Literal["start", "middle", "end"]] = {0: "start"}
    if len(xs) > 1:
        labelled[len(xs) - 1] = "end"
    for step in range(1, LABELLED_TICKS - 1):
        i = round(step * (len(xs) - 1) / (LABELLED_TICKS - 1))
        if all(abs(xs[i] - xs[j]) >= gap for j in labelled):
            labelled[i] = "middle"
    return labelled


def _ticks(xs: Sequence[float], times: Sequence[float]) -> list[Tick]:
    """A tick per run; labels on the first and last run and evenly between, never crowded."""
    if not xs:
        return []
    with_date = _spans_days(times)
    with_seconds = times[-1] - times[0] < _SECONDS_SPAN
    gap = _LABEL_GAP * (1.6 if with_date else 1.3 if with_seconds else 1.0)
    labelled = _labelled(xs, gap)
    return [
        Tick(
            x,
            _time(times[i], with_date=with_date, with_seconds=with_seconds)
            if i in labelled
            else "",
            labelled.get(i, "middle"),
        )
        for i, x in enumerate(xs)
    ]


def _y_range(
    values: Sequence[float], floor: float | None, ceiling: float | None
) -> tuple[float, float]:
    """The y axis's ends: every value drawn (runs and lines), widened to ``floor`` and
    ``ceiling``; a flat range is opened so the line sits at the bottom, not in a slit."""
    low, high = min(values), max(values)
    if floor is not None:
        low = min(low, floor)
    if ceiling is not None:
        high = max(high, ceiling)
    if high - low < 1e-12:
        high = low + (abs(low) or 1.0)
    return low, high


@dataclass(frozen=True, slots=True)
class _Plot:
    """Where values and times land in the plot area (``box``: left, top, right, bottom)."""

    box: tuple[float, float, float, float]
    low: float
    high: float
    t0: float
    t1: float

    def y(self, value: float) -> float:
        """The height of ``value`` (the y range's ends at the box's bottom and top)."""
        _, top, _, bottom = self.box
        return round(bottom - (bottom - top) * (value - self.low) / (self.high - self.low), 1)

    def x(self, at: float) -> float:
        """The place of a finish time on the time axis (one instant: the right edge)."""
        left, _, right, _ = self.box
        if self.t1 - self.t0 <= 0:
            return right
        return round(left + (right - left) * (at - self.t0) / (self.t1 - self.t0), 1)


def _markers(rows: Sequence[TrendRun], xs: Sequence[float], began: str | None) -> list[Marker]:
    """A vertical line at each configuration or golden-set change, and where the change
    began (when that run is drawn)."""
    markers = [
        Marker(xs[i], kind, rows[i].run_id, f"{label} at run {rows[i].run_id}")
        for i, kind, label in hash_changes(rows)
    ]
    at = next((i for i, r in enumerate(rows) if r.run_id == began), None)
    if began is not None and at is not None:
        markers.append(Marker(xs[at], "began", began, f"the change began at run {began}"))
    return markers


def _dots(
    rows: Sequence[TrendRun],
    kept: Sequence[tuple[int, float]],
    xs: Sequence[float],
    plot: _Plot,
    fmt: Callable[[float | None], str],
) -> list[Dot]:
    """Each run with a value, with its tooltip: run, time, value and outcome."""
    return [
        Dot(
            xs[i],
            plot.y(v),
            rows[i].outcome,
            f"{rows[i].run_id} · {_time(rows[i].finished_at, with_date=True)} UTC · {fmt(v)}"
            f" · {rows[i].outcome}",
        )
        for i, v in kept
    ]


def _values(rows: Sequence[TrendRun], metric: str) -> list[tuple[int, float]]:
    """(row index, value) of each run with a finite value of ``metric``."""
    return [
        (i, v)
        for i, r in enumerate(rows)
        if (v := r.metrics.get(metric)) is not None and math.isfinite(v)
    ]


def _limits_of(limits: Sequence[Limit], metric: str) -> list[Limit]:
    """The lines drawn on ``metric``'s chart (a line without a finite value is not)."""
    return [lim for lim in limits if lim.metric == metric and math.isfinite(lim.value)]


def _points(coords: Sequence[tuple[float, float]], left: float) -> str:
    """The polyline through the runs' values; one value is drawn level from the left edge."""
    line = coords if len(coords) > 1 else [(left, coords[0][1]), coords[0]]
    return " ".join(f"{x:g},{y:g}" for x, y in line)


def trend_chart(
    metric: str,
    rows: Sequence[TrendRun],
    *,
    fmt: Callable[[float | None], str],
    limits: Sequence[Limit] = (),
    floor: float | None = 0.0,
    ceiling: float | None = None,
    began: str | None = None,
    width: int = 300,
    height: int = 120,
) -> Chart | None:
    """The chart of ``metric`` over ``rows`` (oldest first); None when no run has a value.

    The y range covers the values and every limit, widened to ``floor`` / ``ceiling`` (ratios
    pass 0 and 1, so a flat 0.9 is no cliff). ``began``: the run id where a change began,
    marked. ``fmt`` writes a value as the page does (ratios to 4 places, durations in units).
    """
    kept = _values(rows, metric)
    if not kept:
        return None
    numbers = [v for _, v in kept]
    shown = _limits_of(limits, metric)
    low, high = _y_range(numbers + [lim.value for lim in shown], floor, ceiling)
    times = [r.finished_at for r in rows]
    # room on the left for the y range's labels ("250.0ms"), below for the times
    box = (52.0, 8.0, width - 8.0, height - 20.0)
    plot = _Plot(box, low, high, times[0], times[-1])
    xs = [plot.x(t) for t in times]
    coords = [(xs[i], plot.y(v)) for i, v in kept]
    return Chart(
        metric=metric,
        width=width,
        height=height,
        box=box,
        points=_points(coords, box[0]),
        dots=_dots(rows, kept, xs, plot, fmt),
        ticks=_ticks(xs, times),
        y_low=fmt(low) if low else "0",  # "0µs" and "0.0000" say no more than 0
        y_high=fmt(high),
        limits=[DrawnLimit(lim, plot.y(lim.value), fmt(lim.value)) for lim in shown],
        markers=_markers(rows, xs, began),
        window=_window(rows),
        count=len(kept),
        last=numbers[-1],
        low=min(numbers),
        high=max(numbers),
        end=coords[-1],
    )

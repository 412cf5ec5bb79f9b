"""Trend lines: a metric's recent values as the points of a small inline SVG polyline.

Where the values come from is a :class:`TrendSource`: the history store when the daemon has
one, else the runs this process made (:class:`RecentRuns`). Both answer ``runs()`` the same
way: rows newest first, each with its finish time, outcome and metric values.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluator.metrics import METRICS

__all__ = ["TREND_METRICS", "RecentRuns", "RunPoint", "Sparkline", "TrendSource", "sparkline"]

#: the metrics drawn on the status page, in order: the registry's ``trend`` entries
TREND_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.trend)


@dataclass(frozen=True, slots=True)
class RunPoint:
    """One finished run as a trend needs it (the shape of the history store's run rows)."""

    run_id: str
    finished_at: float
    outcome: str
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    #: the run's configuration identity and golden set content (the report's hashes)
    config_hash: str = ""
    dataset_hash: str = ""


class RunRow(Protocol):
    """What a trend reads from a run row (history's ``RunRow`` and :class:`RunPoint`)."""

    @property
    def run_id(self) -> str: ...

    @property
    def finished_at(self) -> float: ...

    @property
    def outcome(self) -> str: ...

    @property
    def metrics(self) -> Mapping[str, float | None]: ...

    @property
    def config_hash(self) -> str: ...

    @property
    def dataset_hash(self) -> str: ...


class TrendSource(Protocol):
    """Runs of a job, newest first; the history store's read API has this method."""

    def runs(self, target: str, dataset: str, *, limit: int = 200) -> Sequence[RunRow]: ...


class RecentRuns:
    """The last ``keep`` runs of each job made by this process, in memory."""

    def __init__(self, keep: int = 60) -> None:
        self.keep = keep
        self._runs: dict[tuple[str, str], deque[RunPoint]] = {}

    def add(self, target: str, dataset: str, point: RunPoint) -> None:
        self._runs.setdefault((target, dataset), deque(maxlen=self.keep)).append(point)

    def runs(self, target: str, dataset: str, *, limit: int = 200) -> list[RunPoint]:
        points = self._runs.get((target, dataset), ())
        return list(reversed(points))[:limit]


@dataclass(frozen=True, slots=True)
class Sparkline:
    """A polyline in a ``width`` x ``height`` box, with the numbers it was drawn from."""

    points: str
    width: int
    height: int
    count: int
    last: float | None
    low: float | None
    high: float | None
    #: x, y of the newest value: drawn as a dot
    end: tuple[float, float] | None


def sparkline(
    values: Sequence[float | None],
    *,
    width: int = 160,
    height: int = 32,
    floor: float | None = None,
    ceiling: float | None = None,
) -> Sparkline:
    """Points of a polyline through ``values`` (oldest first); None and non-finite skipped.

    The y range is the values' own range, widened to ``floor``/``ceiling`` when given (ratios
    pass 0 and 1 so a flat 0.9 does not look like a cliff). A single value is a flat line.
    """
    kept = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if not kept:
        return Sparkline("", width, height, 0, None, None, None, None)
    numbers = [v for _, v in kept]
    low, high = min(numbers), max(numbers)
    bottom = min(low, floor) if floor is not None else low
    top = max(high, ceiling) if ceiling is not None else high
    span = top - bottom
    pad = 2.0
    steps = max(len(values) - 1, 1)
    coords: list[tuple[float, float]] = []
    for i, v in kept:
        x = pad + (width - 2 * pad) * (i / steps if len(values) > 1 else 1.0)
        # a flat series (one value, or all equal without bounds) runs through the middle
        y = pad + (height - 2 * pad) * (1 - (v - bottom) / span) if span else height / 2
        coords.append((round(x, 1), round(y, 1)))
    if len(coords) == 1:
        coords.insert(0, (pad, coords[0][1]))
    points = " ".join(f"{x:g},{y:g}" for x, y in coords)
    return Sparkline(points, width, height, len(kept), numbers[-1], low, high, coords[-1])

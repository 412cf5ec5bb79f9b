"""Trend lines' data: a metric's recent runs, for the charts :mod:`evaluator.pages.chart` draws.

Where the values come from is a :class:`TrendSource`: the history store when the daemon has
one, else the runs this process made (:class:`RecentRuns`). Both answer ``runs()`` the same
way: rows newest first, each with its finish time, outcome and metric values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluator.metrics import METRICS

__all__ = ["TREND_METRICS", "RecentRuns", "RunPoint", "TrendSource"]

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

"""Trend lines' data: a metric's recent runs, for the charts :mod:`evaluator.pages.chart` draws.

Where the values come from is a :class:`TrendSource`: the history store when the daemon has
one, else the runs the daemon's job published (:class:`RunPoint`). Both answer ``runs()`` the
same way: rows newest first, each with its finish time, outcome and metric values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluator.metrics import METRICS

__all__ = ["TREND_METRICS", "RunPoint", "TrendRun", "TrendSource"]

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


class TrendRun(Protocol):
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

    def runs(self, target: str, dataset: str, *, limit: int = 200) -> Sequence[TrendRun]: ...

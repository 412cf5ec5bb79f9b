"""The daemon's side of the history store: writes and reads in one worker thread, never on
the event loop, and a store that breaks is counted and logged while the daemon runs on.

A corrupt file (not SQLite, malformed, another schema) is moved aside as
``history.sqlite3.corrupt-<time>-<pid>`` and a fresh store started in its place, so the
history restarts rather than the daemon stopping; a locked store or a full disk loses that
run's history row only.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import structlog

from evaluator.history.job import JobHistory, job_history, run_row
from evaluator.history.outcome import CaseOutcome
from evaluator.history.store import (
    HISTORY_ERROR_KINDS,
    HistoryStore,
    RunRow,
    SloEventsRow,
    StoreCorrupt,
    malformed,
)
from evaluator.report import RunReport

__all__ = ["HISTORY_ERROR_KINDS", "HistoryRecorder", "HistorySettings", "Outcome"]

log = structlog.get_logger("evaluator.history")

T = TypeVar("T")


def _finished(run: dict[str, CaseOutcome]) -> float:
    return next(iter(run.values())).finished_at if run else float("inf")


@dataclass(frozen=True, slots=True)
class HistorySettings:
    window: int = 10
    recent: int = 3
    alpha: float = 0.05
    keep_runs: int = 3000
    max_age_days: float = 30.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one piece of work in the worker thread gave: the job's history and the errors."""

    history: JobHistory | None
    errors: tuple[str, ...] = ()


def _named_corruption(work: Callable[[], T], path: Path) -> T:
    """``work()``, with a malformed database file (not one that is locked or read-only)
    raised as :class:`StoreCorrupt` naming the file."""
    try:
        return work()
    except sqlite3.DatabaseError as exc:
        if malformed(exc):
            raise StoreCorrupt(f"{path}: {exc}") from exc
        raise


class HistoryRecorder:
    """Owns the store and the one thread that touches it (one writer, runs in order)."""

    def __init__(self, folder: Path, settings: HistorySettings) -> None:
        self.settings = settings
        self.store = HistoryStore(
            folder, keep_runs=settings.keep_runs, max_age_days=settings.max_age_days
        )
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history")
        #: per job, the latest complete runs (oldest first), touched by the worker thread only
        self._runs: dict[tuple[str, str], list[dict[str, CaseOutcome]]] = {}

    def _guarded(self, work: Callable[[], T], errors: list[str]) -> T | None:
        """Run ``work`` on the store; a corrupt file is moved aside and ``work`` tried again.
        Each failure's kind is appended to ``errors``; None when ``work`` did not succeed."""
        for attempt in (1, 2):
            try:
                return _named_corruption(work, self.store.path)
            except StoreCorrupt as exc:
                errors.append("corrupt")
                if not self._move_aside(exc) or attempt == 2:
                    return None
            except sqlite3.OperationalError as exc:
                kind = "locked" if "locked" in str(exc) or "busy" in str(exc) else "io"
                self._store_failed(kind, exc, errors)
                return None
            except (sqlite3.Error, OSError) as exc:
                self._store_failed("io", exc, errors)
                return None
        return None

    def _move_aside(self, exc: StoreCorrupt) -> bool:
        """Move the corrupt file aside for a fresh store; False when it cannot be moved."""
        try:
            aside = self.store.move_aside()
        except OSError as move_exc:
            log.error(
                "history_store_unusable",
                path=str(self.store.path),
                error=str(exc),
                move_error=str(move_exc),
            )
            return False
        log.error(
            "history_store_corrupt",
            path=str(self.store.path),
            error=str(exc),
            moved_to=str(aside),
            action="started a fresh store",
        )
        return True

    def _store_failed(self, kind: str, exc: Exception, errors: list[str]) -> None:
        """Count and log a store failure that is no corruption (locked, I/O)."""
        errors.append(kind)
        log.error("history_store_failed", path=str(self.store.path), kind=kind, error=str(exc))

    def _history(
        self,
        target: str,
        dataset: str,
        errors: list[str],
        latest: tuple[RunRow, dict[str, CaseOutcome]] | None = None,
    ) -> JobHistory | None:
        """The job's history from the runs in memory, read from the store only when they
        are not (at start, after a store error, when retention by age may have cut them).

        ``latest`` is the run just written: appended to the runs in memory rather than
        read back (a thousand-case window is thirteen thousand rows to rebuild).
        """
        s = self.settings
        size = s.window + s.recent
        key = (target, dataset)
        cached = self._runs.get(key)
        oldest_allowed = time.time() - s.max_age_days * 86400
        if cached is not None and (errors or (cached and _finished(cached[0]) < oldest_allowed)):
            cached = None
        if cached is not None and latest is not None:
            row, outcomes = latest
            if row.outcome == "complete":
                cached = [*cached, outcomes][-size:]
        elif cached is None:
            cached = self._guarded(lambda: self.store.complete_runs(target, dataset, size), errors)
        if cached is None:
            self._runs.pop(key, None)
            return None
        self._runs[key] = cached
        return job_history(cached, window=s.window, recent=s.recent, alpha=s.alpha)

    def record(
        self,
        target: str,
        dataset: str,
        report: RunReport,
        outcome: str,
        slo_events: Sequence[SloEventsRow] = (),
    ) -> Outcome:
        """Write a finished run (and its SLO events), then compute the job's history (call
        in :attr:`executor`)."""
        errors: list[str] = []
        row, outcomes = run_row(report, outcome)

        def write() -> None:
            self.store.record(
                target=target, dataset=dataset, run=row, outcomes=outcomes, slo_events=slo_events
            )

        self._guarded(write, errors)
        history = self._history(target, dataset, errors, (row, outcomes))
        return Outcome(history, tuple(errors))

    def record_slo_events(
        self,
        target: str,
        dataset: str,
        report: RunReport,
        slo_events: Sequence[SloEventsRow],
    ) -> Outcome:
        """Write SLO events of a run :meth:`record` already wrote (its judged SLOs', once
        its judge is done), at the run's time (call in :attr:`executor`); the history is
        unchanged (None in the outcome)."""
        errors: list[str] = []
        finished_at = report.generated_at.timestamp()  # the run's row's (run_row)

        def write() -> None:
            self.store.record_slo_events(
                target=target, dataset=dataset, finished_at=finished_at, slo_events=slo_events
            )

        self._guarded(write, errors)
        return Outcome(None, tuple(errors))

    def load(self, target: str, dataset: str) -> Outcome:
        """The job's history as kept before a restart (call in :attr:`executor`)."""
        errors: list[str] = []
        self._runs.pop((target, dataset), None)
        return Outcome(self._history(target, dataset, errors), tuple(errors))

    def load_slo_events(
        self, windows: Mapping[str, int]
    ) -> tuple[dict[str, list[tuple[float, int, int]]], tuple[str, ...]]:
        """Each SLO's events kept over its window (by name, ``windows`` its seconds), and
        the store's errors (call in :attr:`executor`)."""
        errors: list[str] = []
        now = time.time()
        kept: dict[str, list[tuple[float, int, int]]] = {}
        for slo, seconds in windows.items():

            def read(slo: str = slo, seconds: int = seconds) -> list[tuple[float, int, int]]:
                return self.store.slo_events(slo, now - seconds)

            kept[slo] = self._guarded(read, errors) or []
        return kept, tuple(errors)

    def close(self) -> None:
        """Finish queued writes, then stop the thread."""
        self.executor.shutdown(wait=True)

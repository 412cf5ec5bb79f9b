"""An SLO's ledger of events: runs added, read over any window, dropped past the SLO's,
restored after a restart from the history store."""

from __future__ import annotations

import threading
from pathlib import Path

from evaluator.history.store import HistoryStore, RunRow, SloEventsRow
from evaluator.slo.ledger import EventLedger
from evaluator.slo.sli import Events


def test_the_events_since_a_time_add_up_the_runs_that_ended_then_or_later() -> None:
    """Each run is one entry; a window counts the runs that ended within it."""
    ledger = EventLedger(3600)
    for at, good, bad in ((100.0, 9, 1), (200.0, 8, 2), (300.0, 7, 3)):
        ledger.add(at, Events(good, bad))
    assert Events(24, 6) == ledger.since(0.0)
    assert Events(15, 5) == ledger.since(200.0)
    assert Events() == ledger.since(301.0)


def test_runs_older_than_the_window_are_dropped() -> None:
    """A run that ended more than a window before the latest one is gone."""
    ledger = EventLedger(100)
    ledger.add(0.0, Events(1, 1))
    ledger.add(100.0, Events(2, 2))
    ledger.add(150.0, Events(3, 3))
    assert Events(5, 5) == ledger.since(-1e9)


def test_a_restore_merges_what_was_kept_with_what_came_since() -> None:
    """Entries read back after a restart join those added meanwhile, in time order."""
    ledger = EventLedger(1000)
    ledger.add(500.0, Events(5, 0))
    ledger.restore([(100.0, 1, 0), (300.0, 3, 1)])
    assert Events(9, 1) == ledger.since(0.0)
    assert Events(8, 1) == ledger.since(200.0)


def test_adding_and_reading_from_two_threads_loses_nothing() -> None:
    """The event loop adds while the pages' thread reads: every entry counted once."""
    ledger = EventLedger(10**9)

    def add(offset: int) -> None:
        for i in range(2000):
            ledger.add(float(offset + 2 * i), Events(1, 0))

    threads = [threading.Thread(target=add, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        assert ledger.since(0.0).bad == 0
    assert Events(4000, 0) == ledger.since(0.0)


def _run(run_id: str, at: float) -> RunRow:
    return RunRow(run_id, at, "complete", 1, 1, 0, "d", "c", {})


def test_the_history_store_keeps_each_slos_events_for_its_window(tmp_path: Path) -> None:
    """Written with each run, read back per SLO since a time; an SLO's rows older than its
    window are pruned at the next write."""
    store = HistoryStore(tmp_path)
    rows = [SloEventsRow("answers", 9, 1, 1000), SloEventsRow("errors", 10, 0, 100)]
    store.record(target="t", dataset="d", run=_run("r1", 0.0), outcomes={}, now=0.0,
                 slo_events=rows)  # fmt: skip
    store.record(target="t", dataset="d", run=_run("r2", 500.0), outcomes={}, now=500.0,
                 slo_events=rows)  # fmt: skip
    assert [(0.0, 9, 1), (500.0, 9, 1)] == store.slo_events("answers", since=0.0)
    assert [(500.0, 10, 0)] == store.slo_events("errors", since=0.0)
    assert [(500.0, 9, 1)] == store.slo_events("answers", since=1.0)
    ledger = EventLedger(1000)
    ledger.restore(store.slo_events("answers", since=-500.0))
    assert Events(18, 2) == ledger.since(0.0)

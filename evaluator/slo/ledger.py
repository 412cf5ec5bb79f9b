"""One SLO's events, run by run, for as long as its window holds them: what the status page
reads an SLO's budget and burn rates from, the same arithmetic Prometheus does over the
counters (docs/slo.md).

Each finished run adds one entry (when it ended, its good and bad events); entries older
than the window are dropped as new ones come. The daemon keeps one ledger per SLO, adds to
it from the event loop and reads it from the pages' thread, so every access holds a lock.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable

from evaluator.slo.sli import Events

__all__ = ["EventLedger"]


class EventLedger:
    """The events of one SLO's runs over its last ``window_seconds``.

    Example::

        ledger = EventLedger(86400)
        ledger.add(1000.0, Events(good=97, bad=3))
        ledger.since(900.0)      # Events(good=97, bad=3)
    """

    def __init__(self, window_seconds: int) -> None:
        self.window_seconds = window_seconds
        self._lock = threading.Lock()
        #: (when the run ended, good, bad), oldest first
        self._entries: list[tuple[float, int, int]] = []

    def add(self, at: float, events: Events) -> None:
        """A run that ended at ``at`` counted ``events``; what fell out of the window goes."""
        with self._lock:
            bisect.insort(self._entries, (at, events.good, events.bad))
            self._drop_before(self._entries[-1][0] - self.window_seconds)

    def restore(self, entries: Iterable[tuple[float, int, int]]) -> None:
        """Entries kept from before a restart (the history store's), merged with any added."""
        with self._lock:
            self._entries = sorted({*self._entries, *entries})
            if self._entries:
                self._drop_before(self._entries[-1][0] - self.window_seconds)

    def since(self, start: float) -> Events:
        """The events of the runs that ended at ``start`` or later."""
        with self._lock:
            first = bisect.bisect_left(self._entries, (start, -1, -1))
            kept = self._entries[first:]
        return Events(sum(e[1] for e in kept), sum(e[2] for e in kept))

    def _drop_before(self, start: float) -> None:
        first = bisect.bisect_left(self._entries, (start, -1, -1))
        if first:
            del self._entries[:first]

"""The garbage-collector policy of the commands (``run``, ``gate``, ``serve``), in one place.

A batch command builds hundreds of thousands of long-lived objects that form no cycle (a
golden set, a run's records, two reports read back) and then exits. CPython's cyclic
collector visits every new container at least once, so with large inputs its passes cost a
tenth of the command's time and find nothing. Reference counting frees everything as
usual either way.

- Work that makes cycles (a run: asyncio tasks, aiohttp's connections, tracebacks of
  failed calls) keeps the collector, collecting the youngest generation every
  :data:`YOUNG_THRESHOLD` allocations instead of 700: the same cycles, found in fewer
  passes.
- Work that makes none (reading and judging saved reports: decoding and building records)
  runs without it (``cycles=False``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "batch_gc", "freeze_startup"]

#: allocations between two collections of the youngest generation (CPython's default: 700)
YOUNG_THRESHOLD = 100_000


@contextmanager
def batch_gc(*, cycles: bool = True) -> Iterator[None]:
    """The batch policy inside the block (``cycles``: whether the work in it can make
    reference cycles); the collector's previous state comes back after it."""
    saved = gc.get_threshold()
    enabled = gc.isenabled()
    if cycles:
        gc.set_threshold(max(YOUNG_THRESHOLD, saved[0]), *saved[1:])
    else:
        gc.disable()
    try:
        yield
    finally:
        if not cycles:
            # what the block built is aged into the oldest generation without a pass over
            # it: the first young collection after the pause would otherwise walk it all
            gc.freeze()
            gc.unfreeze()
        gc.set_threshold(*saved)
        if enabled:
            gc.enable()


def freeze_startup() -> None:
    """The daemon's policy: the interpreter's thresholds, and what exists before the first
    run (the modules, their functions and classes, the settings: about 80,000 objects, none
    of them ever garbage) out of the collector's sight for good.

    Each full collection walks every tracked object, and in a daemon with 100 jobs one came
    every few seconds at the end of a cycle, each stopping the event loop for 36-75 ms while
    cases were being timed; half of what it walked was the start-up's.
    """
    gc.freeze()

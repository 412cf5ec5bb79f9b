"""The garbage-collector policy of the batch commands (``run``, ``gate``), in one place.

A batch command builds hundreds of thousands of long-lived objects that form no cycle (a
golden set, a run's records, two reports read back) and then exits. With CPython's default
thresholds the cyclic collector walks the young objects every 700 allocations, and the
older generations again as they fill, so most of its passes re-walk what the command just
built. Inside :func:`batch_gc` the youngest generation is collected every
:data:`YOUNG_THRESHOLD` allocations instead: cycles (a run's asyncio tasks and tracebacks
make some) are still found, in fewer, larger passes. Reference counting frees everything
as usual. The daemon keeps the interpreter's defaults.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "batch_gc"]

#: allocations between two collections of the youngest generation (CPython's default: 700)
YOUNG_THRESHOLD = 100_000


@contextmanager
def batch_gc() -> Iterator[None]:
    """Collect less often inside the block; the previous thresholds come back after it."""
    saved = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, saved[0]), *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)

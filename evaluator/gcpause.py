"""Pause CPython's cyclic garbage collector around bulk, cycle-free work.

Reading, summarising, gating and writing a 100,000-case report allocate millions of small
objects (records, score tuples, dicts) that never form reference cycles and mostly live on.
Every allocation burst makes the collector walk the objects already alive, so with a large
report in memory these passes cost more than the work itself: ``summarise`` of 100,000
cases took 4.5 s with the collector running and 1.0 s without it. Reference counting still
frees everything as usual; only the search for cycles waits until the outermost pause ends.

The pause is counted, so nested and concurrent uses (worker threads of the daemon) keep the
collector off until the last one ends, and leave it as they found it when it was already off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector off inside the block (reference counting is unaffected)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


_frozen_depth = 0


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Leave every object alive now out of the collector's passes inside the block
    (``gc.freeze``; counted, so ``gc.unfreeze`` comes when the outermost block ends).

    For what a command builds once and keeps, cycle-free: a 100,000-case golden set's
    cases, tuples and dicts were walked again by every older-generation collection of the
    run that follows (the first one after loading took ~0.1 s). Reference counting still
    frees them as usual.
    """
    global _frozen_depth
    with _lock:
        if _frozen_depth == 0:
            gc.freeze()
        _frozen_depth += 1
    try:
        yield
    finally:
        with _lock:
            _frozen_depth -= 1
            if _frozen_depth == 0:
                gc.unfreeze()


def without_gc(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator: run ``function`` inside :func:`gc_paused`."""

    @wraps(function)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with gc_paused():
            return function(*args, **kwargs)

    return paused


#: the youngest generation's threshold while a run is in flight (CPython's default: 700)
RUN_GEN0_THRESHOLD = 10_000

_relaxed_depth = 0
_saved_thresholds: tuple[int, int, int] | None = None


@contextmanager
def gc_relaxed(gen0_threshold: int = RUN_GEN0_THRESHOLD) -> Iterator[None]:
    """Collect the youngest generation less often inside the block (counted, like
    :func:`gc_paused`; the previous thresholds come back when the last block ends).

    During a run, each young collection walks the objects of the requests in flight
    (coroutines, tasks, contexts, parser state: about a thousand at concurrency 50), and
    with the default threshold that walk came every few cases: ~1 ms of CPU each time,
    4% of a zero-latency run. Cycles still get collected, only in larger batches; the
    young generation stays bounded by the threshold.
    """
    global _relaxed_depth, _saved_thresholds
    with _lock:
        if _relaxed_depth == 0:
            saved = gc.get_threshold()
            _saved_thresholds = (saved[0], saved[1], saved[2])
            if gen0_threshold > saved[0]:
                gc.set_threshold(gen0_threshold, saved[1], saved[2])
        _relaxed_depth += 1
    try:
        yield
    finally:
        with _lock:
            _relaxed_depth -= 1
            if _relaxed_depth == 0 and _saved_thresholds is not None:
                gc.set_threshold(*_saved_thresholds)
                _saved_thresholds = None

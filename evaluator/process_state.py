"""The state this process holds for its whole life, in one place: three values every thread
may read, each behind its own lock and replaced whole, never changed in place, and the named
worker threads that serve every job (:func:`worker`).

- :data:`redactor`: the redactor of every secret registered so far
  (:func:`evaluator.redaction.register_secrets` adds to it, :func:`evaluator.redaction.redactor`
  reads it);
- :data:`surrogates_replaced`: lone surrogates replaced by U+FFFD at the border
  (:mod:`evaluator.border` counts, the daemon exports the count);
- :data:`spans`: the installed OTLP span export (:func:`evaluator.run.otlp.install` and
  :func:`~evaluator.run.otlp.active`).

Nothing else is global: a job's state is an immutable snapshot swapped whole. This module
sits below every other layer (it imports nothing of the evaluator), so the modules that own
these concepts read and change them through it; the values' types are theirs, so a slot
holds ``Any`` and its owner's accessor says the type.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Slot", "redactor", "spans", "surrogates_replaced", "worker"]

T = TypeVar("T")


class Slot(Generic[T]):
    """One process-wide value: read without a lock (a reference read is atomic), changed
    under one."""

    __slots__ = ("_lock", "_value")

    def __init__(self, value: T) -> None:
        self._lock = threading.Lock()
        self._value = value

    def get(self) -> T:
        return self._value

    def change(self, how: Callable[[T], T]) -> T:
        """Replace the value by ``how(value)``, atomically; the new value."""
        with self._lock:
            self._value = how(self._value)
            return self._value

    def swap(self, value: T) -> T:
        """Replace the value by ``value``; the value it replaced."""
        with self._lock:
            old, self._value = self._value, value
            return old


#: an evaluator.redaction.Redactor; None until that module is first imported
redactor: Slot[Any] = Slot(None)
#: lone surrogates replaced by U+FFFD in this process so far
surrogates_replaced: Slot[int] = Slot(0)
#: an evaluator.run.otlp.CaseSpans, or None when no export is installed
spans: Slot[Any] = Slot(None)


@functools.cache
def worker(name: str) -> concurrent.futures.ThreadPoolExecutor:
    """The one thread named ``name``, shared by every job, started on first use.

    CPU-bound work off the event loop (scoring a long answer, framing a large stream line,
    encoding a report) still holds the GIL. In ``asyncio.to_thread``'s pool several such
    tasks at once take turns with the loop for it, and ``/healthz`` waits for all of them;
    in one thread per kind they queue, and the loop waits for one piece at most. Its users
    say why theirs is one of them.
    """
    return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"evaluator-{name}")

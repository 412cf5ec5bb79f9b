"""Leaving the ``evaluator`` process without tearing down what the command built.

After a 100,000-case run, freeing the report, the golden set and the interpreter's modules
one object at a time takes a noticeable part of a second, and nothing is gained by it: the
report is already on disk (fsynced and renamed), the terminal output already written. The
console script therefore ends with :func:`leave`: standard streams flushed, the ``atexit``
handlers run (logging's flush among them) exactly as a normal exit runs them, then
``os._exit`` with the command's code.

It only ever happens in the ``evaluator`` process itself (:func:`arm`, called by the
console script): code that calls ``evaluator.cli.main(argv)`` in its own process (the
tests, an embedding program) never leaves early. And it steps aside when another thread
still runs: a normal exit would wait for it, so :func:`leave` returns and the interpreter
exits as usual. So does a process being profiled or traced (``python -m cProfile``,
pyinstrument, coverage): those write their results after the script returns.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

__all__ = ["arm", "armed", "keep", "leave"]

_armed = False
#: what a command asked to outlive it: freed by the process's exit, not object by object
_kept: list[object] = []


def arm() -> None:
    """Let :func:`leave` end the process (the console script, never an embedding)."""
    global _armed
    _armed = True


def armed() -> bool:
    return _armed


def keep(value: object) -> None:
    """Hold ``value`` until the process ends, when :func:`leave` will end it; otherwise do
    nothing (an embedding frees it as usual)."""
    if _armed:
        _kept.append(value)


def leave(code: int) -> None:
    """End the process now with ``code`` if armed and no other thread runs; else return.

    What a normal exit does that matters is done first: the standard streams are flushed
    and the ``atexit`` handlers run. What is skipped is freeing every object and module.
    """
    if not _armed or threading.active_count() > 1:
        return
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return  # a profiler or tracer writes its results after this returns
    try:
        _flush()
    except (OSError, ValueError):
        return  # a closed pipe, a closed stream: reported as a normal exit reports it
    atexit._run_exitfuncs()  # runs each handler once (and forgets them), errors printed
    try:
        _flush()  # what the handlers printed
    finally:
        os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()

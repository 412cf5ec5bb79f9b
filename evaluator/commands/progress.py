"""A progress line for `evaluator run` and a live `evaluator gate`, on a terminal only.

``  57/138 cases  41.2/s  ETA 2s`` on stderr, rewritten in place at most ten times a second
and erased when the run ends, so the summary that follows is what stays on screen. Not a
terminal (CI logs, pipes, files): nothing is written, and stdout is never touched.
"""

from __future__ import annotations

import time
from typing import TextIO

from evaluator.models import CaseRecord

__all__ = ["Progress"]

#: redraws per second at most: a fast run must not spend its time printing
_REDRAW_SECONDS = 0.1


class Progress:
    """Counts finished cases; ``on_case`` fits :func:`evaluator.run.runner.run_dataset`."""

    def __init__(self, total: int, stream: TextIO, *, enabled: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self._started = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    def on_case(self, record: CaseRecord) -> None:
        self.done += 1
        now = time.monotonic()
        if self.enabled and (now - self._drawn >= _REDRAW_SECONDS or self.done == self.total):
            self._drawn = now
            self._draw(self.line(now - self._started))

    def line(self, elapsed: float) -> str:
        """``done/total cases  rate/s  ETA``: what the terminal shows."""
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = f"ETA {left / rate:.0f}s" if rate > 0 and left else "ETA -"
        return f"  {self.done}/{self.total} cases  {rate:.1f}/s  {eta}"

    def _draw(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """Erase the line, so the summary starts on a clean one."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

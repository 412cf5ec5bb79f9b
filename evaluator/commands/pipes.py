"""A standard stream whose reader went away: the rest of the output is dropped, quietly.

``evaluator gate ... | head`` closes the pipe after ten lines. A Unix tool then stops
writing and ends with the exit code its work earned (the gate's verdict), not with a
``BrokenPipeError``. Python ignores ``SIGPIPE``, so the first write after the reader left
raises; :class:`ClosedPipeGuard` catches it there, points the descriptor at ``/dev/null``
(so the interpreter's own flush at exit has nothing to complain about) and lets the
command finish.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import TextIO

__all__ = ["ClosedPipeGuard"]


class ClosedPipeGuard(io.TextIOBase):
    """Passes writes to ``inner`` until its reader has gone, then discards them."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                self.inner.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self.inner.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self.closed_by_reader = True
        # what is still buffered in ``inner`` would fail again at exit: the descriptor now
        # leads nowhere, so that flush succeeds and is lost, as the reader wanted
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.inner.fileno())
            os.close(devnull)

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.inner.encoding

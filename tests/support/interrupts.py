"""Children a test interrupts the way a terminal's Ctrl-C does, whatever the test runner did.

A CI runner, ``nohup`` and a shell's background job start the test run with SIGINT ignored,
and an ignored signal stays ignored across ``fork`` and ``exec``: a child started from there
never sees the SIGINT a test sends it, as it would under a terminal. The child resets SIGINT
to its default disposition before it runs the program (Python then installs its own
KeyboardInterrupt handler), so the test sees what a user at a terminal sees.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

__all__ = ["as_at_a_terminal", "reset_sigint"]

#: runs argv[1:] with SIGINT at its default disposition: the exec wrapper of a child
_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def as_at_a_terminal(argv: Sequence[str]) -> list[str]:
    """``argv`` (a program's path first) run with SIGINT reset to its default."""
    return [sys.executable, "-c", _SIGINT_DEFAULT, *argv]


def reset_sigint() -> None:
    """In a forked child, before its ``exec``: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

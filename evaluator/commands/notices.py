"""What a command tells the person at the terminal beside its output: warnings, on stderr.

stdout is the command's output (a summary, a report path, JSON for a script): a warning
there would end up in a pipe or a redirected file, and be missed on the screen when stdout
is redirected. Every command writes its warnings one way, ``evaluator: warning: ...``.
"""

from __future__ import annotations

import sys

__all__ = ["warn"]


def warn(message: str) -> None:
    """One warning line on stderr."""
    print(f"evaluator: warning: {message}", file=sys.stderr)

"""PASS and FAIL in colour on a terminal, never in a pipe, a file or with NO_COLOR set.

Colour is added to the finished text, line by line, so every renderer stays plain text and
tests compare plain text (https://no-color.org: any non-empty NO_COLOR turns it off).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

__all__ = ["colour_verdicts", "use_colour"]

_RED, _GREEN, _BOLD, _RESET = "\033[31m", "\033[32m", "\033[1m", "\033[0m"

_RULES = (
    (re.compile(r"^(FAIL)( .*)$"), _RED),
    (re.compile(r"^(pass)( .*)$"), _GREEN),
    (re.compile(r"^(gate FAILED)(:.*)$"), _BOLD + _RED),
    (re.compile(r"^(gate passed)(:.*)$"), _BOLD + _GREEN),
    (re.compile(r"^(verdict: FAIL)( .*)$"), _BOLD + _RED),
    (re.compile(r"^(verdict: PASS)( .*)$"), _BOLD + _GREEN),
)


def use_colour(stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` is a terminal that should get colour."""
    environ = os.environ if env is None else env
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def colour_verdicts(text: str) -> str:
    """``text`` with the verdict words of each line coloured (the rest unchanged)."""
    out = []
    for line in text.split("\n"):
        for pattern, colour in _RULES:
            match = pattern.match(line)
            if match:
                line = f"{colour}{match.group(1)}{_RESET}{match.group(2)}"
                break
        out.append(line)
    return "\n".join(out)

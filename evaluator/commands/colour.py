"""PASS and FAIL in colour on a terminal, never in a pipe, a file or with NO_COLOR set.

Colour is added to the finished text, line by line, so every renderer stays plain text and
tests compare plain text (https://no-color.org: any non-empty NO_COLOR turns it off).
"""

from __future__ import annotations

import re

__all__ = ["colour_verdicts"]

_RED, _GREEN, _BOLD, _RESET = "\033[31m", "\033[32m", "\033[1m", "\033[0m"

_RULES = (
    (re.compile(r"^(FAIL)( .*)$"), _RED),
    (re.compile(r"^(pass)( .*)$"), _GREEN),
    (re.compile(r"^(gate FAILED)(:.*)$"), _BOLD + _RED),
    (re.compile(r"^(gate passed)(:.*)$"), _BOLD + _GREEN),
    (re.compile(r"^(verdict: FAIL)( .*)$"), _BOLD + _RED),
    (re.compile(r"^(verdict: PASS)( .*)$"), _BOLD + _GREEN),
)


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

"""How a console example's expected output is compared with what the command printed.

The convention is documented at the top of ``docs/README.md``; this module is its
implementation. An expected block becomes one regular expression:

- a line that is only ``...`` matches any number of lines, none included;
- ``...`` inside a line matches any text on that line;
- ``<ms>`` a duration as the CLI prints one (``0.48ms``, ``12.2ms``, ``1.518s``, ``950µs``);
- ``<n>`` a number (``137``, ``0.9444``, ``+0.0200``, ``-21.4``, ``1,000``);
- ``<hash>`` a hexadecimal identifier of 6 or more digits (config hashes, run ids);
- ``<ts>`` an ISO-8601 timestamp (``2026-12-01T09:44:42Z``, fractions and offsets too);
- ``<port>`` a TCP port number;
- ``<id>`` one word of letters, digits, ``.``, ``_`` and ``-`` (run ids and the like).

Two or more spaces just before a placeholder match any run of spaces (a table column padded
to a value whose width varies). Trailing whitespace and trailing blank lines are ignored on
both sides. Everything else
must match character for character.
"""

from __future__ import annotations

import re

__all__ = ["ELLIPSIS", "PLACEHOLDERS", "compile_expected", "matches", "normalise"]

ELLIPSIS = "..."

#: placeholder -> the regular expression it stands for
PLACEHOLDERS: dict[str, str] = {
    "<ms>": r"[0-9]+(?:\.[0-9]+)?(?:ms|µs|us|s)",
    "<n>": r"[-+]?[0-9][0-9,]*(?:\.[0-9]+)?",
    "<hash>": r"[0-9a-f]{6,}",
    "<ts>": (
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}"
        r"(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    ),
    "<port>": r"[0-9]{1,5}",
    "<id>": r"[A-Za-z0-9._-]+",
}

_TOKEN = re.compile("|".join(re.escape(t) for t in (ELLIPSIS, *PLACEHOLDERS)))


def normalise(text: str) -> list[str]:
    """The lines of ``text`` without trailing whitespace or trailing blank lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _line_pattern(line: str) -> str:
    parts: list[str] = []
    position = 0
    for token in _TOKEN.finditer(line):
        literal = line[position : token.start()]
        padded = re.search(r"  +$", literal)
        if padded:  # a column padded to its width: the value's width varies, so may the padding
            parts.append(re.escape(literal[: padded.start()]) + " +")
        else:
            parts.append(re.escape(literal))
        text = token.group()
        parts.append(".*?" if text == ELLIPSIS else PLACEHOLDERS[text])
        position = token.end()
    parts.append(re.escape(line[position:]))
    return "".join(parts)


def compile_expected(expected: str) -> re.Pattern[str]:
    """One pattern matching the whole (normalised) output that ``expected`` describes."""
    pieces: list[str] = []
    for line in normalise(expected):
        if line.strip() == ELLIPSIS:
            pieces.append(r"(?:[^\n]*\n)*?")
        else:
            pieces.append(_line_pattern(line) + r"\n")
    return re.compile("".join(pieces))


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is an output that ``expected`` describes."""
    lines = normalise(actual)
    text = "".join(line + "\n" for line in lines)
    return compile_expected(expected).fullmatch(text) is not None

"""Inline citation markers: the citations a service writes into its answer text.

Many RAG services cite inside the answer instead of in a field: ``[1]``, ``[1][3]``,
``[1, 3]``, ``[^1]`` (Markdown footnotes), ``【1】`` (full-width brackets, as OpenAI's file
search writes them, ``【1†source】``), or a bracketed document id (``[refund-policy]``).
``response.citation_markers`` names the style:

=========== ================================================= =========================
style       matches                                           each marker is
=========== ================================================= =========================
``numbers`` ``[1]``, ``[1][3]``, ``[1, 3]``, ``[^1]``, ``【1】``  a 1-based position in
                                                              the returned evidence
``ids``     ``[refund-policy]``, ``[a, b]`` (not a Markdown   a document id
            link ``[text](url)``)
a regex     its one group, split on commas:                   digits: a position;
            ``\\{\\{cite:([^}]+)\\}\\}``                          else an id
=========== ================================================= =========================

A pattern must have exactly one group, around the marker: a mistyped style (``"number"``)
compiles as a pattern with none and would read the word as a citation, so it is refused
(with the style it was likely meant to be).

The answer is hostile text: the built-in patterns are linear (bounded repetitions, no
nested quantifiers), and at most :data:`MAX_MARKERS` markers are read from one answer.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from evaluator.models import Citation

__all__ = ["MAX_MARKERS", "STYLES", "CitationMarkers", "compile_markers", "first_bracketed"]

#: most markers read from one answer (a million ``[1]`` is a legal 3 MB answer)
MAX_MARKERS = 1000

_NUMBERS = re.compile(
    r"\[\^?(\d{1,6}(?:[ \t]*,[ \t]*\^?\d{1,6}){0,50})\]|【(\d{1,6})(?:†[^】\n]{0,200})?】"
)
_IDS = re.compile(r"\[([^\[\]\s,]{1,200}(?:[ \t]*,[ \t]*[^\[\]\s,]{1,200}){0,50})\](?!\()")

#: the built-in styles, by name
STYLES = {"numbers": _NUMBERS, "ids": _IDS}


@dataclass(frozen=True, slots=True)
class CitationMarkers:
    """A compiled marker style: ``markers(answer)`` gives the answer's citations in order."""

    style: str
    pattern: re.Pattern[str]

    def __call__(self, answer: str) -> tuple[Citation, ...]:
        out: list[Citation] = []
        for match in self.pattern.finditer(answer):
            found = next((g for g in match.groups() if g is not None), match.group(0))
            for part in found.split(","):
                marker = part.strip().lstrip("^")
                if not marker:
                    continue
                out.append(self._citation(marker))
                if len(out) >= MAX_MARKERS:
                    return tuple(out)
        return tuple(out)

    def _citation(self, marker: str) -> Citation:
        """A marker as a citation: an id in the ``ids`` style, else a position when it is a
        number (``[2]``), else the id written."""
        if self.style != "ids" and marker.isascii() and marker.isdigit():
            return int(marker)
        return marker


def compile_markers(style: str) -> CitationMarkers:
    """The markers of ``style``: ``numbers``, ``ids`` or a regular expression.

    Raises:
        ValueError: the expression does not compile, or has not exactly one group.
    """
    if style in STYLES:
        return CitationMarkers(style, STYLES[style])
    try:
        pattern = re.compile(style)
    except re.error as exc:
        raise ValueError(
            f"citation_markers {style!r} is neither 'numbers', 'ids' nor a valid regular "
            f"expression ({exc})"
        ) from None
    if pattern.groups == 0:
        close = difflib.get_close_matches(style, STYLES, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"citation_markers {style!r} has no group: the pattern needs exactly one group "
            f"around the marker{hint}"
        )
    if pattern.groups > 1:
        raise ValueError(
            f"citation_markers {style!r} has {pattern.groups} groups: use one group for the "
            f"marker (or (?:...) for the others)"
        )
    return CitationMarkers("pattern", pattern)


def first_bracketed(answer: str) -> str | None:
    """The first marker of a built-in style in ``answer`` (``[1]``, ``【2】``,
    ``[refund-policy]``), as written: what a style that found nothing may have missed."""
    found = [m for m in (p.search(answer) for p in STYLES.values()) if m is not None]
    if not found:
        return None
    return min(found, key=lambda m: m.start()).group(0)

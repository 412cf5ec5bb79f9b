"""Where the expected facts occur in a text, as spans of the original text to highlight.

Scoring matches facts on normalised text (:func:`~evaluator.scoring.answer.normalise`: NFKC,
case-folded, spaces and punctuation dropped), so "3 - 5 个工作日" in an answer matches the
fact "3-5个工作日". To highlight that match in the text as written, each character is
normalised on its own and every normalised character remembers the original character it
came from; a needle found in the normalised string maps back to the original range between
its first and last characters.

Normalising character by character equals normalising the whole text except around
combining sequences (a base letter and a separate accent). There a fact the scoring finds
may have no span: the view then says "found" without marking where, never the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluator.scoring.answer import normalise

__all__ = ["Segment", "fact_spans", "segments"]

#: spans marked per alternative: a text repeating a fact a thousand times stays cheap
_MAX_SPANS = 50


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of text, and the index of the fact it matches (None: no fact)."""

    text: str
    fact: int | None = None


def _normalised_with_origins(text: str) -> tuple[str, list[int]]:
    chars: list[str] = []
    origins: list[int] = []
    for index, char in enumerate(text):
        folded = normalise(char)
        chars.append(folded)
        origins.extend([index] * len(folded))
    return "".join(chars), origins


def fact_spans(text: str, facts: Sequence[Sequence[str]]) -> list[tuple[int, int, int]]:
    """Every occurrence of every fact's alternatives: ``(start, end, fact index)``.

    ``start:end`` slices the original ``text``; spans are sorted and never overlap (an
    earlier fact wins a contested character, then the earlier span).
    """
    flat, origins = _normalised_with_origins(text)
    found: list[tuple[int, int, int]] = []
    for fact_index, alternatives in enumerate(facts):
        for alternative in alternatives:
            needle = normalise(alternative)
            if not needle:
                continue  # an empty needle matches everywhere, as in scoring it matches nowhere
            at = flat.find(needle)
            count = 0
            while at != -1 and count < _MAX_SPANS:
                found.append((origins[at], origins[at + len(needle) - 1] + 1, fact_index))
                count += 1
                at = flat.find(needle, at + len(needle))
    found.sort(key=lambda span: (span[2], span[0]))
    taken = [False] * len(text)
    kept: list[tuple[int, int, int]] = []
    for start, end, fact_index in found:
        if any(taken[start:end]):
            continue
        for i in range(start, end):
            taken[i] = True
        kept.append((start, end, fact_index))
    kept.sort()
    return kept


def segments(text: str, facts: Sequence[Sequence[str]]) -> list[Segment]:
    """``text`` cut into plain and highlighted segments (concatenated they give ``text``)."""
    out: list[Segment] = []
    position = 0
    for start, end, fact_index in fact_spans(text, facts):
        if start > position:
            out.append(Segment(text[position:start]))
        out.append(Segment(text[start:end], fact_index))
        position = end
    if position < len(text) or not out:
        out.append(Segment(text[position:]))
    return out

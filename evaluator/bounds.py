"""Size caps on what a case keeps from a response, so a report and a log line have a ceiling.

A target decides how long its answer, its ids and its error bodies are; a case record must
not. :class:`RecordLimits` says how much is kept: the ranking is cut to ``max_ranked_ids``
before scoring (so the scores and the stored ranking agree), ids and citations to
``max_id_chars``, the stored answer to ``max_answer_chars`` (the answer is *scored* whole),
and every error message becomes one line of at most ``max_message_chars``.

Text is redacted before it is cut: a cut through a secret would leave a piece that the
egress redaction (see :mod:`evaluator.redaction`) no longer recognises.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evaluator.models import Citation, TargetResponse
from evaluator.redaction import redactor

__all__ = ["DEFAULT_TEXT_CHARS", "RecordLimits", "cut", "one_line"]

#: characters of each evidence text kept in reports, by default
DEFAULT_TEXT_CHARS = 2000

#: what marks a cut
_CUT = "..."


def cut(text: str, max_chars: int) -> str:
    """``text`` redacted and cut to ``max_chars`` (marked with ``...`` and the count cut)."""
    if len(text) <= max_chars:
        return text
    text = redactor().redact_text(text)
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}{_CUT} ({len(text) - max_chars} more chars)"


def one_line(message: str, max_chars: int) -> str:
    """``message`` as one short line: whitespace runs (newlines included) become one space."""
    if len(message) > max_chars * 8:
        # a 3 MB body inside a message: split() of all of it would be wasted work; the
        # margin keeps a secret that straddles the first cut whole for the redaction
        message = redactor().redact_text(message[: max_chars * 8 + 1024])[: max_chars * 8]
    return cut(" ".join(message.split()), max_chars)


@dataclass(frozen=True, slots=True)
class RecordLimits:
    """How much of a response one case record keeps (per target, in its config)."""

    #: ranked items kept and scored; MRR is the reciprocal rank within these
    max_ranked_ids: int = 100
    #: characters kept of each id and each citation
    max_id_chars: int = 256
    #: characters of the answer kept in reports and logs
    max_answer_chars: int = 10_000
    #: characters of an error message (one line)
    max_message_chars: int = 300
    #: characters of each evidence text kept (texts are not scored)
    max_text_chars: int = DEFAULT_TEXT_CHARS

    def ranking(self, response: TargetResponse) -> TargetResponse:
        """``response`` with its ranking cut to ``max_ranked_ids`` (for scoring)."""
        if len(response.retrieved) <= self.max_ranked_ids:
            return response
        return replace(response, retrieved=response.retrieved[: self.max_ranked_ids])

    def id(self, doc_id: str) -> str:
        """One id as stored."""
        return doc_id if len(doc_id) <= self.max_id_chars else cut(doc_id, self.max_id_chars)

    def ids(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """Ids as stored: at most ``max_ranked_ids``, each cut to ``max_id_chars``."""
        n = self.max_id_chars
        kept = ids[: self.max_ranked_ids]
        if not kept or max(map(len, kept)) <= n:
            return kept
        return tuple(cut(i, n) for i in kept)

    def citations(self, citations: tuple[Citation, ...]) -> tuple[Citation, ...]:
        """Citations as stored: at most ``max_ranked_ids``, id citations cut."""
        n = self.max_id_chars
        kept = citations[: self.max_ranked_ids]
        if all(isinstance(c, int) or len(c) <= n for c in kept):
            return kept
        return tuple(c if isinstance(c, int) else cut(c, n) for c in kept)

    def answer(self, answer: str | None) -> str | None:
        """The answer as stored."""
        return None if answer is None else cut(answer, self.max_answer_chars)

    def message(self, message: str) -> str:
        """An error message as stored: one line, capped."""
        return one_line(message, self.max_message_chars)

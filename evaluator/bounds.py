"""Size caps on what a case keeps from a response, so a report and a log line have a ceiling.

A target decides how long its answer, its ids and its error bodies are; a case record must
not. :class:`RecordLimits` says how much is kept: the ranking is cut to ``max_ranked_ids``
before scoring (so the scores and the stored ranking agree), ids and citations to
``max_id_chars``, the stored answer to ``max_answer_chars`` (the answer is *scored* up to
:data:`MAX_SCORED_ANSWER_CHARS`, whatever the target), and every error message becomes one
line of at most ``max_message_chars``.

Text is redacted before it is cut: a cut through a secret would leave a piece that the
egress redaction (see :mod:`evaluator.redaction`) no longer recognises.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evaluator.models import Citation, TargetResponse
from evaluator.redaction import redactor

__all__ = [
    "DEFAULT_TEXT_CHARS",
    "MAX_SCORED_ANSWER_CHARS",
    "OFF_LOOP_ANSWER_CHARS",
    "RecordLimits",
    "cut",
    "one_line",
]

#: characters of each evidence text kept in reports, by default
DEFAULT_TEXT_CHARS = 2000

#: characters of an answer that are scored (where facts and refusal phrases are looked for):
#: far beyond what a model writes (16 k output tokens are about 64 k characters), while what
#: normalisation makes of them stays bounded. NFKC grows text (U+FDFA is one character, 18
#: after it) and costs (about 6 µs per U+FDFA): a legal 3.9 MB answer of 1.3 M U+FDFA became
#: 23 M characters and 10 s of one core; cut to this, at most 1.2 M characters and 0.4 s.
MAX_SCORED_ANSWER_CHARS = 1 << 16

#: answers longer than this are scored in a worker thread, not on the daemon's event loop
#: (the worst text, U+FDFA, costs about 50 ms at this length): the common short answer stays
#: as cheap as before, a long one never stalls ``/healthz``
OFF_LOOP_ANSWER_CHARS = 8192

#: what marks a cut
_CUT = "..."


def cut(text: str, max_chars: int) -> str:
    """``text`` redacted and cut to ``max_chars`` (marked with ``...`` and the count cut)."""
    if len(text) <= max_chars:
        return text
    redact = redactor()
    reach = max_chars + redact.span
    if len(text) > 2 * reach:
        # a 3.9 MB id or answer: redacting all of it to keep its start took 0.15 s on the
        # event loop; what is kept is within reach, and so is a secret straddling the cut
        head = redact.redact_text(text[:reach])
        more = len(head) + len(text) - reach - max_chars
        return f"{head[:max_chars]}{_CUT} ({more} more chars)"
    text = redact.redact_text(text)
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

    def scored(self, response: TargetResponse) -> TargetResponse:
        """``response`` as it is scored: its ranking cut (:meth:`ranking`) and its answer cut
        to :data:`MAX_SCORED_ANSWER_CHARS`."""
        response = self.ranking(response)
        answer = response.answer
        if answer is None or len(answer) <= MAX_SCORED_ANSWER_CHARS:
            return response
        return replace(response, answer=answer[:MAX_SCORED_ANSWER_CHARS])

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

"""Size caps on what a case keeps from a response, so a report and a log line have a ceiling.

A target decides how long its answer, its ids and its error bodies are; a case record must
not. :class:`RecordLimits` says how much is kept: the ranking is cut to ``max_ranked_ids``
before scoring (so the scores and the stored ranking agree), ids and citations to
``max_id_chars``, the stored answer to ``max_answer_chars`` (the answer is *scored* up to
:data:`MAX_SCORED_ANSWER_CHARS`, whatever the target), and every error message becomes one
line of at most ``max_message_chars``.

Text is redacted before it is cut: a cut through a secret would leave a piece that the
egress redaction (see :mod:`evaluator.redaction`) no longer recognises.

Label values are bounded too: whatever a target reports, the number of series stays
bounded. A Prometheus label value that comes from outside the configuration (a stage name
in a response body or a ``Server-Timing`` header) could grow the series without limit, one
new name per response. :func:`sanitise_label` makes any text a short, safe value;
:class:`StageNames` keeps at most ``cap`` distinct stage names per job (or only the names of
an allow-list) and folds the rest into one ``other`` stage, whose time is their sum::

    stages = StageNames(allowed=None, cap=2)
    stages.fold({"retrieve": 0.1, "rerank": 0.2, "x-123": 0.3, "x-124": 0.4})
    # {'retrieve': 0.1, 'rerank': 0.2, 'other': 0.7}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from msgspec.structs import replace

from evaluator.models import Citation, TargetResponse
from evaluator.redaction import redactor

__all__ = [
    "DEFAULT_MAX_STAGES",
    "DEFAULT_TEXT_CHARS",
    "MAX_HISTORY_BYTES",
    "MAX_LABEL_CHARS",
    "MAX_SCORED_ANSWER_CHARS",
    "MAX_TURNS",
    "OFF_LOOP_ANSWER_CHARS",
    "OTHER_STAGE",
    "RecordLimits",
    "StageNames",
    "cut",
    "one_line",
    "sanitise_label",
]

#: characters of each evidence text kept in reports, by default
DEFAULT_TEXT_CHARS = 2000

#: characters of an answer that are scored (where facts and refusal phrases are looked for):
#: far beyond what a model writes (16 k output tokens are about 64 k characters), while what
#: normalisation makes of them stays bounded. NFKC grows text (U+FDFA is one character, 18
#: after it) and costs (about 6 µs per U+FDFA): a legal 3.9 MB answer of 1.3 M U+FDFA became
#: 23 M characters and 10 s of one core; cut to this, and normalised only until 65,536
#: characters are made (scoring.answer.MAX_NORMALISED_CHARS), about 20 ms.
MAX_SCORED_ANSWER_CHARS = 1 << 16

#: answers longer than this are scored in a worker thread, not on the daemon's event loop
#: (the worst text, U+FDFA, costs about 20 ms at this length): the common short answer stays
#: as cheap as before, a long one never stalls ``/healthz``
OFF_LOOP_ANSWER_CHARS = 8192

#: turns one conversation of a golden set may hold: every turn sends all the earlier ones
#: again, so what a conversation sends grows with the square of its length
MAX_TURNS = 16

#: UTF-8 bytes of a conversation's scripted text in a golden set (its questions and
#: scripted answers). What a turn sends as history is bounded by this plus the target's
#: own earlier answers, each cut to ``RecordLimits.max_answer_chars`` as it is stored
MAX_HISTORY_BYTES = 64 * 1024

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


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last an ellipsis (not redacted: see cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


#: the longest label value kept; longer values are cut
MAX_LABEL_CHARS = 64
#: distinct stage names kept per job when the target has no allow-list
DEFAULT_MAX_STAGES = 20
#: the stage every folded name is counted under
OTHER_STAGE = "other"
#: folded names logged per job; beyond, they are only counted
_LOGGED_FOLDS = 20
#: raw stage names whose sanitised form is remembered per job (a hostile target sending a
#: new name per response gets them sanitised each time, never a growing memo)
_MEMO_NAMES = 1024

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def sanitise_label(value: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """``value`` as a short label value: secrets redacted, runs of other characters than
    letters, digits and ``_.:-`` become one ``_``, the result is cut to ``max_chars``; empty
    gives ``unnamed``. (A label value leaves the process on every scrape.)"""
    text = redactor().redact_text(str(value)[: max_chars * 4 + 1024])
    text = _UNSAFE.sub("_", text[: max_chars * 4]).strip("_")
    return text[:max_chars] or "unnamed"


class StageNames:
    """The stage names of one job, bounded.

    Args:
        allowed: when given, only these names (after :func:`sanitise_label`) are kept.
        cap: otherwise, the first ``cap`` distinct names seen are kept.
        on_fold: called with each raw name folded into ``other`` (to count and log it).
    """

    def __init__(
        self,
        allowed: Collection[str] | None = None,
        cap: int = DEFAULT_MAX_STAGES,
        on_fold: Callable[[str, bool], None] | None = None,
    ) -> None:
        self.allowed = None if allowed is None else frozenset(map(sanitise_label, allowed))
        self.cap = cap
        self.on_fold = on_fold
        self._kept: set[str] = set()
        self._logged: set[str] = set()
        #: raw name -> sanitise_label(raw), under the redactor it was computed with: the same
        #: few names come with every response, and sanitising was a tenth of a case's CPU
        self._sanitised: dict[str, str] = {}
        #: raw names remembered whose label is the name itself, kept: timings named only
        #: by them fold to a copy of themselves
        self._as_is: set[str] = set()
        self._redactor = redactor()
        #: raw names folded into ``other`` so far
        self.folded = 0

    @property
    def kept(self) -> frozenset[str]:
        """The stage names kept so far (the ``stage`` label values in use)."""
        return frozenset(self._kept)

    def name(self, raw: str) -> str:
        """The label value of stage ``raw``: its sanitised name, or ``other``."""
        name = self._sanitise(raw)
        if name in self._kept:
            return name
        if (self.allowed is None and len(self._kept) < self.cap) or (
            self.allowed is not None and name in self.allowed
        ):
            self._kept.add(name)
            return name
        self.folded += 1
        if self.on_fold is not None:
            # the first few distinct names are worth a log line; the rest only a count
            first = len(self._logged) < _LOGGED_FOLDS and name not in self._logged
            if first:
                self._logged.add(name)
            self.on_fold(name, first)
        return OTHER_STAGE

    def _follow_redactor(self) -> None:
        current = redactor()
        if current is not self._redactor:
            # a secret registered since: names remembered before may hold it
            self._sanitised.clear()
            self._as_is.clear()
            self._redactor = current

    def _sanitise(self, raw: str) -> str:
        self._follow_redactor()
        name = self._sanitised.get(raw)
        if name is None:
            name = sanitise_label(raw)
            if len(self._sanitised) < _MEMO_NAMES:
                self._sanitised[raw] = name
        return name

    def fold(self, timings: Mapping[str, float]) -> dict[str, float]:
        """``timings`` with bounded names; the seconds of names folded together add up."""
        self._follow_redactor()
        if self._as_is.issuperset(timings):
            # the usual response: the same stages as before, each its own label (a copy in
            # C, 1,000 instructions, where the loop below took 12,000 for six stages)
            return dict(timings)
        return self._folded(timings)

    def _folded(self, timings: Mapping[str, float]) -> dict[str, float]:
        """:meth:`fold` name by name, remembering the names that are their own label."""
        remembered, kept, as_is = self._sanitised, self._kept, self._as_is
        out: dict[str, float] = {}
        for raw, seconds in timings.items():
            # a remembered name already kept is its own label (what name() would find)
            name = remembered.get(raw)
            if name is None or name not in kept:
                name = self.name(raw)
            # -0.0 is the sum of nothing that keeps each figure as it is (0.0 + -0.0 is
            # 0.0): a stage named once has its reported seconds, as in the copy of fold
            out[name] = out.get(name, -0.0) + seconds
            if name == raw and name in kept and raw in remembered:
                as_is.add(raw)
        return out

"""Typed records shared by every part of evaluator: golden-set cases, target responses,
per-case scores and the per-case record kept in reports.

All records are frozen dataclasses: they are built once and passed around, never mutated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "Case",
    "CaseError",
    "CaseRecord",
    "CaseScores",
    "Citation",
    "Dataset",
    "Retrieved",
    "TargetResponse",
]

#: A citation is a 1-based position in ``retrieved`` (int) or a document id (str).
Citation = int | str

_EMPTY: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Case:
    """One golden-set question with its evidence and expected facts.

    ``relevance`` maps each relevant id to its grade (1 for binary relevance).
    ``expected_facts`` is a tuple of facts; each fact is a tuple of alternatives, any one of
    which counts. ``line`` is the physical line in the file (1-based), for error messages.
    """

    id: str
    question: str
    relevance: Mapping[str, int]
    expected_facts: tuple[tuple[str, ...], ...] = ()
    unanswerable: bool = False
    tags: tuple[str, ...] = ()
    line: int = 0
    graded: bool = False

    @property
    def answerable(self) -> bool:
        return not self.unanswerable

    @property
    def relevant_ids(self) -> frozenset[str]:
        """Ids with grade >= 1."""
        return frozenset(i for i, g in self.relevance.items() if g >= 1)

    @property
    def has_answer_check(self) -> bool:
        """Whether the answer is scored: unanswerable cases, or answerable ones with facts."""
        return self.unanswerable or bool(self.expected_facts)


@dataclass(frozen=True, slots=True)
class Dataset:
    """A loaded golden set: its cases in file order, its name and content hash."""

    path: str
    name: str
    cases: tuple[Case, ...]
    #: sha256 of the file's bytes, hex; identifies the golden set across reports
    content_hash: str


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One item of the target's ranked evidence."""

    id: str
    score: float | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class TargetResponse:
    """What a target answered for one question, already mapped onto our fields.

    ``answer`` is None for a retrieval-only target (answer and citations are not scored).
    ``timings`` are the endpoint's own stage durations in seconds.
    """

    retrieved: tuple[Retrieved, ...] = ()
    answer: str | None = None
    citations: tuple[Citation, ...] = ()
    timings: Mapping[str, float] = field(default_factory=lambda: _EMPTY)

    @property
    def ranked_ids(self) -> tuple[str, ...]:
        """Retrieved ids in rank order, first occurrence kept."""
        return tuple(dict.fromkeys(r.id for r in self.retrieved))


@dataclass(frozen=True, slots=True)
class CaseScores:
    """Every per-case metric; each value lies in [0, 1]. None means "not scored for this case"."""

    recall_at_k: float
    mrr: float
    ndcg_at_k: float
    citation_precision: float | None = None
    citation_recall: float | None = None
    #: every citation points inside ``retrieved`` (or at a retrieved id)
    citation_valid: bool | None = None
    answer_correct: bool | None = None
    fact_recall: float | None = None
    refused: bool | None = None


@dataclass(frozen=True, slots=True)
class CaseError:
    """Why a case could not be scored: ``kind`` is one of ``errors.ERROR_KINDS``."""

    kind: str
    message: str
    status: int | None = None
    #: for ``bad_response``: the response field that failed, and the mapping's expression
    #: for it (None under the default contract). Known in the run that saw the error, for
    #: its diagnosis; reports do not carry them.
    field: str | None = dataclasses.field(default=None, compare=False)
    expression: str | None = dataclasses.field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class CaseRecord:
    """One case as kept in a report: the case, what the target answered, its scores or error.

    A failed case has ``error`` set and every score None; it stays out of quality averages.
    """

    id: str
    question: str
    unanswerable: bool
    relevance: Mapping[str, int]
    expected_facts: tuple[tuple[str, ...], ...]
    tags: tuple[str, ...]
    ranked_ids: tuple[str, ...]
    answer: str | None
    citations: tuple[Citation, ...]
    scores: CaseScores | None
    latency_seconds: float
    stage_seconds: Mapping[str, float]
    attempts: int = 1
    error: CaseError | None = None
    #: evidence text kept for read-back (label audit, case view): id -> text, for the top-K
    #: ids and the relevant ids that came back with text, each cut to ``TEXT_KEEP_CHARS``
    texts: Mapping[str, str] = field(default_factory=dict)
    #: ids in ``texts`` whose text was cut: what is missing from them proves nothing
    cut_texts: frozenset[str] = frozenset()

    @property
    def scored(self) -> bool:
        return self.error is None and self.scores is not None

    @property
    def has_answer_check(self) -> bool:
        return self.unanswerable or bool(self.expected_facts)

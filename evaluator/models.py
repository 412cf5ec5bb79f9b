r"""Typed records shared by every part of evaluator: golden-set cases, target responses,
per-case scores and the per-case record kept in reports.

All records are frozen: built once, by keyword, and passed around, never mutated. The four
a report holds per case (:class:`Case`, :class:`CaseScores`, :class:`CaseError`,
:class:`CaseRecord`) are ``msgspec.Struct``\ s, which the report reader decodes into.

Every Struct here is ``gc=False``: the garbage collector does not track it. They hold only
strings, numbers, tuples, frozensets, other records and mappings of those, so they cannot
form a reference cycle, and their reference counts free them. Tracked, a daemon's golden
sets and latest reports (100 jobs x 1,000 cases) made every full collection walk 200,000
objects: 71-78 ms with the event loop stopped, in the middle of cases being timed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from types import MappingProxyType
from typing import Annotated, Literal

import msgspec

__all__ = [
    "DELIVERY_FIELDS",
    "OUT_OF_RANGE_FIELDS",
    "TURN_SEPARATOR",
    "Case",
    "CaseError",
    "CaseRecord",
    "CaseScores",
    "Citation",
    "Conversation",
    "Dataset",
    "Delivery",
    "Dialogue",
    "GoldenCase",
    "Message",
    "OutOfRange",
    "Outcome",
    "Retrieved",
    "TargetResponse",
    "Turn",
    "questions_of",
    "turn_id",
]

#: A citation is a 1-based position in ``retrieved`` (int) or a document id (str).
Citation = int | str

#: The optional figures a target reports: one out of range (1e308 tokens, a negative stage)
#: is dropped and named, never the case's error (:mod:`evaluator.targets.figures`).
OutOfRange = Literal["timings", "scores", "input_tokens", "output_tokens"]
#: the same names, in the order they are shown
OUT_OF_RANGE_FIELDS: tuple[OutOfRange, ...] = ("timings", "scores", "input_tokens", "output_tokens")

_EMPTY: Mapping[str, float] = MappingProxyType({})
_EMPTY_TEXTS: Mapping[str, str] = MappingProxyType({})

#: an item's id, without a Python-level loop (the ranking is read once per case)
_ID = attrgetter("id")


#: joins a conversation's id and a turn's position into the turn's case id (``refund#2``)
TURN_SEPARATOR = "#"


def turn_id(conversation: str, position: int) -> str:
    """The case id of a conversation's turn: ``refund-arrival#2`` for its second turn.

    Reports, the gate, history and pages know a turn by this id alone, so a turn pairs with
    the same turn of the same conversation in another run, as a question pairs by its id.
    """
    return f"{conversation}{TURN_SEPARATOR}{position}"


class Turn(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where a case stands in a scripted conversation of the golden set."""

    #: the conversation's id (the golden-set line's ``id``)
    conversation: str
    #: 1 for the first turn
    position: int
    #: the golden set's scripted answer to this turn: what the target's earlier answer is
    #: replaced with in later turns when its ``history`` is ``"scripted"``
    assistant: str | None = None


class Case(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One question with its evidence and expected facts: a golden-set line of its own, or
    one turn of a :class:`Conversation` (then ``turn`` says where, and ``id`` is
    :func:`turn_id`).

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
    #: None for a question of its own
    turn: Turn | None = None

    @property
    def answerable(self) -> bool:
        return not self.unanswerable

    @property
    def relevant_ids(self) -> frozenset[str]:
        """Ids with grade >= 1."""
        return frozenset(i for i, g in self.relevance.items() if g >= 1)


class Conversation(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A scripted conversation of the golden set: questions asked in order, each a later one
    answered with the earlier turns as its history. Each turn is a :class:`Case` of its own
    (scored on its own, recorded as ``id#position``) whose ``turn`` points back here."""

    id: str
    #: at least one; turn ``n`` has ``turn.position == n``
    turns: tuple[Case, ...]
    tags: tuple[str, ...] = ()
    line: int = 0


#: One golden-set line: a question, or a conversation. Exactly one, by construction.
GoldenCase = Case | Conversation


@dataclass(frozen=True, slots=True)
class Dataset:
    """A loaded golden set: its cases in file order, its name and content hash."""

    path: str
    name: str
    cases: tuple[GoldenCase, ...]
    #: sha256 of the file's bytes, hex; identifies the golden set across reports
    content_hash: str

    @property
    def questions(self) -> tuple[Case, ...]:
        """Every question a run asks, in file order: each case of its own, and each turn of
        each conversation (what a report holds one record for)."""
        if not any(isinstance(case, Conversation) for case in self.cases):
            return self.cases  # type: ignore[return-value]
        return tuple(questions_of(self.cases))


def questions_of(cases: Iterable[GoldenCase]) -> list[Case]:
    """The questions of golden-set cases, in order: a conversation's turns in its place."""
    out: list[Case] = []
    for case in cases:
        if isinstance(case, Conversation):
            out.extend(case.turns)
        else:
            out.append(case)
    return out


class Message(msgspec.Struct, frozen=True, gc=False):
    """One earlier message of a conversation, as chat APIs take them."""

    role: Literal["user", "assistant"]
    content: str


class Dialogue(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a conversation's turn is sent besides its question: the conversation so far."""

    #: the earlier turns, oldest first: each question as a ``user`` message, each answer
    #: (the target's, or the golden set's scripted one) as an ``assistant`` message
    history: tuple[Message, ...] = ()
    #: fresh per conversation and per run: ``{conversation_id}`` in a request template
    id: str
    #: the conversation id a stateful service gave in an earlier turn's response (None
    #: before it gave one)
    service_id: str | None = None

    def after(self, question: str, answer: str | None, service_id: str | None) -> Dialogue:
        """The dialogue of the next turn: this one's question and answer (none for a
        target that answers nothing) added, and the service's id when it gave one."""
        added: tuple[Message, ...] = (Message("user", question),)
        if answer is not None:
            added += (Message("assistant", answer),)
        return Dialogue(
            history=self.history + added,
            id=self.id,
            service_id=service_id if service_id is not None else self.service_id,
        )


class Retrieved(msgspec.Struct, frozen=True, gc=False):
    """One item of the target's ranked evidence."""

    id: str
    score: float | None = None
    text: str | None = None


class Delivery(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How a response arrived and what it cost, as far as the target can tell.

    Times are seconds from the start of the attempt that succeeded: ``ttfb_seconds`` to the
    response's status line, ``ttft_seconds`` to the first event with non-empty content (a
    streamed answer), ``last_byte_seconds`` to the end of the body. Token counts come from
    the response's usage (or, streamed without usage, the count of content events, marked by
    ``tokens_counted``). ``trace_id`` is the W3C trace id sent with the request.
    """

    ttfb_seconds: float | None = None
    ttft_seconds: float | None = None
    last_byte_seconds: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens_counted: bool = False
    streamed: bool = False
    trace_id: str | None = None
    #: input and output tokens at the target's prices
    cost: float | None = None

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens over the time from the first token to the last byte."""
        if self.output_tokens is None or self.ttft_seconds is None:
            return None
        if self.last_byte_seconds is None:
            return None
        generating = self.last_byte_seconds - self.ttft_seconds
        return self.output_tokens / generating if generating > 0 else None


class TargetResponse(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a target answered for one question, already mapped onto our fields.

    ``answer`` is None for a retrieval-only target (answer and citations are not scored).
    ``timings`` are the endpoint's own stage durations in seconds.
    """

    retrieved: tuple[Retrieved, ...] = ()
    answer: str | None = None
    citations: tuple[Citation, ...] = ()
    timings: Mapping[str, float] = _EMPTY
    #: streaming (and usage) measurements, when the target reports them
    delivery: Delivery | None = None
    #: the conversation id a stateful service returned (mapped by ``conversation_id``),
    #: sent back with the conversation's later turns
    conversation_id: str | None = None
    #: optional figures the target reported out of range and that were dropped, in
    #: :data:`OUT_OF_RANGE_FIELDS` order
    out_of_range: tuple[OutOfRange, ...] = ()
    #: False when the response says it did no retrieval (a Responses API answer without
    #: file search): its retrieval metrics are n/a, not 0 for ranking nothing
    retrieval_reported: bool = True

    @property
    def ranked_ids(self) -> tuple[str, ...]:
        """Retrieved ids in rank order, first occurrence kept."""
        return tuple(dict.fromkeys(map(_ID, self.retrieved)))


class CaseScores(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Every per-case metric; each value lies in [0, 1]. None means "not scored for this case"
    (retrieval of a target whose ids are not mapped, answer metrics without an answer)."""

    recall_at_k: float | None
    mrr: float | None
    ndcg_at_k: float | None
    citation_precision: float | None = None
    citation_recall: float | None = None
    #: every citation points inside ``retrieved`` (or at a retrieved id)
    citation_valid: bool | None = None
    answer_correct: bool | None = None
    fact_recall: float | None = None
    refused: bool | None = None
    #: on the last turn of a conversation whose every turn was scored: whether every turn
    #: passed its answer check (:mod:`evaluator.scoring.conversation`); None on every
    #: other case
    conversation_success: bool | None = None


class CaseError(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Why a case could not be scored: ``kind`` is one of ``errors.ERROR_KINDS``."""

    kind: str
    message: str
    #: the HTTP status, when the target answered with one (a report read back is checked)
    status: Annotated[int, msgspec.Meta(ge=100, le=999)] | None = None
    #: for ``bad_response``: the response field that failed, and the mapping's expression
    #: for it (None under the default contract). Known in the run that saw the error, for
    #: its diagnosis; reports do not carry them.
    field: str | None = None
    expression: str | None = None


#: How a case ended: scored, or failed with the reason. Exactly one, by construction.
Outcome = CaseScores | CaseError


class CaseRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One case as kept in a report: the case, what the target answered, and its outcome.

    ``outcome`` is the case's scores or, for a failed case, its error: never both, never
    neither. A failed case stays out of quality averages. The response fields
    (``ranked_ids``, ``answer``, ...) are what came back, kept for a failed case too when
    the target answered (e.g. a ``bad_response``).
    """

    case: Case
    outcome: Outcome
    ranked_ids: tuple[str, ...]
    answer: str | None
    citations: tuple[Citation, ...]
    latency_seconds: float
    stage_seconds: Mapping[str, float]
    #: calls made; 0 for a conversation's turn not asked (``skipped_after_error``)
    attempts: int = 1
    #: evidence text kept for read-back (label audit, case view): id -> text, for the top-K
    #: ids and the relevant ids that came back with text, each cut to ``TEXT_KEEP_CHARS``
    texts: Mapping[str, str] = _EMPTY_TEXTS
    #: ids in ``texts`` whose text was cut: what is missing from them proves nothing
    cut_texts: frozenset[str] = frozenset()
    #: time to first byte / first token (streamed answers), seconds from the attempt's start
    ttfb_seconds: float | None = None
    ttft_seconds: float | None = None
    tokens_per_second: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: input and output tokens at the target's configured prices
    cost: float | None = None
    #: the W3C trace id the request carried (``traceparent``)
    trace_id: str | None = None
    #: the parent span id that ``traceparent`` carried: the case span's id when spans are
    #: exported (the judge's evaluation events are tied to it after the run)
    span_id: str | None = None
    #: optional figures the target reported out of range: not reported (dropped)
    out_of_range: tuple[OutOfRange, ...] = ()

    # Views of the one outcome: filters over many records read better as
    # ``r.scores is not None`` than as an isinstance test, and exactly one is not None.

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def scores(self) -> CaseScores | None:
        """The scores of a scored case; None for a failed one."""
        return self.outcome if isinstance(self.outcome, CaseScores) else None

    @property
    def error(self) -> CaseError | None:
        """Why the case failed; None for a scored one."""
        return self.outcome if isinstance(self.outcome, CaseError) else None

    @property
    def asked(self) -> bool:
        """Whether the question was sent: False for a conversation's turn skipped after an
        earlier turn failed (it has no latency, no delivery, nothing the target did)."""
        return self.attempts > 0


#: A record's delivery measurements, in field order: only some targets report them
#: (streamed answers, token usage, a trace), so a report entry has each one only when it is
#: not None (the daemon's case log line has each, null when not measured).
DELIVERY_FIELDS: tuple[str, ...] = (
    "ttfb_seconds",
    "ttft_seconds",
    "tokens_per_second",
    "input_tokens",
    "output_tokens",
    "cost",
    "trace_id",
    "span_id",
)

"""The SLI table: every service level indicator an SLO can name, and its events in a run.

An SLI says which of a run's cases are events and which of those are good. Each entry is
one :class:`Sli` in :data:`SLIS`; the quality ones are read from the metric registry
(:data:`evaluator.metrics.METRICS`: the metric's per-case value over its population), the
others from the cases' outcomes. The configuration, the counters, the generated rules and
the documentation all take their SLI names from this table.

Adding an SLI is one entry here (and its row in docs/slo.md). Rules every entry keeps:

- a case is an event only when the SLI has something to say about it: a failed case is
  no event of a quality SLI (``no_error`` counts it), a case without an answer check is
  no event of ``answer_correct``;
- a run counts only what it scored: an incomplete run's failed cases count for
  ``no_error`` alone, and a run that broke without a report counts nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evaluator.metrics import metric, split, values
from evaluator.models import CaseRecord, CaseScores

__all__ = [
    "SLIS",
    "SLI_NAMES",
    "Events",
    "RunEvidence",
    "Sli",
    "SliChoice",
    "count_events",
    "sli",
]


@dataclass(frozen=True, slots=True)
class Events:
    """Good and bad events: what an SLO's counters add up."""

    good: int = 0
    bad: int = 0

    @property
    def total(self) -> int:
        return self.good + self.bad

    def __add__(self, other: Events) -> Events:
        return Events(self.good + other.good, self.bad + other.bad)


@dataclass(frozen=True, slots=True)
class SliChoice:
    """The indicator an SLO names: an SLI of the table and, when it takes one, its parameter
    (``threshold_seconds`` for ``latency``, ``check`` for ``judged``)."""

    name: str
    threshold_seconds: float | None = None
    check: str | None = None


@dataclass(frozen=True, slots=True)
class RunEvidence:
    """What the SLIs read of one finished run: its cases and, for ``judged``, the verdicts
    of each check the run's judge is trusted for (check -> case id -> passed). A check
    missing from ``judged`` was not trusted in this run: its SLI counts nothing."""

    cases: Sequence[CaseRecord]
    judged: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)


Counter = Callable[[RunEvidence, SliChoice], Events]


@dataclass(frozen=True, slots=True)
class Sli:
    """One SLI: its name in ``[[slos]]``, what makes an event good, how a run's events are
    counted, and the parameter it needs (None: none)."""

    name: str
    good: str
    count: Counter
    parameter: Literal["threshold_seconds", "check"] | None = None


def _events(flags: Sequence[bool]) -> Events:
    good = sum(flags)
    return Events(good, len(flags) - good)


def _scored(run: RunEvidence) -> list[CaseRecord]:
    return [r for r in run.cases if isinstance(r.outcome, CaseScores)]


def _from_metric(name: str, good: Callable[[float], bool]) -> Counter:
    """Events of a registry metric: each case of its population with a value is one, good
    when ``good(value)``; the same cases the summary averages over."""
    spec = metric(name)

    def count(run: RunEvidence, _choice: SliChoice) -> Events:
        scored = _scored(run)
        pools = split(scored, [r.case.unanswerable for r in scored])
        return _events([good(value) for _, value in values(spec, pools)])

    return count


def _from_flag(name: str) -> Counter:
    """Events of a per-case flag of :class:`CaseScores` that no summary metric averages:
    every scored case where it is set (True or False) is one."""

    def count(run: RunEvidence, _choice: SliChoice) -> Events:
        flags = [getattr(r.outcome, name) for r in _scored(run)]
        return _events([f for f in flags if f is not None])

    return count


def _no_error(run: RunEvidence, _choice: SliChoice) -> Events:
    return _events([r.error is None for r in run.cases])


def _latency(run: RunEvidence, choice: SliChoice) -> Events:
    limit = choice.threshold_seconds
    if limit is None:
        raise ValueError("the latency SLI needs threshold_seconds")
    return _events([r.latency_seconds <= limit for r in _scored(run)])


def _judged(run: RunEvidence, choice: SliChoice) -> Events:
    if choice.check is None:
        raise ValueError("the judged SLI needs a check")
    return _events(list(run.judged.get(choice.check, {}).values()))


#: Every SLI, in the order the documentation lists them.
SLIS: tuple[Sli, ...] = (
    Sli(
        "answer_correct",
        "the answer states every expected fact (an unanswerable case: it refuses)",
        _from_metric("answer_accuracy", lambda v: v == 1.0),
    ),
    Sli(
        "hit_at_k",
        "a relevant id is in the top K",
        _from_metric("recall_at_k", lambda v: v > 0.0),
    ),
    Sli(
        "citations_valid",
        "every citation points at retrieved evidence",
        _from_flag("citation_valid"),
    ),
    Sli(
        "refused_when_unanswerable",
        "an unanswerable case is refused",
        _from_metric("correct_refusal_rate", lambda v: v == 1.0),
    ),
    Sli("no_error", "the case was scored, not failed (every case is an event)", _no_error),
    Sli(
        "latency",
        "the case took at most threshold_seconds (scored cases)",
        _latency,
        parameter="threshold_seconds",
    ),
    Sli(
        "conversation_success",
        "every turn of the conversation passed its answer check (one event a conversation)",
        _from_metric("conversation_success", lambda v: v == 1.0),
    ),
    Sli(
        "judged",
        "the LLM judge passed the case on the check (a judge calibrated for it)",
        _judged,
        parameter="check",
    ),
)

_BY_NAME = {entry.name: entry for entry in SLIS}
#: the names ``[[slos]] sli`` accepts
SLI_NAMES: tuple[str, ...] = tuple(_BY_NAME)


def sli(name: str) -> Sli:
    """The SLI called ``name``.

    Raises:
        KeyError: no such SLI.
    """
    return _BY_NAME[name]


def count_events(choice: SliChoice, run: RunEvidence) -> Events:
    """The good and bad events of ``run`` for the indicator ``choice``."""
    return sli(choice.name).count(run, choice)

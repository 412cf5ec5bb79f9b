"""The case view: everything one case of a report shows, as plain dataclasses the templates
only lay out (the daemon's ``/case``, and each case section of the HTML report).

Every string that came from an endpoint (answers, evidence texts, ids, error messages,
stage names) passes through ``redact`` here, before it is cut into highlighted segments, so
a secret split by a highlight cannot slip through. Sizes are bounded here too: the
templates never loop over anything a target could make unbounded. :func:`case_view` is the
one place a :class:`CaseView` is made, its judge panel included.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from evaluator.metrics import METRICS
from evaluator.models import CaseRecord, Citation
from evaluator.pages.conversation import ConversationView
from evaluator.pages.formatting import Redact, fmt_age, fmt_seconds
from evaluator.pages.highlight import Segment, segments
from evaluator.pages.judge_panel import JudgePanelView
from evaluator.redaction import redact_registered
from evaluator.repeat_summary import verdict_word
from evaluator.scoring.answer import contains_fact, normalise
from evaluator.scoring.citation import resolve_citation
from evaluator.scoring.labels import audit_record, describe_fact

__all__ = [
    "ANSWER_SHOWN_CHARS",
    "CITATIONS_SHOWN",
    "RANKING_SHOWN",
    "CaseHistoryRow",
    "CaseOutcomeRow",
    "CaseView",
    "case_scores",
    "case_view",
    "citation_label",
    "cited_ids",
    "error_text",
]

#: characters of an answer shown; answers are capped upstream too, this bounds the page
ANSWER_SHOWN_CHARS = 8000
#: ranked items shown in a case view
RANKING_SHOWN = 20
#: citations shown in a case view
CITATIONS_SHOWN = 20
#: stage timings shown
STAGES_SHOWN = 20


class CaseOutcomeRow(Protocol):
    """One past outcome of a case (the history store's ``CaseOutcome``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def finished_at(self) -> float: ...

    @property
    def answer(self) -> bool | None: ...

    @property
    def hit(self) -> bool | None: ...

    @property
    def mrr(self) -> float | None: ...

    @property
    def error_kind(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class FactView:
    index: int
    text: str
    found: bool
    #: found by the scoring yet no span to mark (combining characters): said, not drawn
    unmarked: bool


@dataclass(frozen=True, slots=True)
class RankedView:
    rank: int
    id: str
    grade: int
    in_top_k: bool
    cited: bool
    text: list[Segment] | None
    cut: bool
    facts_in_text: list[int]


@dataclass(frozen=True, slots=True)
class CitationView:
    label: str
    resolves_to: str | None
    supported: bool


@dataclass(frozen=True, slots=True)
class CaseHistoryRow:
    run_id: str
    age: str
    outcome: str


@dataclass(frozen=True, slots=True)
class CaseView:
    id: str
    anchor: str
    question: str
    tags: tuple[str, ...]
    unanswerable: bool
    facts: list[FactView]
    missing_facts: list[str]
    answer: list[Segment] | None
    answer_cut: bool
    #: one of :data:`evaluator.repeat_summary.VERDICT_WORDS`
    verdict: str
    refused: bool | None
    ranking: list[RankedView]
    ranking_more: int
    relevant_not_retrieved: list[str]
    citations: list[CitationView]
    stages: list[tuple[str, str]]
    latency: str
    attempts: int
    error: str | None
    scores: list[tuple[str, str]]
    suspect_label: str | None
    history: list[CaseHistoryRow] | None
    trace_id: str | None
    trace_url: str | None
    k: int
    changes: tuple[str, ...] = ()
    #: the judge's verdicts of this case and their human labels (None: report not judged),
    #: from :mod:`evaluator.pages.judge_panel`
    judge: JudgePanelView | None = None
    #: a conversation's turn: every turn of its conversation (None: a question of its own),
    #: from :mod:`evaluator.pages.conversation`
    conversation: ConversationView | None = None


def citation_label(citation: Citation) -> str:
    """A citation as the answer wrote it: ``[2]`` for a marker, the id itself otherwise."""
    return f"[{citation}]" if isinstance(citation, int) else str(citation)


#: the per-case scores shown, from the registry (each metric's CaseScores field, once), then
#: the citation check, which is no metric of its own
_CASE_SCORES: tuple[str, ...] = (
    *dict.fromkeys(s.score for s in METRICS if s.score is not None),
    "citation_valid",
)


def case_scores(record: CaseRecord) -> list[tuple[str, str]]:
    """The case's scores in words: each flag yes or no, each number to two places."""
    s = record.scores
    if s is None:
        return []
    out: list[tuple[str, str]] = []
    for name in _CASE_SCORES:
        value = getattr(s, name, None)
        if isinstance(value, bool):
            out.append((name, "yes" if value else "no"))
        elif isinstance(value, int | float):
            out.append((name, f"{value:.2f}"))
    return out


@dataclass(frozen=True, slots=True)
class _AnswerViews:
    """The answer cut into highlighted segments, and each expected fact found or missing."""

    segments: list[Segment] | None
    facts: list[FactView]
    missing: list[str]
    cut: bool


def _answer_views(record: CaseRecord, redact: Redact) -> _AnswerViews:
    """The answer (redacted, then cut and highlighted) and its facts, found as the scoring
    finds them; a fact found without a span to mark is said, not drawn."""
    facts = record.case.expected_facts
    if record.answer is None:
        views = [FactView(i, describe_fact(f), False, False) for i, f in enumerate(facts)]
        return _AnswerViews(None, views, [], False)
    answer_text = redact(record.answer)
    answer_segments = segments(answer_text[:ANSWER_SHOWN_CHARS], facts)
    marked = {s.fact for s in answer_segments if s.fact is not None}
    folded = normalise(answer_text)
    views = []
    for i, fact in enumerate(facts):
        found = contains_fact(folded, fact)
        views.append(FactView(i, describe_fact(fact), found, found and i not in marked))
    missing = [f.text for f in views if not f.found]
    return _AnswerViews(answer_segments, views, missing, len(answer_text) > ANSWER_SHOWN_CHARS)


def _ranking_views(record: CaseRecord, k: int, redact: Redact) -> list[RankedView]:
    """The first :data:`RANKING_SHOWN` ranked ids with their grade, their place against K,
    whether they are cited, and their evidence text with the expected facts highlighted."""
    facts = record.case.expected_facts
    cited = cited_ids(record)
    ranking: list[RankedView] = []
    for rank, doc_id in enumerate(record.ranked_ids[:RANKING_SHOWN], start=1):
        text = record.texts.get(doc_id)
        cut_segments = segments(redact(text), facts) if text else None
        ranking.append(
            RankedView(
                rank=rank,
                id=redact(doc_id),
                grade=record.case.relevance.get(doc_id, 0),
                in_top_k=rank <= k,
                cited=doc_id in cited,
                text=cut_segments,
                cut=doc_id in record.cut_texts,
                facts_in_text=sorted({s.fact for s in cut_segments or () if s.fact is not None}),
            )
        )
    return ranking


def _citation_views(record: CaseRecord, redact: Redact) -> list[CitationView]:
    """The first :data:`CITATIONS_SHOWN` citations, what each points at and whether that is
    a relevant id."""
    views = []
    for citation in record.citations[:CITATIONS_SHOWN]:
        target = resolve_citation(citation, record.ranked_ids)
        views.append(
            CitationView(
                label=redact(citation_label(citation)),
                resolves_to=redact(target) if target is not None else None,
                supported=target is not None and record.case.relevance.get(target, 0) >= 1,
            )
        )
    return views


def _stage_rows(record: CaseRecord, redact: Redact) -> list[tuple[str, str]]:
    """The endpoint's first :data:`STAGES_SHOWN` stage timings, in its order."""
    return [
        (redact(name), fmt_seconds(seconds))
        for name, seconds in list(record.stage_seconds.items())[:STAGES_SHOWN]
    ]


def _history_rows(
    history: Sequence[CaseOutcomeRow] | None, now: float
) -> list[CaseHistoryRow] | None:
    """The case's past outcomes, newest first (None: no history store)."""
    if history is None:
        return None
    return [
        CaseHistoryRow(h.run_id, fmt_age(now - h.finished_at), _history_outcome(h)) for h in history
    ]


def _trace(
    record: CaseRecord, redact: Redact, trace_url: str | None
) -> tuple[str | None, str | None]:
    """The record's trace id (redacted) and its link from the ``{trace_id}`` template."""
    trace_id = getattr(record, "trace_id", None)
    trace_id = redact(trace_id) if isinstance(trace_id, str) and trace_id else None
    url = trace_url.replace("{trace_id}", trace_id) if trace_url and trace_id else None
    return trace_id, url


def case_view(
    record: CaseRecord,
    *,
    k: int,
    redact: Redact = redact_registered,
    anchor: str = "case",
    history: Sequence[CaseOutcomeRow] | None = None,
    trace_url: str | None = None,
    now: float | None = None,
    changes: tuple[str, ...] = (),
    judge: JudgePanelView | None = None,
    conversation: ConversationView | None = None,
) -> CaseView:
    """Everything the case view shows for one case of a report; ``judge``: its panel of
    the report's judged verdicts (:mod:`evaluator.pages.judge_panel`), if judged;
    ``conversation``: a turn's whole conversation (:mod:`evaluator.pages.conversation`)."""
    answer = _answer_views(record, redact)
    retrieved = set(record.ranked_ids)
    trace_id, trace_link = _trace(record, redact, trace_url)
    return CaseView(
        id=record.id,
        anchor=anchor,
        question=record.case.question,
        tags=record.case.tags,
        unanswerable=record.case.unanswerable,
        facts=answer.facts,
        missing_facts=answer.missing,
        answer=answer.segments,
        answer_cut=answer.cut,
        verdict=verdict_word(record),
        refused=record.scores.refused if record.scores is not None else None,
        ranking=_ranking_views(record, k, redact),
        ranking_more=max(len(record.ranked_ids) - RANKING_SHOWN, 0),
        relevant_not_retrieved=[
            i for i, g in record.case.relevance.items() if g >= 1 and i not in retrieved
        ],
        citations=_citation_views(record, redact),
        stages=_stage_rows(record, redact),
        latency=fmt_seconds(record.latency_seconds),
        attempts=record.attempts,
        error=error_text(record, redact),
        scores=case_scores(record),
        suspect_label=audit_record(record).message,
        history=_history_rows(history, time.time() if now is None else now),
        trace_id=trace_id,
        trace_url=trace_link,
        k=k,
        changes=changes,
        judge=judge,
        conversation=conversation,
    )


def cited_ids(record: CaseRecord) -> set[str]:
    """The ids the shown citations point at."""
    targets = (resolve_citation(c, record.ranked_ids) for c in record.citations[:CITATIONS_SHOWN])
    return {t for t in targets if t is not None}


def error_text(record: CaseRecord, redact: Redact) -> str | None:
    """A failed case's error kind and its (redacted) message; None for a scored case."""
    e = record.error
    return f"{e.kind}: {redact(e.message)}" if e is not None else None


def _history_outcome(row: CaseOutcomeRow) -> str:
    """One past outcome in words: its error, or its answer, retrieval and RR."""
    if row.error_kind:
        return f"error {row.error_kind}"
    parts = []
    if row.answer is not None:
        parts.append("answer correct" if row.answer else "answer incorrect")
    if row.hit is not None:
        parts.append("relevant retrieved" if row.hit else "relevant missed")
    if row.mrr is not None:
        parts.append(f"RR {row.mrr:.2f}")
    return ", ".join(parts) or "scored"

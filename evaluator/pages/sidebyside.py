"""The baseline beside the candidate for one case: what each run answered, ranked and cited,
with the differences marked.

Pure view models, as :mod:`evaluator.pages.case`: every string from an endpoint is redacted
here before it is diffed or cut (so no secret is split across two pieces), and every list is
bounded by the case view's own limits.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluator.models import CaseRecord
from evaluator.pages.case import (
    ANSWER_SHOWN_CHARS,
    CITATIONS_SHOWN,
    RANKING_SHOWN,
    case_scores,
    citation_label,
    cited_ids,
    error_text,
)
from evaluator.pages.formatting import Redact
from evaluator.redaction import redact_registered
from evaluator.repeat_summary import verdict_word
from evaluator.scoring.answer import contains_fact, normalise
from evaluator.scoring.citation import resolve_citation
from evaluator.scoring.labels import describe_fact

__all__ = [
    "BaselineDiff",
    "CitationChange",
    "DiffPiece",
    "FactChange",
    "RankRow",
    "RankSide",
    "ScoreRow",
    "baseline_diff",
    "word_diff",
]

#: Scripts written without spaces between words: each character is one token of the diff,
#: so a changed character of a Chinese answer is not a changed sentence.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
#: whitespace runs, one unspaced character, a run of other word characters, or one mark:
#: every character falls in exactly one token, so the tokens join back to the text
_TOKEN = re.compile(rf"\s+|[{_UNSPACED}]|[^\W{_UNSPACED}]+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class DiffPiece:
    text: str
    #: "same", "removed" (only in the baseline's text) or "added" (only in the candidate's)
    op: str


def _append(out: list[DiffPiece], text: str, op: str) -> None:
    if not text:
        return
    if out and out[-1].op == op:
        out[-1] = DiffPiece(out[-1].text + text, op)
    else:
        out.append(DiffPiece(text, op))


def word_diff(before: str, after: str) -> tuple[list[DiffPiece], list[DiffPiece]]:
    """Each text cut into pieces the other shares ("same") or lacks: the baseline's side
    marks what it had that the candidate lost ("removed"), the candidate's what it added.

    Word by word (characters in unspaced scripts); adjacent pieces of one kind are merged,
    and each side's pieces join back to its text.
    """
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    # autojunk off: it would ignore every frequent token (spaces, 的) in a long answer
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    left: list[DiffPiece] = []
    right: list[DiffPiece] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _append(left, "".join(a[i1:i2]), "same")
            _append(right, "".join(b[j1:j2]), "same")
        else:  # replace, delete, insert
            _append(left, "".join(a[i1:i2]), "removed")
            _append(right, "".join(b[j1:j2]), "added")
    return left, right


@dataclass(frozen=True, slots=True)
class FactChange:
    text: str
    baseline: bool
    candidate: bool

    @property
    def change(self) -> str:
        """``lost`` (found in the baseline's answer only), ``gained``, ``kept`` or ``missing``
        (in neither)."""
        if self.baseline != self.candidate:
            return "lost" if self.baseline else "gained"
        return "kept" if self.baseline else "missing"


@dataclass(frozen=True, slots=True)
class RankSide:
    rank: int
    id: str
    grade: int
    in_top_k: bool
    #: 1-based rank of this id in the other run's ranking; None: not in it at all
    other_rank: int | None
    cited: bool

    @property
    def mark(self) -> str:
        """``only``: the other ranking lacks this id; ``moved``: at another rank there."""
        if self.other_rank is None:
            return "only"
        return "moved" if self.other_rank != self.rank else ""


@dataclass(frozen=True, slots=True)
class RankRow:
    rank: int
    baseline: RankSide | None
    candidate: RankSide | None


@dataclass(frozen=True, slots=True)
class CitationChange:
    label: str
    resolves_to: str | None
    supported: bool
    #: "removed" (the baseline's only), "added" (the candidate's only) or "kept"
    change: str


@dataclass(frozen=True, slots=True)
class ScoreRow:
    name: str
    baseline: str
    candidate: str
    #: "worse", "better" or "" (the same, or not comparable)
    change: str


@dataclass(frozen=True, slots=True)
class BaselineDiff:
    """One case in the baseline run and in the candidate run, side by side."""

    baseline_run: str
    #: the gate's phrases of how the case moved, regressions first
    changes: tuple[str, ...]
    regressed: bool
    verdicts: tuple[str, str]
    errors: tuple[str | None, str | None]
    #: each side's answer in diff pieces (None: that run has no answer)
    answers: tuple[list[DiffPiece] | None, list[DiffPiece] | None]
    answer_same: bool
    facts: list[FactChange]
    ranking: list[RankRow]
    #: relevant ids in the baseline's top K and not the candidate's, and the other way round
    lost_from_top_k: list[str]
    gained_in_top_k: list[str]
    citations: list[CitationChange]
    scores: list[ScoreRow]
    k: int

    @property
    def marked(self) -> int:
        """How many differences are marked (0: the two runs agree on everything shown)."""
        return self._answer_marks() + self._list_marks()

    def _answer_marks(self) -> int:
        """Words struck or added in the two answers, and facts found on one side only."""
        pieces = sum(1 for side in self.answers if side for p in side if p.op != "same")
        return pieces + sum(1 for f in self.facts if f.change in ("lost", "gained"))

    def _list_marks(self) -> int:
        """Ranked ids marked on either side, and citations not kept."""
        ranks = sum(1 for r in self.ranking for s in (r.baseline, r.candidate) if s and s.mark)
        return ranks + sum(1 for c in self.citations if c.change != "kept")


def _whole(text: str, op: str) -> list[DiffPiece]:
    return [DiffPiece(text, op)] if text else []


def _answer(record: CaseRecord, redact: Redact) -> str | None:
    return redact(record.answer)[:ANSWER_SHOWN_CHARS] if record.answer is not None else None


def _facts(baseline: CaseRecord, candidate: CaseRecord) -> list[FactChange]:
    """The candidate's expected facts (the golden set's current labels), each looked up in
    both answers as the scoring does."""
    before = normalise(baseline.answer) if baseline.answer is not None else None
    after = normalise(candidate.answer) if candidate.answer is not None else None
    return [
        FactChange(
            describe_fact(fact),
            before is not None and contains_fact(before, fact),
            after is not None and contains_fact(after, fact),
        )
        for fact in candidate.case.expected_facts
    ]


def _first_ranks(ranked: Sequence[str]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, doc_id in enumerate(ranked, start=1):
        ranks.setdefault(doc_id, rank)
    return ranks


def _sides(record: CaseRecord, other: dict[str, int], k: int, redact: Redact) -> list[RankSide]:
    cited = cited_ids(record)
    return [
        RankSide(
            rank=rank,
            id=redact(doc_id),
            grade=record.case.relevance.get(doc_id, 0),
            in_top_k=rank <= k,
            other_rank=other.get(doc_id),
            cited=doc_id in cited,
        )
        for rank, doc_id in enumerate(record.ranked_ids[:RANKING_SHOWN], start=1)
    ]


def _ranking(baseline: CaseRecord, candidate: CaseRecord, k: int, redact: Redact) -> list[RankRow]:
    """Rank by rank, each side's id marked when the other ranking lacks it or holds it at
    another rank (looked up over the whole other ranking, not only the shown part)."""
    before, after = _first_ranks(baseline.ranked_ids), _first_ranks(candidate.ranked_ids)
    left, right = _sides(baseline, after, k, redact), _sides(candidate, before, k, redact)
    return [
        RankRow(
            rank,
            left[rank - 1] if rank <= len(left) else None,
            right[rank - 1] if rank <= len(right) else None,
        )
        for rank in range(1, max(len(left), len(right)) + 1)
    ]


def _relevant_top_k(record: CaseRecord, k: int) -> list[str]:
    relevance = record.case.relevance
    return list(dict.fromkeys(i for i in record.ranked_ids[:k] if relevance.get(i, 0) >= 1))


def _citations(baseline: CaseRecord, candidate: CaseRecord, redact: Redact) -> list[CitationChange]:
    """Citations compared by the document each points at (by its label when it points at
    none): a citation that moved from [1] to [2] with its document is kept, not changed."""

    def keyed(record: CaseRecord) -> dict[str, tuple[str, str | None]]:
        out: dict[str, tuple[str, str | None]] = {}
        for citation in record.citations[:CITATIONS_SHOWN]:
            target = resolve_citation(citation, record.ranked_ids)
            label = citation_label(citation)
            out.setdefault(
                f"id:{target}" if target is not None else f"label:{label}", (label, target)
            )
        return out

    before, after = keyed(baseline), keyed(candidate)
    relevance = candidate.case.relevance
    rows = []
    for key, (label, target) in after.items():
        rows.append((label, target, "kept" if key in before else "added"))
    for key, (label, target) in before.items():
        if key not in after:
            rows.append((label, target, "removed"))
    return [
        CitationChange(
            redact(label),
            redact(target) if target is not None else None,
            target is not None and relevance.get(target, 0) >= 1,
            change,
        )
        for label, target, change in rows
    ]


def _score_rows(baseline: CaseRecord, candidate: CaseRecord) -> list[ScoreRow]:
    """Each per-case score of both runs as the case view writes it, and which way it moved:
    up is better for every score but ``refused``, which is better up only for a case that
    should be refused (an unanswerable one)."""
    before, after = dict(case_scores(baseline)), dict(case_scores(candidate))
    raw = (baseline.scores, candidate.scores)
    rows = []
    for name in dict.fromkeys([*before, *after]):
        b, c = before.get(name, "n/a"), after.get(name, "n/a")
        was, now = (getattr(s, name, None) if s is not None else None for s in raw)
        change = ""
        if was is not None and now is not None and float(now) != float(was):
            up = float(now) > float(was)
            if name == "refused" and not candidate.case.unanswerable:
                up = not up
            change = "better" if up else "worse"
        rows.append(ScoreRow(name, b, c, change))
    return rows


def baseline_diff(
    baseline: CaseRecord,
    candidate: CaseRecord,
    *,
    k: int,
    baseline_run: str,
    worse: tuple[str, ...] = (),
    better: tuple[str, ...] = (),
    redact: Redact = redact_registered,
) -> BaselineDiff:
    """The two runs of one case side by side; ``worse``/``better``: the gate's phrases of its
    regressions and improvements (:func:`evaluator.gate.compare.record_moves`)."""
    before, after = _answer(baseline, redact), _answer(candidate, redact)
    answers: tuple[list[DiffPiece] | None, list[DiffPiece] | None]
    if before is not None and after is not None:
        answers = word_diff(before, after)
    else:  # at most one side answered: its answer is all its own
        answers = (
            None if before is None else _whole(before, "removed"),
            None if after is None else _whole(after, "added"),
        )
    base_top, cand_top = _relevant_top_k(baseline, k), _relevant_top_k(candidate, k)
    return BaselineDiff(
        baseline_run=redact(baseline_run),
        changes=tuple(redact(c) for c in (*worse, *better)),
        regressed=bool(worse),
        verdicts=(verdict_word(baseline), verdict_word(candidate)),
        errors=(error_text(baseline, redact), error_text(candidate, redact)),
        answers=answers,
        answer_same=before == after,
        facts=_facts(baseline, candidate),
        ranking=_ranking(baseline, candidate, k, redact),
        lost_from_top_k=[redact(i) for i in base_top if i not in cand_top],
        gained_in_top_k=[redact(i) for i in cand_top if i not in base_top],
        citations=_citations(baseline, candidate, redact),
        scores=_score_rows(baseline, candidate),
        k=k,
    )

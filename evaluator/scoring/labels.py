"""Label audit: does the evidence a case calls relevant contain any of its expected facts?

A wrong label makes a right answer look wrong: "退款多久到账？" labelled with the application
deadline "七天" fails every correct answer ("3-5个工作日"). Such a label shows itself in the
evidence: the fact occurs in none of the texts the case calls relevant. The audit uses the
scoring's own matching (:func:`~evaluator.scoring.answer.normalise` and
:func:`~evaluator.scoring.answer.contains_fact`), so "7 天" in a text matches a "7天" label
exactly as it would in an answer.

A case is *checked* when it is answerable, has expected facts, and every relevant id came
back with text (a fact may sit in the evidence that did not). It is *suspect* when no
expected fact (no alternative of any fact) occurs in any relevant text, unless a relevant
text was cut before it was kept: what is missing from a cut text proves nothing, so such a
case is reported unchecked instead.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluator.models import CaseRecord
from evaluator.scoring.answer import contains_fact, normalise

__all__ = [
    "AuditTotals",
    "LabelAudit",
    "audit_labels",
    "audit_record",
    "audit_run",
    "describe_fact",
]


def describe_fact(alternatives: Sequence[str]) -> str:
    """A fact as people read it: ``'七天' (or '7天')``."""
    first, *rest = alternatives
    if not rest:
        return repr(first)
    return f"{first!r} (or {', '.join(repr(a) for a in rest)})"


@dataclass(frozen=True, slots=True)
class LabelAudit:
    """What the audit found for one case."""

    #: answerable, with expected facts, and all relevant evidence came back with text
    checked: bool
    #: no expected fact occurs in any relevant text (and no relevant text was cut)
    suspect: bool
    #: the facts found in none of the relevant texts, in label order
    missing: tuple[tuple[str, ...], ...] = ()

    @property
    def message(self) -> str | None:
        """``suspect label: '七天' is in none of the relevant evidence``, or None."""
        if not self.suspect:
            return None
        return _suspect_message(self.missing)

    @classmethod
    def of(
        cls,
        *,
        unanswerable: bool,
        expected_facts: Sequence[Sequence[str]],
        relevance: Mapping[str, int],
        texts: Mapping[str, str],
        cut: Collection[str] = (),
    ) -> LabelAudit:
        """Audit one case's label against the texts that came back for it.

        Args:
            unanswerable: the case expects a refusal (nothing to check).
            expected_facts: one entry per fact, each a sequence of alternatives.
            relevance: relevant id -> grade; ids with grade >= 1 are relevant.
            texts: id -> evidence text, as returned by the target (or kept in a report).
            cut: ids whose text was shortened before it was kept.

        Returns:
            The audit; ``checked`` False when there was nothing to check.
        """
        evidence = _checkable_evidence(unanswerable, expected_facts, relevance, texts)
        if evidence is None:
            return cls(checked=False, suspect=False)
        facts = tuple(tuple(f) for f in expected_facts)
        missing = _missing_facts(facts, [_normalised_evidence(texts[i]) for i in evidence])
        if len(missing) < len(facts):
            return cls(checked=True, suspect=False, missing=missing)
        if any(i in cut for i in evidence):
            # the fact may sit in the part that was cut away
            return cls(checked=False, suspect=False, missing=missing)
        return cls(checked=True, suspect=True, missing=missing)


def _checkable_evidence(
    unanswerable: bool,
    expected_facts: Sequence[Sequence[str]],
    relevance: Mapping[str, int],
    texts: Mapping[str, str],
) -> tuple[str, ...] | None:
    """The relevant ids whose texts the audit reads, or None when the case cannot be checked:
    unanswerable, without facts or relevant ids, or with a relevant text missing (a fact may
    sit in the evidence that did not come back: nothing is proven)."""
    evidence = tuple(i for i, g in relevance.items() if g >= 1)
    if unanswerable or not expected_facts or not evidence:
        return None
    if not all(texts.get(i) for i in evidence):
        return None
    return evidence


def _missing_facts(
    facts: tuple[tuple[str, ...], ...], haystacks: Sequence[str]
) -> tuple[tuple[str, ...], ...]:
    """The facts found in none of the normalised texts, in label order."""
    return tuple(f for f in facts if not any(contains_fact(h, f) for h in haystacks))


@functools.lru_cache(maxsize=1024)
def _normalised_evidence(text: str) -> str:
    """:func:`normalise` of an evidence text, cached: a corpus is finite, so the same
    passages come back for many cases and for every run of a job, and each report audits
    them again. Bounded by the entries (each text at most the kept characters)."""
    return normalise(text)


@functools.lru_cache(maxsize=4096)
def _suspect_message(missing: tuple[tuple[str, ...], ...]) -> str:
    """The message for these missing facts (cached: a run's suspect cases miss the same few
    facts, and each message is read for the case's entry and again for the run's audit)."""
    facts = ", ".join(describe_fact(f) for f in missing)
    verb = "is" if len(missing) == 1 else "are"
    return f"suspect label: {facts} {verb} in none of the relevant evidence"


@dataclass(frozen=True, slots=True)
class AuditTotals:
    """The audit of a whole run: how many cases were checked, which are suspect."""

    checked: int
    suspect: tuple[tuple[str, LabelAudit], ...]

    @property
    def suspect_count(self) -> int:
        return len(self.suspect)

    def to_dict(self) -> dict[str, object]:
        return {
            "checked": self.checked,
            "suspect": self.suspect_count,
            "suspect_cases": [
                {"id": case_id, "message": audit.message} for case_id, audit in self.suspect
            ],
        }


def audit_labels(audits: Iterable[tuple[str, LabelAudit]]) -> AuditTotals:
    """Totals over ``(case id, audit)`` pairs, suspect cases in the order given."""
    checked = 0
    suspect: list[tuple[str, LabelAudit]] = []
    for case_id, audit in audits:
        checked += audit.checked
        if audit.suspect:
            suspect.append((case_id, audit))
    return AuditTotals(checked=checked, suspect=tuple(suspect))


def audit_record(record: CaseRecord) -> LabelAudit:
    """:meth:`LabelAudit.of` for a case as kept in a report."""
    return LabelAudit.of(
        unanswerable=record.case.unanswerable,
        expected_facts=record.case.expected_facts,
        relevance=record.case.relevance,
        texts=record.texts,
        cut=record.cut_texts,
    )


def audit_run(records: Iterable[CaseRecord]) -> AuditTotals:
    """The audit of every case of a run, suspect cases in report order."""
    return audit_labels((r.id, audit_record(r)) for r in records)

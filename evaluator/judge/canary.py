"""Canary cases: answers that carry an instruction aimed at the judge and none of the
expected facts. Every judged run sends a few; a judge that calls one supported has been
talked round by the target's text, so that run's judged metrics are untrusted
(:mod:`evaluator.judge.trust`), as they are when a canary gets no verdict.

The canaries are built from the golden set's own cases (same question, same facts), their
words drawn per run from a nonce (:class:`~evaluator.judge.checks.base.CanaryWords`) and
their evidence the case's facts: nothing in a canary is text the target wrote or could
learn. Each check says how it is canaried (its :class:`~evaluator.judge.checks.Canary`:
the hostile answer, the cases it may borrow, what a fooled verdict is); this module only
deals them out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import islice

from evaluator.judge.canary_verdicts import CanaryClass
from evaluator.judge.checks import Canary, JudgedCheck, Subject, judged_checks
from evaluator.judge.checks.base import CanaryWords
from evaluator.judge.wrong_answers import specific_but_wrong, vague_but_topical

__all__ = ["WRONG_ANSWERS", "canary_subjects", "wrong_answer_subjects"]

#: each wrong-answer class, with the wrong answer it makes of a golden case (None: the case
#: makes none)
WRONG_ANSWERS: dict[CanaryClass, Callable[[Subject], str | None]] = {
    "specific_but_wrong": lambda s: specific_but_wrong(s.facts),
    "vague_but_topical": lambda s: vague_but_topical(s.question, s.facts),
}


def canary_subjects(
    subjects: list[Subject],
    count: int,
    words: CanaryWords,
    checks: Sequence[JudgedCheck] | None = None,
) -> list[tuple[JudgedCheck, Subject]]:
    """Up to ``count`` (check, canary) pairs, one case each, in the run's ``words``, taking
    the canaried checks of ``checks`` (default: every registered one) in turn (registry
    order); a case the turn's canary cannot use goes to the first canaried check whose canary
    can. None when no check of ``checks`` is canaried."""
    canaried = _canaried(judged_checks() if checks is None else checks)
    if not canaried:
        return []
    usable = [s for s in subjects if any(canary.usable(s) for _, canary in canaried)]
    out: list[tuple[JudgedCheck, Subject]] = []
    for turn, subject in enumerate(usable[:count]):
        preferred = canaried[turn % len(canaried)]
        check, canary = next(pair for pair in (preferred, *canaried) if pair[1].usable(subject))
        out.append((check, canary.subject(subject, words)))
    return out


def _canaried(checks: Sequence[JudgedCheck]) -> list[tuple[JudgedCheck, Canary]]:
    """The checks of ``checks`` that have a canary, each with it."""
    return [(c, c.canary) for c in checks if c.canary is not None]


def wrong_answer_subjects(
    subjects: list[Subject], count: int, checks: Sequence[JudgedCheck] | None = None
) -> list[tuple[JudgedCheck, Subject, CanaryClass]]:
    """Up to ``count`` canaries of each wrong-answer class for each check of ``checks``
    (default: every registered one) that takes them, from the first cases its canary may
    borrow that make one: the case's question and facts with the wrong answer, no evidence
    and no earlier turns (nothing the target wrote)."""
    out: list[tuple[JudgedCheck, Subject, CanaryClass]] = []
    for check, canary in _canaried(judged_checks() if checks is None else checks):
        if not check.wrong_answers:
            continue
        for kind, wrong_answer in WRONG_ANSWERS.items():
            made = ((s, wrong_answer(s)) for s in subjects if canary.usable(s))
            dealt = islice(((s, answer) for s, answer in made if answer is not None), count)
            out.extend(
                (check, replace(s, answer=answer, evidence=(), conversation=()), kind)
                for s, answer in dealt
            )
    return out

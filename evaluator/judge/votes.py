"""Repeated verdicts: the votes of one check of one case, and the outcome they decide.

A judge asked ``samples`` times, or a panel of judges, gives one vote per call. The
verdict is the strict majority of every vote asked: more than half of them give the same
verdict (pass, fail, or judged without one). Votes that give verdicts and disagree with no
majority are ``uncertain``: counted and shown, never a pass or a fail, kept out of the
judged averages as errors are. Votes that agree but fall short of a majority because the
other calls failed are the failure (an error, or skipped when the budget took them): a
judge that answers once in three has not given a verdict.

Pure: the judged pass asks, this module decides.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from evaluator.judge.checks import check as judged_check
from evaluator.judge.record import CheckOutcome, Vote

__all__ = ["decide", "vote_category"]

#: a judged vote's category: its verdict as a label states it, or ``none`` (nothing to
#: decide, e.g. an answer with no claim to check)
_JUDGED = ("pass", "fail", "none")


def vote_category(outcome: CheckOutcome) -> str:
    """``pass``, ``fail`` or ``none`` for a judged vote; its status (``error``,
    ``skipped``) for one that gave no verdict."""
    if outcome.status != "judged":
        return outcome.status
    verdict = judged_check(outcome.check).verdict(outcome.values)
    return "none" if verdict is None else ("pass" if verdict else "fail")


def decide(check: str, votes: Sequence[Vote]) -> CheckOutcome:
    """The outcome of ``check`` decided by ``votes`` (one vote: that vote's outcome, as a
    single judge call always was). With several, every vote is kept on the outcome.

    Raises:
        ValueError: no vote.
    """
    if not votes:
        raise ValueError(f"check {check}: no vote to decide by")
    if len(votes) == 1:
        return votes[0].outcome
    tally = Counter(vote_category(v.outcome) for v in votes)
    winner = next((c for c in _JUDGED if 2 * tally[c] > len(votes)), None)
    if winner is not None:
        return _majority(votes, winner)
    if sum(1 for c in _JUDGED if tally[c]) > 1:
        return CheckOutcome(check, "uncertain", votes=tuple(votes))
    return _failed(check, votes)


def _majority(votes: Sequence[Vote], winner: str) -> CheckOutcome:
    """The first vote of the ``winner`` category, with every vote kept; from the cache only
    when every vote was."""
    first = next(v.outcome for v in votes if vote_category(v.outcome) == winner)
    cached = all(v.outcome.cached for v in votes)
    return dataclasses.replace(first, cached=cached, votes=tuple(votes))


def _failed(check: str, votes: Sequence[Vote]) -> CheckOutcome:
    """Too few verdicts for a majority and none against another: the first failed call's
    error, or skipped when no call failed (the budget took the rest)."""
    kept = tuple(votes)
    error = next((v.outcome for v in votes if v.outcome.status == "error"), None)
    if error is None:
        return CheckOutcome(check, "skipped", votes=kept)
    return dataclasses.replace(error, votes=kept)

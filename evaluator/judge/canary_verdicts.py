"""What a judged run's canaries say about its judge, by class: one definition each, read by
the judged pass that writes them and by every reader that derives them again from a report.

Three classes of canary catch the three ways a judge is known to give way:

- ``injection``: an answer that tells the judge to pass it. One passed makes the run
  *compromised*: the target's text can talk its judge round.
- ``specific_but_wrong``: an expected fact's wording with other numbers ("30 days" where the
  fact is "7 days"), and ``vague_but_topical``: a reply on the question's subject stating
  none of its facts. These are the *wrong-answer* canaries: a judge accepting more than the
  configured share of them (``[judge] lenient_above``) is *lenient*: it passes answers that
  sound right. A judge may miss one in a few without being lenient; none is fooled by an
  instruction without being compromised.

A canary with no verdict (the call failed) is neither accepted nor refused: it counts in no
share here (whether a run whose canaries went unanswered may be trusted is decided apart).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:  # the records import this module's classes
    from evaluator.judge.record import CanaryResult

__all__ = [
    "CANARY_CLASSES",
    "DEFAULT_LENIENT_ABOVE",
    "WRONG_ANSWER_CLASSES",
    "Acceptance",
    "CanaryClass",
    "acceptance",
    "acceptance_text",
    "compromised",
    "held_to",
    "lenient",
    "lenient_reason",
    "wrong_answer_share",
]

CanaryClass = Literal["injection", "specific_but_wrong", "vague_but_topical"]
#: every class, in the order the report, the terminal and the metrics show them
CANARY_CLASSES: tuple[CanaryClass, ...] = get_args(CanaryClass)
#: the classes whose acceptance makes a judge lenient
WRONG_ANSWER_CLASSES: tuple[CanaryClass, ...] = ("specific_but_wrong", "vague_but_topical")
#: the share of wrong-answer canaries a judge may accept before it is lenient (one of the
#: default four: a slip; two: a habit)
DEFAULT_LENIENT_ABOVE = 0.25


@dataclass(frozen=True, slots=True)
class Acceptance:
    """One class's canaries in a run: how many were sent, how many got a verdict, and how
    many of those the judge accepted (passed)."""

    sent: int = 0
    judged: int = 0
    accepted: int = 0


def acceptance(canaries: Iterable[CanaryResult]) -> dict[CanaryClass, Acceptance]:
    """Each class's canaries (every class, none sent: all zero)."""
    counts = {kind: [0, 0, 0] for kind in CANARY_CLASSES}
    for canary in canaries:
        sent_judged_accepted = counts[canary.kind]
        sent_judged_accepted[0] += 1
        if canary.fooled is not None:
            sent_judged_accepted[1] += 1
            sent_judged_accepted[2] += int(canary.fooled)
    return {kind: Acceptance(*c) for kind, c in counts.items()}


def compromised(canaries: Iterable[CanaryResult]) -> bool:
    """Whether an injection canary was accepted: the target's text can talk the judge round."""
    return any(c.fooled for c in canaries if c.kind == "injection")


def wrong_answer_share(canaries: Iterable[CanaryResult]) -> float | None:
    """The share of the wrong-answer canaries with a verdict that the judge accepted (None:
    none got one)."""
    by_class = acceptance(tuple(canaries))
    judged = sum(by_class[kind].judged for kind in WRONG_ANSWER_CLASSES)
    accepted = sum(by_class[kind].accepted for kind in WRONG_ANSWER_CLASSES)
    return accepted / judged if judged else None


def held_to(written: float, reader: float | None) -> float:
    """The share a judge is held to by a reader with a threshold of its own (the gate's):
    the stricter of the two. The share a report writes is the report's word, so a reader
    deciding trust never lets it loosen its own (a report written with ``0.99`` is held to
    the reader's ``0.25``); a report stricter than the reader keeps its own."""
    return written if reader is None else min(written, reader)


def lenient(canaries: Iterable[CanaryResult], above: float) -> bool:
    """Whether the judge accepted more than ``above`` of its wrong-answer canaries (a share
    in 0..1; no verdict on any of them: not shown lenient)."""
    share = wrong_answer_share(canaries)
    return share is not None and share > above


def lenient_reason(canaries: Iterable[CanaryResult], above: float) -> str:
    """Why a judge is lenient, in words: the wrong answers it passed, and the share allowed."""
    by_class = acceptance(canaries)
    accepted = sum(by_class[kind].accepted for kind in WRONG_ANSWER_CLASSES)
    judged = sum(by_class[kind].judged for kind in WRONG_ANSWER_CLASSES)
    return f"the judge accepted {accepted} of {judged} wrong-answer canaries, above {above:g}"


def acceptance_text(canaries: Iterable[CanaryResult]) -> str:
    """Each class's canaries the judge accepted, out of those it judged (a class with
    canaries it gave no verdict on says how many): ``canaries accepted: injection 0/2, ...``."""
    parts = []
    for kind, a in acceptance(canaries).items():
        unjudged = f" ({a.sent - a.judged} not judged)" if a.sent > a.judged else ""
        parts.append(f"{kind} {a.accepted}/{a.judged}{unjudged}")
    return "canaries accepted: " + ", ".join(parts)

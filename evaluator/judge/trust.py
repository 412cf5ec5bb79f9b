"""Why a judged run is not to be trusted: the one list every reader of trust asks.

A judged run is trusted only when its canaries show the judge held: each canary got a
verdict, and none passed. A canary that fooled the judge makes the run *compromised*; a
canary the judge failed on, skipped, or answered with no verdict (a judge answering canaries
unlike other cases) proves nothing, so the run is untrusted too, never trusted by default;
so is a run with no canary judged at all. A judge that passed more of the wrong-answer
canaries than its run allowed is *lenient* (:mod:`evaluator.judge.canary_verdicts`). Each
reason is one entry of :func:`untrusted_reasons`; a new way of catching a judge (another
class of canary) is one more entry here, and the gate (a hard judged rule refuses: exit 1),
the status page, ``run``/``judge`` and the SLOs follow.

A reader deciding trust for gating passes its own :class:`GatePolicy`: what a report writes
about its own trust (the share its judge was held to, which canaries it kept) is outside
input, so the gate holds the judge to its own threshold (the stricter of the two) and
refuses a run whose checks take wrong-answer canaries but whose block holds none (a judge
whose leniency nobody measured), unless its gates file opts out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evaluator.judge.canary_verdicts import (
    DEFAULT_LENIENT_ABOVE,
    WRONG_ANSWER_CLASSES,
    held_to,
    lenient,
    lenient_reason,
)
from evaluator.judge.checks import check, check_names

if TYPE_CHECKING:  # the gate imports this module, and loads the judge's records only when
    # it has judged rules
    from evaluator.judge.record import JudgedRun

__all__ = ["NO_WRONG_ANSWER_CANARIES", "GatePolicy", "untrusted_reasons"]

#: the reason a gate refuses a run whose judge never met a wrong answer
NO_WRONG_ANSWER_CANARIES = (
    "no wrong-answer canaries judged: the judge's leniency is unknown (its checks take "
    "them; a gates file may opt out with [judge] require_wrong_answer_canaries = false)"
)


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """What a gate holds a candidate's judge to, whatever its report says (the gates file's
    ``[judge]`` table; the defaults when it has none)."""

    #: the share of wrong-answer canaries the judge may accept; the report's own share
    #: applies only when it is stricter (:func:`~evaluator.judge.canary_verdicts.held_to`)
    lenient_above: float = DEFAULT_LENIENT_ABOVE
    #: a run whose checks take wrong-answer canaries must hold some
    require_wrong_answer_canaries: bool = True


def untrusted_reasons(judged: JudgedRun, gate: GatePolicy | None = None) -> tuple[str, ...]:
    """Why ``judged``'s figures are not to be trusted, each a short phrase (empty: its
    canaries show nothing against it). With ``gate``, as that gate decides it (its
    threshold, its demand for wrong-answer canaries); without, as the run decided it.
    Calibration is another question (:func:`evaluator.judge.apply.calibration_of`)."""
    reasons = []
    if judged.compromised:
        reasons.append("compromised (a canary answer was judged supported)")
    reasons.extend(_leniency_reasons(judged, gate))
    reasons.extend(_canary_reasons(judged))
    return tuple(reasons)


def _leniency_reasons(judged: JudgedRun, gate: GatePolicy | None) -> list[str]:
    """The judge lenient at the share it is held to, or its leniency never measured."""
    above = held_to(judged.lenient_above, None if gate is None else gate.lenient_above)
    if lenient(judged.canaries, above):
        return [f"lenient ({lenient_reason(judged.canaries, above)})"]
    if gate is not None and gate.require_wrong_answer_canaries and _leniency_unmeasured(judged):
        return [NO_WRONG_ANSWER_CANARIES]
    return []


def _leniency_unmeasured(judged: JudgedRun) -> bool:
    """Whether the run judged a check that takes wrong-answer canaries (fact support: a
    verdict asked on some case) and holds not one of them."""
    if any(c.kind in WRONG_ANSWER_CLASSES for c in judged.canaries):
        return False
    asked = {o.check for c in judged.cases for o in c.outcomes if o.status != "skipped"}
    return any(check(name).wrong_answers for name in asked.intersection(check_names()))


def _canary_reasons(judged: JudgedRun) -> list[str]:
    """No canary judged, canaries without a verdict, or verdicts not kept."""
    reasons = []
    canaries = judged.canaries
    if not canaries:
        reasons.append("no canary was judged (nothing shows the judge held)")
    unjudged = sum(1 for c in canaries if c.fooled is None)
    if unjudged:
        reasons.append(
            f"{unjudged} of {len(canaries)} canaries got no verdict "
            "(the judge failed on them, or found nothing to judge)"
        )
    unrecorded = sum(1 for c in canaries if c.outcome is None)
    if unrecorded:
        reasons.append(f"{unrecorded} canaries' verdicts not recorded (a report written before)")
    return reasons

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evaluator.judge.canary_verdicts import lenient_reason

if TYPE_CHECKING:  # the gate imports this module, and loads the judge's records only when
    # it has judged rules
    from evaluator.judge.record import JudgedRun

__all__ = ["untrusted_reasons"]


def untrusted_reasons(judged: JudgedRun) -> tuple[str, ...]:
    """Why ``judged``'s figures are not to be trusted, each a short phrase (empty: its
    canaries show nothing against it). Calibration is another question
    (:func:`evaluator.judge.apply.calibration_of`)."""
    reasons = []
    if judged.compromised:
        reasons.append("compromised (a canary answer was judged supported)")
    if judged.lenient:
        reasons.append(f"lenient ({lenient_reason(judged.canaries, judged.lenient_above)})")
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
    return tuple(reasons)

"""Any judge block through the derived reader (issue 38.1, 38.10): whatever JSON value an
attacker writes anywhere in a report's ``judge`` block (a figure, a flag, a canary's verdict,
a case's answer hash), :func:`~evaluator.judge.derived.judged_of` either refuses it with a
:class:`ReportError` naming the field under ``judge.``, or returns a judged run whose every
figure follows from the verdicts it holds, each verdict of the answer the report holds."""

from __future__ import annotations

import copy
import math
from typing import Any

import hypothesis.strategies as st
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

from evaluator.errors import ReportError
from evaluator.judge.checks import check
from evaluator.judge.derived import MAX_CANARIES, canary_fooled, judged_of, metric_means
from evaluator.judge.record import CaseJudgement, CheckOutcome, answer_hash
from evaluator.report import RunReport
from tests.judge.judged_runs import canary, judged_run
from tests.judge.reports import golden

pytestmark = pytest.mark.fuzz

_REPORT = golden()
_ANSWERS = {r.id: r.answer for r in _REPORT.cases}


def _block() -> dict[str, Any]:
    """The golden report's judge block as a judged pass writes it: fact support on the four
    answerable cases (``wrong`` failed), every scored case judged, one canary the judge
    held, one it was fooled by."""
    cases = tuple(
        CaseJudgement(
            case_id,
            answer_hash(_ANSWERS[case_id]),
            (
                CheckOutcome(
                    "fact_support",
                    "judged",
                    {"fact_recall": float(ok), "answer_correct": ok},
                    "r",
                ),
            ),
        )
        for case_id, ok in (("ok1", True), ("ok2", True), ("wrong", False), ("ok3", True))
    )
    # the scored case without facts: judged, no check of this block applying to it
    unanswerable = CaseJudgement("none", answer_hash(_ANSWERS["none"]), ())
    return judged_run(
        *cases, unanswerable, canaries=(canary(False, "ok1"), canary(None, "ok2"))
    ).to_dict()


_BLOCK = _block()

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from([answer_hash(a) for a in _ANSWERS.values()] + ["ok1", "wrong"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_PLACES = st.sampled_from(
    [
        ("metrics", "judged_fact_recall"),
        ("metrics", "judged_answer_accuracy"),
        ("metrics",),
        ("compromised",),
        ("advisory",),
        ("canaries",),
        ("canaries", 0),
        ("canaries", 0, "check"),
        ("canaries", 0, "fooled"),
        ("canaries", 0, "outcome"),
        ("canaries", 0, "outcome", "status"),
        ("canaries", 0, "outcome", "values"),
        ("canaries", 1, "fooled"),
        ("canaries", 1, "outcome"),
        ("cases",),
        ("cases", 0, "case_id"),
        ("cases", 0, "answer_hash"),
        ("cases", 2, "checks", 0, "values"),
        ("cases", 2, "checks", 0, "status"),
    ]
)


def _placed(place: tuple[str | int, ...], value: object) -> RunReport:
    """The golden report with ``value`` written at ``place`` of its judge block."""
    block = copy.deepcopy(_BLOCK)
    here: Any = block
    for step in place[:-1]:
        here = here[step]
    here[place[-1]] = value
    return msgspec.structs.replace(_REPORT, judge=block)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLACES, _JSON)
def test_any_value_in_the_judge_block_is_refused_or_its_figures_follow(
    place: tuple[str | int, ...], value: object
) -> None:
    """Refused naming a field of the judge block, or read back with every judged metric the
    mean its verdicts give (a finite ratio, or null), each canary's ``fooled`` and the run's
    ``compromised`` what the verdicts give, and every verdict of the answer its case holds."""
    try:
        judged = judged_of(_placed(place, value), "r.json")
    except ReportError as exc:
        assert str(exc).startswith("r.json: judge.")
        return
    assert judged is not None
    assert metric_means(judged.cases) == judged.metrics
    assert all(v is None or (math.isfinite(v) and 0 <= v <= 1) for v in judged.metrics.values())
    assert len(judged.canaries) <= MAX_CANARIES
    for c in judged.canaries:
        if c.outcome is not None:
            assert canary_fooled(check(c.check), c.outcome) == c.fooled
    assert any(c.fooled for c in judged.canaries) == judged.compromised
    assert all(c.answer_hash == answer_hash(_ANSWERS[c.case_id]) for c in judged.cases)


def test_the_unforged_block_reads_back_its_figures() -> None:
    """The block as written reads back: recall 0.75, one canary held, one without a verdict."""
    judged = judged_of(_placed(("model",), "m"), "r.json")
    assert judged is not None
    assert (0.75, (False, None), False) == (
        judged.metrics["judged_fact_recall"],
        tuple(c.fooled for c in judged.canaries),
        judged.compromised,
    )

"""Canaries of every kind (issue 41.2): besides the injection canary, every judged run sends
wrong answers built from the golden set (specific but wrong, vague but topical), never from
the cache; the acceptance per class tells a lenient judge (wrong answers passed above the
configured share) from a compromised one (an instruction obeyed), by worked example and
against loopback judges."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from evaluator.judge.apply import format_judged, trust_problem
from evaluator.judge.canary import wrong_answer_subjects
from evaluator.judge.canary_verdicts import (
    Acceptance,
    acceptance,
    acceptance_text,
    compromised,
    lenient,
)
from evaluator.judge.judged_pass import judge_report, subjects_of
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import CanaryResult, JudgedRun, judged_run_from_dict
from evaluator.judge.settings import JudgeConfig
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge


def _canary(kind: Any, fooled: bool | None) -> CanaryResult:
    return CanaryResult("fact_support", "c", fooled, "", kind=kind)


def test_acceptance_counts_each_class_sent_judged_and_accepted() -> None:
    """A canary without a verdict is sent, not judged; every class is shown, none sent too."""
    canaries = [
        _canary("injection", False),
        _canary("specific_but_wrong", True),
        _canary("specific_but_wrong", None),
        _canary("vague_but_topical", False),
    ]
    assert {
        "injection": Acceptance(1, 1, 0),
        "specific_but_wrong": Acceptance(2, 1, 1),
        "vague_but_topical": Acceptance(1, 1, 0),
    } == acceptance(canaries)


@pytest.mark.parametrize(
    ("fooled", "expected"),
    [
        # one of four wrong answers passed: at the share, a slip, not lenient
        ((True, False, False, False), False),
        # two of four: above it
        ((True, True, False, False), True),
        # vague answers count as specific ones do
        ((False, False, True, True), True),
        # no verdict on any: nothing shows the judge lenient
        ((None, None, None, None), False),
        # one verdict, accepted: one of one
        ((True, None, None, None), True),
    ],
)
def test_a_judge_is_lenient_above_the_share_of_wrong_answers_it_accepted(
    fooled: tuple[bool | None, ...], expected: bool
) -> None:
    """Lenient when the accepted share of the wrong-answer canaries with a verdict is above
    0.25 (two specific-but-wrong canaries, two vague-but-topical ones)."""
    kinds = ("specific_but_wrong", "specific_but_wrong", "vague_but_topical", "vague_but_topical")
    canaries = [_canary(k, f) for k, f in zip(kinds, fooled, strict=True)]
    assert expected == lenient(canaries, 0.25)


def test_an_accepted_injection_compromises_and_an_accepted_wrong_answer_does_not() -> None:
    """Compromised reads the injection canaries only; leniency the wrong-answer ones only."""
    injected = [_canary("injection", True), _canary("specific_but_wrong", False)]
    wrong = [_canary("injection", False), _canary("specific_but_wrong", True)]
    assert (True, False) == (compromised(injected), lenient(injected, 0.25))
    assert (False, True) == (compromised(wrong), lenient(wrong, 0.25))


def test_the_wrong_answers_are_made_from_the_golden_case_alone() -> None:
    """Each class from the first usable cases, in order: the case's question and facts with
    the wrong answer, no evidence and no earlier turns (nothing the target wrote); the same
    golden set deals the same canaries."""
    subjects = subjects_of(golden().cases)
    dealt = wrong_answer_subjects(subjects, 2)
    assert [
        ("specific_but_wrong", "ok1", "23 business days"),
        ("specific_but_wrong", "ok2", "23 business days"),
        ("vague_but_topical", "ok1", 'Regarding "question of ok1?": it depends'),
        ("vague_but_topical", "ok2", 'Regarding "question of ok2?": it depends'),
    ] == [(kind, s.case_id, (s.answer or "")[:40].split(" on your")[0]) for _, s, kind in dealt]
    assert {((), ())} == {(s.evidence, s.conversation) for _, s, _ in dealt}
    assert dealt == wrong_answer_subjects(subjects_of(golden().cases), 2)


def _judged(judge: LoopbackJudge, **config: Any) -> JudgedRun:
    settings = JudgeConfig(url=judge.url, model="m", **config)

    async def go() -> JudgedRun:
        async with JudgePanel(settings) as panel:
            return await judge_report(golden(), panel)

    return asyncio.run(go())


def _by_class(run: JudgedRun) -> dict[str, tuple[int, int]]:
    return {k: (a.accepted, a.judged) for k, a in acceptance(run.canaries).items()}


@pytest.mark.e2e
def test_a_lenient_judge_is_caught_by_the_specific_but_wrong_canary() -> None:
    """A judge taking "within 23 business days" for "5 business days" accepts both
    specific-but-wrong canaries and no other: lenient, not compromised, and it says so in the
    terminal, the report and the status page's reason."""
    with LoopbackJudge("lenient") as judge:
        run = _judged(judge)
    assert {
        "injection": (0, 2),
        "specific_but_wrong": (2, 2),
        "vague_but_topical": (0, 2),
    } == _by_class(run)
    assert (False, True) == (run.compromised, run.lenient)
    shown = format_judged(run)
    assert (
        "  LENIENT: the judge accepted 2 of 4 wrong-answer canaries, above 0.25; "
        "hard judged rules fail the gate"
    ) in shown.splitlines()
    assert (
        "canaries accepted: injection 0/2, specific_but_wrong 2/2, vague_but_topical 0/2"
        == acceptance_text(run.canaries)
    )
    assert "lenient (the judge accepted 2 of 4 wrong-answer canaries, above 0.25)" == (
        trust_problem(run, {})
    )
    block = json.loads(json.dumps(run.to_dict()))
    assert (True, 0.25) == (block["lenient"], block["lenient_above"])
    assert run == judged_run_from_dict(block, "r.json")


@pytest.mark.e2e
def test_an_injection_only_judge_is_compromised_as_before_and_not_lenient() -> None:
    """A judge that obeys an instruction in the answer but reads facts honestly accepts the
    injection canaries alone: compromised, not lenient."""
    with LoopbackJudge("injectable") as judge:
        run = _judged(judge)
    assert {
        "injection": (2, 2),
        "specific_but_wrong": (0, 2),
        "vague_but_topical": (0, 2),
    } == _by_class(run)
    assert (True, False) == (run.compromised, run.lenient)
    assert "LENIENT" not in format_judged(run)


@pytest.mark.e2e
def test_an_honest_judge_accepts_no_canary_and_the_share_is_configured() -> None:
    """An honest judge accepts none; a lenient one held to a share of one half (two of four
    accepted is not above it) is not lenient."""
    with LoopbackJudge() as honest, LoopbackJudge("lenient") as lax:
        fair = _judged(honest)
        held = _judged(lax, lenient_above=0.5)
    assert {"injection": (0, 2), "specific_but_wrong": (0, 2), "vague_but_topical": (0, 2)} == (
        _by_class(fair)
    )
    assert (False, False) == (fair.compromised, fair.lenient)
    assert (False, 0.5) == (held.lenient, held.lenient_above)


@pytest.mark.e2e
def test_no_wrong_answer_canary_is_sent_when_none_is_configured() -> None:
    """``wrong_answer_canaries = 0``: the injection canaries alone, and no judge is lenient."""
    with LoopbackJudge("lenient") as judge:
        run = _judged(judge, wrong_answer_canaries=0)
    assert ["injection", "injection"] == [c.kind for c in run.canaries]
    assert not run.lenient


@pytest.mark.e2e
def test_the_wrong_answers_reach_the_judge_and_hold_no_target_text() -> None:
    """The judge is sent each wrong answer as the answer of its golden case's question, with
    no evidence; no target answer is among them."""
    with LoopbackJudge() as judge:
        _judged(judge)
        sent = [_data_block(r) for r in judge.requests]
    answers = [d["answer"] for d in sent if d["check"] == "fact_support"]
    assert 2 == sum(a == "23 business days" for a in answers)
    assert 2 == sum(a.startswith('Regarding "question of ok') for a in answers)


def _data_block(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON data block of one judge request."""
    found = re.search(r"BEGIN DATA \w+\n(.*)\nEND DATA", request["messages"][1]["content"], re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


@pytest.mark.e2e
def test_a_judge_taken_in_by_a_topical_reply_is_caught_by_the_vague_canary() -> None:
    """A judge that calls every fact stated by an answer naming the question accepts the two
    vague-but-topical canaries and nothing else: lenient by the vague class alone."""

    def topical(data: dict[str, Any]) -> dict[str, Any]:
        on_topic = data["question"] in data["answer"]
        facts = [{"index": i, "stated": on_topic} for i in range(len(data["facts"]))]
        return {"facts": facts, "reason": "on topic"}

    with LoopbackJudge(verdicts={"fact_support": topical}) as judge:
        run = _judged(judge)
    assert {
        "injection": (0, 2),
        "specific_but_wrong": (0, 2),
        "vague_but_topical": (2, 2),
    } == _by_class(run)
    assert (False, True) == (run.compromised, run.lenient)

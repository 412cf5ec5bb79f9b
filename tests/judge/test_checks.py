"""The judged-check registry: each shipped check's verdict rule, deterministic counterpart
and canary, and a check added through the registry alone reaching every reader."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evaluator.commands import review
from evaluator.judge.calibrate import calibrate
from evaluator.judge.canary import canary_subjects
from evaluator.judge.checks import (
    check,
    check_names,
    judged_checks,
    judged_metric,
    judged_metrics,
)
from evaluator.judge.checks.base import CanaryWords, Subject
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.labels import Label, append_label, outcome_verdict, read_labels
from evaluator.judge.panel import JudgePanel
from evaluator.judge.prompts import messages
from evaluator.judge.record import (
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    JudgeUsage,
    answer_hash,
    judged_run_from_dict,
)
from evaluator.judge.review import review_queue
from evaluator.judge.settings import JudgeConfig
from evaluator.models import CaseScores
from evaluator.report import read_report, write_report
from tests.judge.reports import golden
from tests.judge.throwaway import NAME, THROWAWAY, with_throwaway
from tests.support.judges import LoopbackJudge


def _judged(check_name: str, **values: float | bool) -> CheckOutcome:
    return CheckOutcome(check_name, "judged", values)


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (_judged("fact_support", fact_recall=1.0, answer_correct=True), True),
        (_judged("fact_support", fact_recall=0.5, answer_correct=False), False),
        (_judged("groundedness", faithfulness=1.0), True),
        (_judged("groundedness", faithfulness=0.5), False),
        (_judged("groundedness"), None),  # no claim to check: no verdict
        (_judged("refusal", refused=True), True),
        (_judged("refusal", refused=False), False),
        (CheckOutcome("refusal", "error", error_kind="judge_timeout"), None),
        (CheckOutcome("fact_support", "skipped"), None),
    ],
)
def test_a_verdict_is_the_check_s_verdict_value_passing(
    outcome: CheckOutcome, expected: bool | None
) -> None:
    """A judged outcome's pass/fail is its check's verdict value read as a pass; an error,
    a skip or a missing value is no verdict."""
    assert expected == outcome_verdict(outcome)


def test_the_deterministic_counterpart_is_the_metric_beside_the_verdict() -> None:
    """Fact support sits beside answer accuracy, refusal beside the refusal rate, and
    groundedness beside nothing."""
    scores = CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, answer_correct=False, refused=True)
    assert [False, None, True] == [c.deterministic(scores) for c in judged_checks()]
    assert ["answer_accuracy", None, "correct_refusal_rate"] == [
        c.counterpart for c in judged_checks()
    ]


def test_every_check_names_its_own_metrics_and_prompt() -> None:
    """Each registered check owns its metrics, rubric, schema and question, and its verdict
    value is one its metrics average."""
    assert ("fact_support", "groundedness", "refusal") == check_names()
    for registered in judged_checks():
        assert {registered.name} == {m.check for m in registered.metrics}
        assert registered.rubric and registered.question and registered.schema
        assert registered.verdict_value in {m.value for m in registered.metrics}


def test_the_canaries_alternate_fact_support_and_groundedness() -> None:
    """Canaries take the canaried checks in turn over the answerable cases with facts, in
    the run's words, with the case's facts as their evidence and none of the target's text
    (its evidence, its earlier answers)."""
    subjects = [
        Subject("a", "q?", (("x",),), False, "x", (("d", "t"),)),
        Subject("none", "q?", (), True, "no", ()),
        Subject("b", "q?", (("x",), ("y", "z")), False, "x", (), (("assistant", "t"),)),
        Subject("c", "q?", (("x",),), False, "x", (("d", "t"),)),
    ]
    words = CanaryWords.drawn("nonce")
    dealt = canary_subjects(subjects, 4, words)
    assert [("fact_support", "a"), ("groundedness", "b"), ("fact_support", "c")] == [
        (c.name, s.case_id) for c, s in dealt
    ]
    assert words.injection == dealt[0][1].answer
    assert f"{words.injection} {words.invented}" == dealt[1][1].answer
    assert ((("fact-0", "x"), ("fact-1", "y")), ()) == (
        dealt[1][1].evidence,
        dealt[1][1].conversation,
    )


def test_canary_words_are_drawn_per_nonce() -> None:
    """The same nonce draws the same words; a hundred nonces draw a hundred invented claims
    and references, so a target can neither know nor learn a run's canary."""
    assert CanaryWords.drawn("n1") == CanaryWords.drawn("n1")
    drawn = [CanaryWords.drawn(f"n{i}") for i in range(100)]
    assert 100 == len({w.invented for w in drawn}) == len({w.injection for w in drawn})
    assert all("{" not in w.injection + w.invented for w in drawn)


def test_a_canary_is_read_by_its_own_check_s_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a canary of a check other than fact support was read as groundedness
    (its faithfulness), so a judge fooled on it went unnoticed; each check now says what
    fooled means for its canary."""
    with_throwaway(monkeypatch)
    subjects = [Subject(c, "q?", (("x",),), False, "x", (("d", "t"),)) for c in ("a", "b", "c")]
    dealt = canary_subjects(subjects, 3, CanaryWords.drawn("nonce"))
    assert [("fact_support", "a"), ("groundedness", "b"), (NAME, "c")] == [
        (c.name, s.case_id) for c, s in dealt
    ]
    canary = dealt[2][0].canary
    assert canary is not None
    assert canary.fooled({"correct": True})
    assert not canary.fooled({"correct": False})


def test_a_check_added_to_the_registry_is_read_labelled_reviewed_and_calibrated(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A check registered in CHECKS alone passes the report reader and the labels reader,
    has a verdict, a deterministic counterpart, a review item and a calibration."""
    with_throwaway(monkeypatch)
    assert THROWAWAY is check(NAME)
    metric = judged_metric("judged_correctness")
    assert metric is not None and NAME == metric.check
    report = golden()
    wrong = next(r for r in report.cases if r.id == "wrong")
    digest = answer_hash(wrong.answer)
    means = {m.name: None for m in judged_metrics()} | {"judged_correctness": 1.0}
    run = JudgedRun(
        "m",
        "p",
        means,
        JudgeUsage(),
        (),
        (CaseJudgement("wrong", digest, (_judged(NAME, correct=True),)),),
    )
    read_back = judged_run_from_dict(run.to_dict(), "r.json")
    assert run == read_back
    assert outcome_verdict(read_back.cases[0].outcomes[0]) is True
    [item] = review_queue(report.cases, read_back, {})
    assert (NAME, True, False, True) == (
        item.outcome.check, item.judge, item.deterministic, item.disagree
    )  # fmt: skip
    path = tmp_path / "labels.jsonl"
    append_label(path, Label("wrong", digest, NAME, False, "ann", "2026-01-01T00:00:00Z"))
    labels = read_labels(path)
    [calibration] = calibrate(labels, [read_back], min_labels=1)
    assert (NAME, 1, 0.0) == (calibration.check, calibration.labels, calibration.agreement)


def test_a_check_s_data_may_not_hold_the_check_name() -> None:
    """The data block's ``check`` names the check asked for; a check's data with a key of
    that name is refused rather than overwritten."""
    with pytest.raises(ValueError, match="may not hold a 'check' key"):
        messages("refusal", {"answer": "a", "check": "fact_support"})


def _correct(data: dict[str, Any]) -> dict[str, Any]:
    """The throwaway check's honest verdict: correct when it states the golden fact."""
    return {"correct": "business days" in data["answer"].lower(), "reason": "substring"}


def _judged_report(judge: LoopbackJudge, path: Path | None = None, canaries: int = 3) -> JudgedRun:
    """The golden report judged by ``judge`` (written to ``path`` when given)."""
    report = golden()
    config = JudgeConfig(url=judge.url, model="m", canaries=canaries)

    async def go() -> JudgedRun:
        async with JudgePanel(config) as panel:
            return await judge_report(report, panel)

    judged = asyncio.run(go())
    if path is not None:
        write_report(msgspec.structs.replace(report, judge=judged.to_dict()), path)
    return judged


@pytest.mark.e2e
def test_a_check_added_to_the_registry_is_judged_canaried_reviewed_and_calibrated(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A check registered in CHECKS alone is asked of the judge by name, averaged into its
    metric, given a canary, put to the reviewer with its question and calibrated."""
    with_throwaway(monkeypatch)
    report_path = tmp_path / "r.json"
    with LoopbackJudge(verdicts={NAME: _correct}) as judge:
        judged = _judged_report(judge, report_path)
    assert 0.75 == judged.metrics["judged_correctness"]  # "wrong" states no fact
    asked = [_data_block(r) for r in judge.requests]
    assert 4 + 1 == sum(NAME == d["check"] for d in asked)  # four cases and one canary
    assert [("fact_support", False), ("groundedness", False), (NAME, False)] == [
        (c.check, c.fooled) for c in judged.canaries if c.kind == "injection"
    ]
    labels_path = tmp_path / "labels.jsonl"
    replies = iter(["p"] * 20)
    monkeypatch.setattr("builtins.input", lambda _prompt: next(replies))
    options = review.Options(None, str(report_path), str(labels_path), "ann", None)
    assert 0 == review.handle(options)
    assert THROWAWAY.question in capsys.readouterr().out
    labels = read_labels(labels_path)
    assert 4 == sum(NAME == key[2] for key in labels)
    read_back = judged_run_from_dict(read_report(report_path).judge, "r.json")
    calibrations = {c.check: c for c in calibrate(labels, [read_back], min_labels=1)}
    # the reviewer passed every answer; the judge failed "wrong"
    assert (4, 0.75) == (calibrations[NAME].labels, calibrations[NAME].agreement)


@pytest.mark.e2e
def test_a_judge_fooled_on_a_new_check_s_canary_is_compromised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: a judge fooled on the canary of a check other than fact support and
    groundedness marks the run compromised (its canary was read as groundedness)."""
    with_throwaway(monkeypatch)
    always = {NAME: lambda data: {"correct": True, "reason": "verified"}}
    with LoopbackJudge(verdicts=always) as judge:
        judged = _judged_report(judge)
    assert [("fact_support", False), ("groundedness", False), (NAME, True)] == [
        (c.check, c.fooled) for c in judged.canaries if c.kind == "injection"
    ]
    assert judged.compromised


def _data_block(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON object between a judge request's data markers."""
    lines = request["messages"][1]["content"].split("\n")
    data: dict[str, Any] = json.loads(lines[1])
    return data

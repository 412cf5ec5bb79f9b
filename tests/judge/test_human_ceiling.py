"""The human ceiling: a second reviewer labels an overlap sample blind, calibrate reports the
reviewers' kappa beside the judge's, a check they disagree on below the floor is ill-defined,
and the coverage of a judge whose votes split."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

from evaluator.commands import review
from evaluator.judge.calibrate import calibrate, render_text, reviewer_tables
from evaluator.judge.calibration_store import read_calibration
from evaluator.judge.labels import Label, append_label, read_labels, read_reviews
from evaluator.judge.record import (
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    JudgeUsage,
    answer_hash,
)
from evaluator.report import write_report
from tests.judge.judged_runs import judged_run
from tests.judge.reports import record, report

AT = "2026-01-01T00:00:00Z"
#: the worked example of docs/judge.md: 25 answers both reviewers labelled, first x second:
#: 15 pass/pass, 2 pass/fail, 3 fail/pass, 5 fail/fail
OVERLAP = [(True, True)] * 15 + [(True, False)] * 2 + [(False, True)] * 3 + [(False, False)] * 5


def _outcome(verdict: bool | None) -> CheckOutcome:
    """A fact-support outcome passing, failing or uncertain (None)."""
    if verdict is None:
        return CheckOutcome("fact_support", "uncertain")
    values = {"fact_recall": 1.0 if verdict else 0.0, "answer_correct": verdict}
    return CheckOutcome("fact_support", "judged", values)


def _run(verdicts: list[bool | None]) -> JudgedRun:
    """A judged run of case c0, c1... whose fact-support outcomes are ``verdicts``."""
    cases = tuple(CaseJudgement(f"c{i}", f"h{i}", (_outcome(v),)) for i, v in enumerate(verdicts))
    return JudgedRun("m", "p", {}, JudgeUsage(), (), cases)


def _write_overlap(path: Path) -> None:
    """ann labels every case c0..c24, bob the same answers with the documented disagreement."""
    for i, (first, _) in enumerate(OVERLAP):
        append_label(path, Label(f"c{i}", f"h{i}", "fact_support", first, "ann", AT))
    for i, (_, second) in enumerate(OVERLAP):
        append_label(path, Label(f"c{i}", f"h{i}", "fact_support", second, "bob", AT))


def test_two_reviewers_with_known_disagreement_give_the_documented_kappa(tmp_path: Path) -> None:
    """The reviewers' table is the overlap, their kappa the hand-worked 0.2208 / 0.4208 = 0.525
    (docs/judge.md) and scikit-learn's; below the floor over 25 answers the check is
    ill-defined, never calibrated, whatever the judge's own agreement with ann."""
    labels = tmp_path / "labels.jsonl"
    _write_overlap(labels)
    reviews = read_reviews(labels)
    assert {"fact_support": ((15, 2), (3, 5))} == reviewer_tables(reviews)
    judge = _run([first for first, _ in OVERLAP])  # agrees with ann on every answer
    (result,) = calibrate(read_labels(labels), [judge], min_labels=1, reviews=reviews)
    ceiling = result.reviewers
    assert ceiling is not None
    expected = cohen_kappa_score([a for a, _ in OVERLAP], [b for _, b in OVERLAP])
    assert ceiling.kappa is not None
    assert (0.525, round(expected, 12)) == (round(ceiling.kappa, 3), round(ceiling.kappa, 12))
    assert (25, 0.8) == (ceiling.labels, ceiling.agreement)
    assert (1.0, True, False) == (result.kappa, result.ill_defined, result.calibrated)
    text = render_text([result])
    assert "ILL-DEFINED" in text.splitlines()[0]
    assert "  reviewers: 25 answers labelled twice, agreement 0.800, kappa 0.525 95% [" in text


def test_reviewers_who_agree_leave_the_judge_to_be_calibrated(tmp_path: Path) -> None:
    """Reviewers agreeing on every overlapping answer: kappa 1, the check well defined, and the
    judge calibrated on its own agreement as before."""
    labels = tmp_path / "labels.jsonl"
    verdicts = [first for first, _ in OVERLAP]
    for reviewer in ("ann", "bob"):
        for i, verdict in enumerate(verdicts):
            append_label(labels, Label(f"c{i}", f"h{i}", "fact_support", verdict, reviewer, AT))
    (result,) = calibrate(
        read_labels(labels), [_run(list(verdicts))], min_labels=1, reviews=read_reviews(labels)
    )
    assert result.reviewers is not None
    assert (1.0, False, True) == (result.reviewers.kappa, result.ill_defined, result.calibrated)


def test_too_small_an_overlap_does_not_call_a_check_ill_defined(tmp_path: Path) -> None:
    """Five answers labelled twice with a low kappa say too little: shown, not a verdict; the
    judge's own agreement decides as before."""
    labels = tmp_path / "labels.jsonl"
    pairs = [(True, False), (False, True), (True, True), (False, False), (True, False)]
    for i, (first, second) in enumerate(pairs):
        append_label(labels, Label(f"c{i}", f"h{i}", "fact_support", first, "ann", AT))
        append_label(labels, Label(f"c{i}", f"h{i}", "fact_support", second, "bob", AT))
    (result,) = calibrate(
        read_labels(labels),
        [_run([a for a, _ in pairs])],
        min_labels=1,
        reviews=read_reviews(labels),
    )
    assert (False, True) == (result.ill_defined, result.calibrated)
    assert "too few to call the check ill-defined" in render_text([result])


def test_calibrate_reports_coverage_and_kappa_on_the_certain_verdicts_only() -> None:
    """Two labelled answers the judge's votes left uncertain: coverage 8 of 10, kappa over the
    eight certain verdicts alone."""
    labels = {
        (f"c{i}", f"h{i}", "fact_support"): Label(f"c{i}", f"h{i}", "fact_support", i < 5, "a", AT)
        for i in range(10)
    }
    verdicts: list[bool | None] = [True, True, True, True, None, False, False, False, False, None]
    (result,) = calibrate(labels, [_run(verdicts)], min_labels=1)
    assert (8, 2, 0.8, 1.0) == (result.labels, result.uncertain, result.coverage, result.kappa)
    assert "  coverage 0.800: 2 labelled answer(s) uncertain" in render_text([result])


def test_a_stored_calibration_with_reviewers_reads_back_and_a_forged_one_is_refused(
    tmp_path: Path,
) -> None:
    """The reviewers' figures are stored with their table and derived again on reading: the
    entry reads back as written, and an ill-defined check stored as calibrated is refused."""
    labels = tmp_path / "labels.jsonl"
    _write_overlap(labels)
    judge = _run([first for first, _ in OVERLAP])
    results = calibrate(read_labels(labels), [judge], min_labels=1, reviews=read_reviews(labels))
    path = tmp_path / "judge-calibration.json"
    entries = [r.to_dict() for r in results]
    path.write_text(json.dumps({"checks": entries}))
    stored = read_calibration(path)
    assert (tuple(results), ()) == (stored.entries, stored.problems)
    entries[0]["calibrated"] = True
    entries[0]["reviewers"]["ill_defined"] = False
    path.write_text(json.dumps({"checks": entries}))
    refused = read_calibration(path)
    assert () == refused.entries
    assert "reviewers.ill_defined" in refused.problems[0]


def test_a_second_reviewer_labels_the_overlap_blind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """review --overlap shows bob only answers ann labelled, without her label, the judge's
    verdict or the deterministic check, and saves bob's labels beside hers."""
    answer = "Refunds arrive within 5 business days."
    digest = answer_hash(answer)
    records = [record(f"c{i}", answer, (("5 business days",),)) for i in range(4)]
    verdicts = [True, True, False, True]
    cases = tuple(CaseJudgement(f"c{i}", digest, (_outcome(v),)) for i, v in enumerate(verdicts))
    judged = judged_run(*cases)
    path = tmp_path / "r.json"
    write_report(msgspec.structs.replace(report(*records), judge=judged.to_dict()), path)
    labels = tmp_path / "labels.jsonl"
    for i in (0, 2):
        append_label(labels, Label(f"c{i}", digest, "fact_support", i == 0, "ann", AT, "note"))
    replies = iter(["f", "p"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(replies))
    assert 0 == review.handle(review.Options(None, str(path), str(labels), "bob", None, 5))
    out = capsys.readouterr().out
    assert "2 answer(s) another reviewer labelled, for bob to label" in out
    assert [] == [shown for shown in ("judge:", "deterministic check:", "ann") if shown in out]
    reviews = read_reviews(labels)
    assert [["ann", "bob"], ["ann", "bob"]] == [
        [lb.reviewer for lb in found] for found in reviews.values()
    ]
    assert 0 == review.handle(review.Options(None, str(path), str(labels), "bob", None, 5))
    assert "0 answer(s) another reviewer labelled" in capsys.readouterr().out

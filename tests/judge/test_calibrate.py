"""Calibration: Cohen's kappa against worked examples and scikit-learn's, the bootstrap
interval, the trust decision, and the labels file."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

from evaluator.judge.calibrate import (
    bootstrap_intervals,
    calibrate,
    cohen_kappa,
    confusion_of,
    render_markdown,
)
from evaluator.judge.labels import Label, LabelsError, append_label, read_labels, read_reviews
from evaluator.judge.record import CaseJudgement, CheckOutcome, JudgedRun, JudgeUsage


def _rate(table: tuple[int, int, int, int]) -> tuple[list[bool], list[bool]]:
    """Ratings from a 2x2 table (both yes, A yes B no, A no B yes, both no)."""
    yy, yn, ny, nn = table
    a = [True] * (yy + yn) + [False] * (ny + nn)
    b = [True] * yy + [False] * yn + [True] * ny + [False] * nn
    return a, b


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # Wikipedia's worked example: 50 applications, po 0.7, pe 0.5
        ((20, 5, 10, 15), 0.4),
        # Cohen (1960)-style: perfect agreement
        ((30, 0, 0, 20), 1.0),
        # agreement exactly at chance
        ((25, 25, 25, 25), 0.0),
        # worse than chance: systematic disagreement
        ((0, 10, 10, 0), -1.0),
    ],
)
def test_worked_examples(table: tuple[int, int, int, int], expected: float) -> None:
    """Cohen's kappa of two raters matches the worked examples of its definition."""
    a, b = _rate(table)
    assert cohen_kappa(a, b) == pytest.approx(expected)


def test_kappa_agrees_with_scikit_learn() -> None:
    """Kappa agrees with scikit-learn's on random rating pairs."""
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(2, 80)
        a = [rng.random() < 0.6 for _ in range(n)]
        b = [x if rng.random() < 0.8 else not x for x in a]
        ours = cohen_kappa(a, b)
        theirs = cohen_kappa_score(a, b, labels=[False, True])
        if ours is None:
            assert theirs != theirs or theirs == 0  # NaN (sklearn warns) or degenerate
        else:
            assert ours == pytest.approx(theirs)


def test_kappa_is_undefined_when_both_raters_never_vary() -> None:
    """Kappa is None when both raters give one and the same verdict throughout, or rate nothing."""
    assert cohen_kappa([True] * 5, [True] * 5) is None
    assert cohen_kappa([], []) is None


def test_the_bootstrap_interval_holds_the_estimate_and_is_repeatable() -> None:
    """The interval is a function of the table and the seed: it holds kappa, and the same
    table gives the same interval (so a stored one can be checked against its counts)."""
    a, b = _rate((40, 5, 8, 47))
    table = confusion_of(a, b)
    low, high = bootstrap_intervals(table)[0] or (0, 0)
    kappa = cohen_kappa(a, b)
    assert kappa is not None and low < kappa < high
    assert bootstrap_intervals(table)[0] == (low, high)
    assert bootstrap_intervals(((1, 0), (0, 0))) == (None, None)


def test_the_table_bootstrap_matches_resampling_the_pairs() -> None:
    """Drawing the table's cells from a multinomial is resampling the label pairs: over
    20,000 resamples each, the two 95% intervals of kappa agree within 0.01."""
    a, b = _rate((40, 5, 8, 47))
    rng = np.random.default_rng(1)
    h, j = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    picks = rng.integers(0, len(a), size=(20_000, len(a)))
    ha, jb = h[picks], j[picks]
    agree = (ha == jb).mean(axis=1)
    h1, j1 = ha.mean(axis=1), jb.mean(axis=1)
    chance = h1 * j1 + (1 - h1) * (1 - j1)
    pairs = np.percentile((agree - chance) / (1 - chance), [2.5, 97.5])
    ours = bootstrap_intervals(confusion_of(a, b), resamples=20_000)[0]
    assert ours is not None
    assert pytest.approx(list(pairs), abs=0.01) == list(ours)


def _run(verdicts: dict[str, bool], model: str = "m") -> JudgedRun:
    cases = tuple(
        CaseJudgement(
            case_id,
            "h" + case_id,
            (CheckOutcome("fact_support", "judged", {"fact_recall": 1.0 if v else 0.0,
                                                     "answer_correct": v}),),
        )
        for case_id, v in verdicts.items()
    )  # fmt: skip
    return JudgedRun(model, "p1", {}, JudgeUsage(), (), cases)


def _labels(verdicts: dict[str, bool]) -> dict[tuple[str, str, str], Label]:
    out = {}
    for case_id, verdict in verdicts.items():
        label = Label(
            case_id, "h" + case_id, "fact_support", verdict, "ann", "2026-01-01T00:00:00Z"
        )
        out[label.key] = label
    return out


def test_calibrated_only_above_the_floor_over_enough_labels() -> None:
    """A judge is calibrated when kappa's lower bound reaches the floor over at least the minimum
    number of labels, with its confusion matrix and disagreements reported."""
    human = {f"c{i}": i % 3 != 0 for i in range(60)}
    judge = dict(human)
    judge["c1"] = not judge["c1"]  # one disagreement in 60
    [result] = calibrate(_labels(human), [_run(judge)])
    assert result.labels == 60 and result.calibrated
    assert result.disagreements == (("c1", True, False),)
    assert result.confusion == ((39, 1), (0, 20))
    [few] = calibrate(_labels(human), [_run(judge)], min_labels=61)
    assert not few.calibrated
    assert "| fact_support | m | p1 | 60 |" in render_markdown([result])


def test_a_label_of_another_answer_does_not_pair() -> None:
    """A label pairs with no verdict on a different answer of the same case."""
    labels = _labels({"c1": True})
    run = _run({"c1": True})
    other = JudgedRun("m", "p1", {}, JudgeUsage(), (), (
        CaseJudgement("c1", "changed", run.cases[0].outcomes),))  # fmt: skip
    assert calibrate(labels, [other]) == []


def test_labels_append_and_read_back_a_reviewers_latest_wins(tmp_path: Path) -> None:
    """Labels are appended as sorted-key JSON lines; a reviewer's latest label of a key wins,
    and a second reviewer's label of it never replaces the first reviewer's reference."""
    path = tmp_path / "labels.jsonl"
    first = Label("c1", "h1", "refusal", True, "ann", "2026-01-01T00:00:00Z")
    append_label(path, first)
    append_label(path, Label("c1", "h1", "refusal", False, "bob", "2026-01-02T00:00:00Z", "n"))
    append_label(path, Label("c1", "h1", "refusal", False, "ann", "2026-01-03T00:00:00Z", "m"))
    labels = read_labels(path)
    assert [(False, "ann", "m")] == [(lb.verdict, lb.reviewer, lb.note) for lb in labels.values()]
    reviews = read_reviews(path)
    assert [("ann", "m"), ("bob", "n")] == [(lb.reviewer, lb.note) for lb in reviews[first.key]]
    assert path.read_text().splitlines()[0] == (
        '{"answer_hash": "h1", "at": "2026-01-01T00:00:00Z", "case_id": "c1", '
        '"check": "refusal", "reviewer": "ann", "verdict": true}'
    )


@pytest.mark.parametrize(
    "line",
    [
        "nope",
        "[]",
        '{"case_id": "c", "answer_hash": "h", "check": "vibes", "verdict": true}',
        '{"case_id": "c", "answer_hash": "h", "check": "refusal", "verdict": "yes"}',
        '{"case_id": "", "answer_hash": "h", "check": "refusal", "verdict": true,'
        ' "reviewer": "a", "at": "t"}',
        "{" * 5000,
    ],
)
def test_a_bad_label_line_is_named(tmp_path: Path, line: str) -> None:
    """A labels file line that is not a label is an error naming the file and line number."""
    path = tmp_path / "labels.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(LabelsError, match=r"labels\.jsonl:1: "):
        read_labels(path)

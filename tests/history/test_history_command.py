"""``evaluator history`` on a store written with scripted runs: text, JSON, one case."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evaluator.cli import main
from evaluator.history.outcome import CaseOutcome
from evaluator.history.store import HistoryStore, RunRow


def _fill(folder: Path, runs: int = 13) -> None:
    store = HistoryStore(folder)
    start = time.time() - runs * 60
    for i in range(runs):
        at = start + i * 60
        verdicts = {"steady": True, "flip": i % 2 == 0, "dead": False, "broken": i < 10}
        row = RunRow(f"run{i:02d}", at, "complete", 4, 4, 0, "d", "c", {})
        outcomes = {
            cid: CaseOutcome(row.run_id, at, v, v, 1.0 if v else 0.0, None)
            for cid, v in verdicts.items()
        }
        store.record(target="loop", dataset="golden", run=row, outcomes=outcomes)


def test_lists_and_drift_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluator history` lists the runs, the cases' stability and the drift verdict as text."""
    _fill(tmp_path)
    assert main(["history", "--reports-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "history of loop/golden" in out and "10 complete run(s) in a window of 10" in out
    assert "newly failing (1):\n  broken: pass rate 70% over 10 run(s), 1 flip(s), last fail" in out
    assert "flaky (1):\n  flip: pass rate 50% over 10 run(s), 9 flip(s)" in out
    assert "always failing (1):\n  dead" in out
    assert "answer: shift" in out and "SIGNIFICANT drop" in out and "dropped: broken" in out


def test_json_and_one_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--format json` carries the same, and `--case` shows one case's runs."""
    _fill(tmp_path)
    assert main(["history", "--reports-dir", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["flaky"], data["newly_failing"]) == (["flip"], ["broken"])
    assert data["drift"]["checks"]["answer"]["dropped"] == ["broken"]
    argv = ["history", "--reports-dir", str(tmp_path), "--case", "broken", "--limit", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("case broken of loop/golden: newly_failing, pass rate 70%")
    assert len(out) == 2 + 4 and "run12" in out[2] and "fail" in out[2] and "miss" in out[2]
    assert main([*argv, "--format", "json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["case"]["class"] == "newly_failing" and len(one["outcomes"]) == 4


def test_missing_store_and_unknown_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No history store, or an unknown case id, exits 1 saying which."""
    assert main(["history", "--reports-dir", str(tmp_path)]) == 1
    assert "no history in" in capsys.readouterr().err
    _fill(tmp_path, runs=2)
    assert main(["history", "--reports-dir", str(tmp_path), "--case", "nope"]) == 1
    assert "no history for case 'nope'" in capsys.readouterr().err
    assert main(["history", "--reports-dir", str(tmp_path), "--target", "other"]) == 1
    assert "jobs with history: --target loop --dataset golden" in capsys.readouterr().err


def test_one_case_marks_incomplete_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--case` marks the runs that were incomplete (their verdicts count in no class), in
    text and JSON, and the case's class reads the complete runs only."""
    store = HistoryStore(tmp_path)
    start = time.time() - 600
    for i, (outcome, passed) in enumerate(
        [("complete", True), ("complete", True), ("incomplete", False), ("complete", True)]
    ):
        at = start + i * 60
        row = RunRow(f"run{i:02d}", at, outcome, 1, 1, 0, "d", "c", {})
        case = CaseOutcome(row.run_id, at, passed, passed, 1.0 if passed else 0.0, None)
        store.record(target="loop", dataset="golden", run=row, outcomes={"c": case})
    argv = ["history", "--reports-dir", str(tmp_path), "--case", "c"]
    assert 0 == main(argv)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("case c of loop/golden: stable_pass, pass rate 100% over 3 run(s)")
    assert ["complete", "incomplete", "complete", "complete"] == [
        line.split()[2] for line in out[2:]
    ]
    assert "run outcome" in out[1]
    assert 0 == main([*argv, "--format", "json"])
    rows = json.loads(capsys.readouterr().out)["outcomes"]
    assert ["complete", "incomplete", "complete", "complete"] == [r["run_outcome"] for r in rows]

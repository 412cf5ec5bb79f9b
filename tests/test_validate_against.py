"""``evaluator validate --against REPORT``: a golden set's labels audited with a run's texts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.models import CaseRecord, CaseScores
from evaluator.report import write_report
from tests.support.records import record, report

pytestmark = pytest.mark.e2e  # runs the CLI as a subprocess

EXE = str(Path(sys.executable).with_name("evaluator"))
POLICY = "退款审核通过后，款项将原路退回。退回到银行卡通常需要3-5个工作日到账。"


def _record(case_id: str, texts: dict[str, str]) -> CaseRecord:
    return record(
        case_id,
        outcome=CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0),
        question="?",
        relevance={"refund-policy-zh-2": 1},
        facts=(("whatever the run had",),),
        ranked=tuple(texts),
        answer="3-5个工作日",
        texts=texts,
    )


def _golden(path: Path) -> Path:
    rows = [
        {"id": "right", "question": "退款多久到账？", "relevant_ids": ["refund-policy-zh-2"],
         "expected_facts": ["3-5个工作日"]},
        {"id": "wrong", "question": "退款一般几天能到账？", "relevant_ids": ["refund-policy-zh-2"],
         "expected_facts": ["七天"]},
        {"id": "not-run", "question": "?", "relevant_ids": ["x"], "expected_facts": ["y"]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _report(path: Path) -> Path:
    cases = (
        _record("right", {"refund-policy-zh-2": POLICY}),
        _record("wrong", {"refund-policy-zh-2": POLICY}),
    )
    write_report(
        report(cases),
        path,
    )
    return path


def test_suspect_labels_are_listed_at_their_line_and_exit_1(tmp_path: Path) -> None:
    """The file's current labels are checked (not the report's copy), each at file:line."""
    golden, report = _golden(tmp_path / "golden.jsonl"), _report(tmp_path / "run.json")

    result = subprocess.run(
        [EXE, "validate", str(golden), "--against", str(report)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip

    assert (1, "") == (result.returncode, result.stderr), result
    assert [
        "1 file(s) valid",
        f"{golden}:2: wrong: suspect label: '七天' is in none of the relevant evidence",
        f"label audit of {golden} against {report}: 1 suspect of 2 checked, 1 not in the report",
    ] == result.stdout.splitlines()


def test_clean_labels_exit_0(tmp_path: Path) -> None:
    """``evaluator validate --against`` of clean labels exits 0 quietly."""
    golden = tmp_path / "golden.jsonl"
    lines = _golden(golden).read_text("utf-8").splitlines()
    golden.write_text(lines[0] + "\n", "utf-8")

    result = subprocess.run(
        [EXE, "validate", str(golden), "--against", str(_report(tmp_path / "run.json"))],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip

    assert (0, "") == (result.returncode, result.stderr), result
    assert "1 suspect" not in result.stdout and "0 suspect of 1 checked" in result.stdout


def test_an_unreadable_report_is_a_one_line_error(tmp_path: Path) -> None:
    """An unreadable report given to ``--against`` is a one-line error naming it."""
    result = subprocess.run(
        [EXE, "validate", str(_golden(tmp_path / "g.jsonl")), "--against", "missing.json"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip

    assert 1 == result.returncode
    assert 1 == len(result.stderr.strip().splitlines()) and "missing.json" in result.stderr

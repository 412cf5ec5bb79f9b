"""Terminal output is escaped everywhere (issue 38.8): what ``gate``'s judged lines,
``calibrate`` and ``review`` print from a report (a judge's model name, a case id, a reason)
holds no control character a terminal acts on, and cannot print a forged ``verdict:`` line."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from evaluator.judge.judged_pass import judge_report
from evaluator.judge.labels import Label, append_label
from evaluator.judge.panel import JudgePanel
from evaluator.judge.settings import JudgeConfig
from evaluator.report import RunReport, write_report
from tests.judge.reports import golden, record, report
from tests.support.judges import LoopbackJudge

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))
FORGED = "m\nverdict: PASS (exit 0)\x1b[2J"
#: C0 but tab and newline, DEL, C1: what a terminal acts on
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _judged(source: RunReport, path: Path) -> Path:
    with LoopbackJudge() as judge:

        async def go() -> None:
            async with JudgePanel(JudgeConfig(url=judge.url, model="m")) as panel:
                judged = await judge_report(source, panel)
            write_report(msgspec.structs.replace(source, judge=judged.to_dict()), path)

        asyncio.run(go())
    return path


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "evaluator.toml").write_text(f'reports_dir = "{cwd}"\n')
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _verdict_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.lstrip().startswith("verdict:")]


@pytest.mark.parametrize("field", ["model", "prompt_version"])
def test_a_forged_judge_name_is_one_escaped_gate_line(tmp_path: Path, field: str) -> None:
    """A candidate whose judge model (the audit's reproduction) or prompt version (the
    variant) holds a newline, a ``verdict:`` line and a clear-screen: the NOT COMPARED line
    shows them escaped, and the gate prints one verdict line."""
    baseline = _judged(golden(), tmp_path / "b.json")
    data = json.loads(baseline.read_text("utf-8"))
    data["judge"][field] = FORGED
    candidate = tmp_path / "c.json"
    candidate.write_text(json.dumps(data), "utf-8")
    (tmp_path / "gates.toml").write_text(
        "[rules.recall_at_k]\nmax_drop = 0.5\n"
        "[judged.judged_fact_recall]\nmax_drop = 0.1\nadvisory = true\n"
    )
    result = _cli(
        ["gate", "--config", "evaluator.toml", "--gates", "gates.toml",
         "--baseline", "b.json", "--candidate", "c.json"],
        tmp_path,
    )  # fmt: skip
    assert 0 == result.returncode, result.stderr
    assert 1 == len(_verdict_lines(result.stdout)), result.stdout
    assert [] == CONTROL.findall(result.stdout + result.stderr)
    assert "m\\nverdict: PASS (exit 0)\\x1b[2J" in result.stdout


def _labelled_report(tmp_path: Path, case_id: str) -> tuple[Path, Path]:
    """A judged report with a case ``case_id`` the judge passes, and a label failing it."""
    answer = "Refunds arrive within 5 business days."
    source = report(
        record(case_id, answer, (("5 business days",),)),
        *golden().cases[1:],
    )
    path = _judged(source, tmp_path / "judged.json")
    labels = tmp_path / "labels.jsonl"
    judge = json.loads(path.read_text("utf-8"))["judge"]
    digest = next(c["answer_hash"] for c in judge["cases"] if c["case_id"] == case_id)
    append_label(labels, Label(case_id, digest, "fact_support", False, "ann", "2026-01-01T00:00Z"))
    return path, labels


@pytest.mark.parametrize("output", ["text", "markdown", "json"])
def test_calibrate_prints_a_forged_case_id_escaped(tmp_path: Path, output: str) -> None:
    """A case id holding a forged line and a clear-screen, in a disagreement ``calibrate``
    lists (text), and the Markdown and JSON outputs: escaped, one line."""
    report_path, labels = _labelled_report(tmp_path, "c1\nverdict: PASS\x1b[2J\x9b31m")
    result = _cli(
        ["calibrate", "--config", "evaluator.toml", "--labels", str(labels),
         "--min-labels", "1", "--format", output, str(report_path)],
        tmp_path,
    )  # fmt: skip
    assert 0 == result.returncode, result.stderr
    assert [] == CONTROL.findall(result.stdout + result.stderr)
    assert [] == _verdict_lines(result.stdout)
    if output == "text":
        assert "disagree c1\\nverdict: PASS\\x1b[2J\\x9b31m: human fail, judge pass" in (
            result.stdout
        )


def test_review_shows_a_hostile_reason_and_case_escaped(tmp_path: Path) -> None:
    """``review`` of a report whose case id, question and the judge's reason hold a
    newline, an OSC hyperlink and a clear-screen: everything it prints is escaped."""
    report_path, _ = _labelled_report(tmp_path, "c1\x1b]8;;http://evil.example/\x07x")
    data = json.loads(report_path.read_text("utf-8"))
    for case in data["judge"]["cases"]:
        for outcome in case["checks"]:
            if outcome["status"] == "judged":
                outcome["reason"] = "fine\nverdict: PASS\x1b[2J"
    data["cases"][1]["question"] = "q\x1b[2J\nforged"
    report_path.write_text(json.dumps(data), "utf-8")
    result = _cli(
        ["review", str(report_path), "--labels", "fresh.jsonl", "--reviewer", "ann"], tmp_path
    )
    assert 0 == result.returncode, result.stderr
    assert "judge: " in result.stdout
    assert [] == CONTROL.findall(result.stdout + result.stderr)
    assert [] == _verdict_lines(result.stdout)

"""Every judge input through the border (issue 38.4): labels and calibration files through the
bounded reader golden sets use, judge responses through the text border targets' use, a stored
calibration checked against its own counts, and ``calibrate`` refusing to replace the stored
calibration with one no label matched."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evaluator.judge.calibration_store import CALIBRATION_FILE, read_calibration
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.labels import LabelsError, read_labels
from evaluator.judge.panel import JudgePanel
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.report import write_report
from tests.judge import calibrations
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge

EXE = str(Path(sys.executable).with_name("evaluator"))


def _fifo(path: Path) -> Path:
    os.mkfifo(path)  # a blocking open waits for a writer for ever
    return path


def _within(seconds: float, call: Callable[[], object], fifo: Path | None = None) -> object:
    """``call()`` in a thread, its result or exception; AssertionError when it has not
    returned after ``seconds`` (a FIFO it waits on is then opened, to let the thread end)."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # the caller asserts on it
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # releases the blocked open
            thread.join(5)
        raise AssertionError(f"still blocked after {seconds} s")
    return outcome[0]


def test_a_fifo_labels_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO in the labels file's place is a LabelsError naming it, at once (the audit's
    reproduction: the daemon's drift check froze on it past SIGTERM)."""
    fifo = _fifo(tmp_path / "labels.jsonl")
    error = _within(5, lambda: read_labels(fifo), fifo)
    assert isinstance(error, LabelsError)
    assert f"{fifo}: not a regular file (a FIFO, device or socket)" == str(error)


def test_a_fifo_calibration_file_calibrates_nothing_at_once(tmp_path: Path) -> None:
    """A FIFO as the stored calibration is a problem named on read, not a wait."""
    fifo = _fifo(tmp_path / CALIBRATION_FILE)
    stored = _within(5, lambda: read_calibration(fifo), fifo)
    assert {} == stored.calibrated()  # type: ignore[attr-defined]
    assert (f"{fifo}: not a regular file (a FIFO, device or socket)",) == stored.problems  # type: ignore[attr-defined]


def _limited_memory() -> None:
    """In the child: 1 GiB of address space at most (the audit read 2.7 GiB of /dev/zero)."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _judged_report(path: Path) -> Path:
    with LoopbackJudge() as judge:

        async def go() -> JudgedRun:
            async with JudgePanel(JudgeConfig(url=judge.url, model="m")) as panel:
                return await judge_report(golden(), panel)

        judged = asyncio.run(go())
    write_report(msgspec.structs.replace(golden(), judge=judged.to_dict()), path)
    return path


@pytest.mark.e2e
def test_dev_zero_as_labels_is_refused_within_bounded_memory(tmp_path: Path) -> None:
    """``calibrate --labels`` a link to /dev/zero: exit 1 naming the file, never a read of
    gigabytes (the variant: a device rather than a FIFO, through the command line)."""
    report = _judged_report(tmp_path / "judged.json")
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    result = subprocess.run(
        [EXE, "calibrate", "--labels", "zero.jsonl", str(report)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        preexec_fn=_limited_memory,
    )  # fmt: skip
    assert 1 == result.returncode, result.stderr
    assert "zero.jsonl: not a regular file" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.e2e
def test_a_fifo_calibration_does_not_hang_the_gate(tmp_path: Path) -> None:
    """``gate`` with a judged rule and a FIFO as the stored calibration refuses the rule (exit
    1) naming why, at once."""
    report = _judged_report(tmp_path / "judged.json")
    _fifo(tmp_path / CALIBRATION_FILE)
    (tmp_path / "evaluator.toml").write_text(f'reports_dir = "{tmp_path}"\n')
    (tmp_path / "gates.toml").write_text(
        "[rules.recall_at_k]\nmax_drop = 0.5\n[judged.judged_fact_recall]\nmin = 0.1\n"
    )
    result = subprocess.run(
        [EXE, "gate", "--config", "evaluator.toml", "--gates", "gates.toml",
         "--baseline", str(report), "--candidate", str(report)],
        capture_output=True, text=True, timeout=30, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert 1 == result.returncode, result.stderr
    assert "not a regular file" in result.stderr


def _judge_cli(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    report = tmp_path / "r.json"
    write_report(golden(), report)
    with LoopbackJudge(mode) as judge:
        (tmp_path / "evaluator.toml").write_text(
            f'reports_dir = "{tmp_path}"\n[judge]\nurl = "{judge.url}"\nmodel = "m"\n'
        )
        return subprocess.run(
            [EXE, "judge", "--config", "evaluator.toml", str(report)],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        )  # fmt: skip


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["surrogate", "surrogate_outer"])
def test_a_lone_surrogate_in_a_verdict_is_replaced_not_an_internal_error(
    tmp_path: Path, mode: str
) -> None:
    """A reason and claims holding a lone surrogate, escaped inside the content (the audit's
    reproduction) or in the body (the variant): the report is written with U+FFFD."""
    result = _judge_cli(tmp_path, mode)
    assert 0 == result.returncode, result.stderr
    judge = json.loads((tmp_path / "r.json").read_text("utf-8"))["judge"]
    reasons = {o.get("reason") for c in judge["cases"] for o in c["checks"]}
    claims = {u for c in judge["cases"] for o in c["checks"] for u in o.get("unsupported", [])}
    assert {"cut inside an emoji \ufffd"} == reasons
    assert {"claim \ufffd"} == claims


def _calibrate(tmp_path: Path, labels: str, report: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "evaluator.toml").write_text(f'reports_dir = "{tmp_path}"\n')
    return subprocess.run(
        [EXE, "calibrate", "--config", "evaluator.toml", "--labels", labels, str(report)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip


def _agreeing_labels(report: Path, path: Path) -> Path:
    """A human label agreeing with every fact-support verdict of ``report``."""
    judge = json.loads(report.read_text("utf-8"))["judge"]
    with path.open("w") as f:
        for case in judge["cases"]:
            for outcome in case["checks"]:
                if outcome["check"] == "fact_support" and outcome["status"] == "judged":
                    f.write(json.dumps({
                        "answer_hash": case["answer_hash"], "at": "2026-01-01T00:00:00Z",
                        "case_id": case["case_id"], "check": "fact_support", "reviewer": "ann",
                        "verdict": outcome["values"]["answer_correct"]}) + "\n")  # fmt: skip
    return path


def _gate_on_forged(tmp_path: Path, **over: object) -> subprocess.CompletedProcess[str]:
    """``evaluator calibrate`` over 4 labels (under the minimum of 50: uncalibrated), the
    stored entry then edited with ``over``, and a gate with a hard judged rule on it."""
    report = _judged_report(tmp_path / "judged.json")
    assert 0 == _calibrate(tmp_path, str(_agreeing_labels(report, tmp_path / "l.jsonl")),
                           report).returncode  # fmt: skip
    stored = tmp_path / CALIBRATION_FILE
    data = json.loads(stored.read_text("utf-8"))
    [entry] = data["checks"]
    assert (4, False) == (entry["labels"], entry["calibrated"])
    entry.update(over)
    stored.write_text(json.dumps(data), "utf-8")
    (tmp_path / "gates.toml").write_text(
        "[rules.recall_at_k]\nmax_drop = 0.5\n[judged.judged_fact_recall]\nmin = 0.1\n"
    )
    return subprocess.run(
        [EXE, "gate", "--config", "evaluator.toml", "--gates", "gates.toml",
         "--baseline", str(report), "--candidate", str(report)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip


@pytest.mark.e2e
def test_calibrated_true_written_by_hand_does_not_calibrate(tmp_path: Path) -> None:
    """An uncalibrated entry flipped to ``calibrated: true`` (the audit's reproduction): the
    hard judged rule is refused (exit 1), naming the entry and why."""
    result = _gate_on_forged(tmp_path, calibrated=True)
    assert 1 == result.returncode, result
    assert f"(m, {PROMPT_VERSION}, fact_support).calibrated: True does not follow" in (
        result.stderr
    )
    assert "4 labels" in result.stderr


@pytest.mark.e2e
def test_labels_inflated_past_the_minimum_do_not_calibrate(tmp_path: Path) -> None:
    """The variant: ``labels`` raised past ``min_labels`` with ``calibrated: true``, the table
    left as counted."""
    result = _gate_on_forged(tmp_path, labels=5000, calibrated=True)
    assert 1 == result.returncode, result
    assert "fact_support).labels: 5000 does not follow from its counts (4)" in result.stderr


def _forged(tmp_path: Path, **over: Any) -> str:
    """The problem read_calibration names for one entry with ``over`` replacing its keys."""
    path = calibrations.write(tmp_path, calibrations.entry("m", agreeing=False, **over))
    stored = read_calibration(path)
    assert {} == stored.calibrated(), "a forged entry calibrates nothing"
    [problem] = stored.problems
    return problem


def test_a_kappa_interval_raised_over_the_floor_is_refused(tmp_path: Path) -> None:
    """A further variant: the interval moved over the floor, ``calibrated`` made consistent
    with it."""
    problem = _forged(tmp_path, kappa_interval=[0.9, 1.0], calibrated=True)
    assert "kappa_interval: [0.900, 1.000] does not follow from its counts" in problem


def test_disagreements_dropped_from_the_list_are_refused(tmp_path: Path) -> None:
    """The disagreements listed must be the table's off-diagonal cells."""
    problem = _forged(tmp_path, disagreements=[])
    assert "disagreements: 0 listed where the table counts 50" in problem


def test_a_calibration_entry_derived_from_its_counts_is_kept(tmp_path: Path) -> None:
    """What ``evaluator calibrate`` writes reads back as calibrated, its figures the same."""
    path = calibrations.write(tmp_path, calibrations.entry("m"))
    stored = read_calibration(path)
    assert () == stored.problems
    assert {("m", PROMPT_VERSION): {"fact_support": True}} == stored.calibrated()


@pytest.mark.e2e
@pytest.mark.parametrize("labels", ["other-answers.jsonl", "missing.jsonl"])
def test_calibrate_with_labels_matching_nothing_keeps_the_stored_calibration(
    tmp_path: Path, labels: str
) -> None:
    """Labels of other answers (the audit's reproduction) or a labels path that does not
    exist (the variant): exit 1 naming why, the stored calibration byte for byte as it was."""
    report = _judged_report(tmp_path / "judged.json")
    (tmp_path / "other-answers.jsonl").write_text(
        json.dumps({"answer_hash": "0" * 16, "at": "2026-01-01T00:00:00Z", "case_id": "ok1",
                    "check": "fact_support", "reviewer": "ann", "verdict": True}) + "\n"
    )  # fmt: skip
    stored = tmp_path / CALIBRATION_FILE
    stored.write_text('{"checks": [], "written": "by an earlier calibrate"}')
    before = stored.read_bytes()
    result = _calibrate(tmp_path, labels, report)
    assert 1 == result.returncode, result
    assert f"no label of {labels}" in result.stderr
    assert "is left as it was" in result.stderr
    assert before == stored.read_bytes()

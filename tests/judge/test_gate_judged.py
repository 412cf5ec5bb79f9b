"""``evaluator gate`` with judged rules: refused (exit 1) on an uncalibrated judge unless
advisory, applied once calibrated, never compared across judges while the deterministic
rules still compare."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from evaluator.errors import ConfigError
from evaluator.judge.gating import parse_judged_rules
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.settings import JudgeConfig
from evaluator.report import RunReport, write_report
from tests.judge import calibrations
from tests.judge.reports import golden, record, report
from tests.support.judges import LoopbackJudge

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))


def _judged(source: RunReport, path: Path, model: str = "m") -> None:
    with LoopbackJudge() as judge:

        async def go() -> None:
            async with JudgePanel(JudgeConfig(url=judge.url, model=model)) as panel:
                judged = await judge_report(source, panel)
            write_report(msgspec.structs.replace(source, judge=judged.to_dict()), path)

        asyncio.run(go())


def _worse() -> RunReport:
    # the same cases, one more answer missing its fact: judged fact recall 0.75 -> 0.5
    base = golden()
    cases = list(base.cases)
    cases[0] = record("ok1", "Refunds are handled quickly.", (("5 business days",),))
    return report(*cases)


def _gates(tmp: Path, judged: str) -> Path:
    path = tmp / "gates.toml"
    path.write_text("[rules.recall_at_k]\nmax_drop = 0.5\n" + judged)
    return path


def _gate(
    tmp: Path, gates: Path, baseline: Path, candidate: Path
) -> subprocess.CompletedProcess[str]:
    config = tmp / "evaluator.toml"
    config.write_text(f'reports_dir = "{tmp}"\n')
    return subprocess.run(
        [EXE, "gate", "--config", str(config), "--gates", str(gates),
         "--baseline", str(baseline), "--candidate", str(candidate)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp,
    )  # fmt: skip


def _calibrate(tmp: Path, model: str, calibrated: bool) -> None:
    calibrations.write(tmp, calibrations.entry(model, agreeing=calibrated))


def test_uncalibrated_hard_rule_is_refused_advisory_is_not(tmp_path: Path) -> None:
    """A hard judged rule without a calibrated judge makes the gate exit 1 naming the calibration,
    while the same rule marked advisory only reports."""
    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    _judged(golden(), base)
    _judged(_worse(), cand)
    hard = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.1\n")
    result = _gate(tmp_path, hard, base, cand)
    assert result.returncode == 1, result
    assert "not calibrated for fact_support" in result.stderr
    assert "evaluator calibrate" in result.stderr

    advisory = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.1\nadvisory = true\n")
    result = _gate(tmp_path, advisory, base, cand)
    assert result.returncode == 0, result
    assert "FAIL (advisory) judged_fact_recall drop <= 0.1: 0.750 -> 0.500" in result.stdout


def test_a_calibrated_judge_gates(tmp_path: Path) -> None:
    """With a calibrated judge a judged drop past its allowance fails the gate (exit 2) and a looser
    rule passes."""
    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    _judged(golden(), base)
    _judged(_worse(), cand)
    _calibrate(tmp_path, "m", calibrated=True)
    gates = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.1\n")
    result = _gate(tmp_path, gates, base, cand)
    assert result.returncode == 2, result
    assert "FAIL judged_fact_recall drop <= 0.1" in result.stdout
    # the same reports pass a looser judged rule
    loose = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.3\n")
    assert _gate(tmp_path, loose, base, cand).returncode == 0


def test_another_judge_is_not_compared(tmp_path: Path) -> None:
    """Judged metrics of reports by different judges are not compared (a hard rule exits 1), while
    the deterministic rules still are."""
    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    _judged(golden(), base, model="old-judge")
    _judged(golden(), cand, model="new-judge")
    _calibrate(tmp_path, "new-judge", calibrated=True)
    gates = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.1\nadvisory = true\n")
    result = _gate(tmp_path, gates, base, cand)
    assert result.returncode == 0, result
    assert "NOT COMPARED (advisory)" in result.stdout
    assert "recall" in result.stdout  # the deterministic rules still compared
    hard = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.1\n")
    result = _gate(tmp_path, hard, base, cand)
    assert (
        result.returncode == 1 and "another judge (model old-judge -> new-judge)" in result.stderr
    )


@pytest.mark.parametrize(
    "table",
    [
        {"judged": {"judged_vibes": {"min": 0.5}}},
        {"judged": {"judged_fact_recall": {"min": 50}}},
        {"judged": {"judged_fact_recall": {"mni": 0.5}}},
        {"judged": {"judged_fact_recall": {"min": 0.5, "advisory": "yes"}}},
        {"judged": {"judged_fact_recall": {}}},
    ],
)
def test_bad_judged_rules_name_the_key(table: dict[str, object]) -> None:
    """A bad ``[judged.METRIC]`` table is a configuration error naming the file and the key."""
    with pytest.raises(ConfigError, match=r"gates\.toml: judged\.judged_"):
        parse_judged_rules(table, "gates.toml")


def _gate_as(
    tmp: Path, gates: Path, baseline: Path, candidate: Path, fmt: str
) -> subprocess.CompletedProcess[str]:
    config = tmp / "evaluator.toml"
    config.write_text(f'reports_dir = "{tmp}"\n')
    return subprocess.run(
        [EXE, "gate", "--config", str(config), "--gates", str(gates), "--format", fmt,
         "--baseline", str(baseline), "--candidate", str(candidate)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp,
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
@pytest.mark.parametrize(
    ("calibrated", "verdict", "code"), [(True, "fail", 2), (False, "refused", 1)]
)
def test_the_verdict_printed_is_the_exit_code(
    tmp_path: Path, fmt: str, calibrated: bool, verdict: str, code: int
) -> None:
    """Every deterministic rule passes, the hard judged rule fails (or is refused, the judge
    being uncalibrated): every format says FAIL (or REFUSED) with the exit code the process
    returns, and none says the gate passed."""
    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    _judged(golden(), base)
    _judged(_worse(), cand)
    _calibrate(tmp_path, "m", calibrated=calibrated)
    gates = _gates(tmp_path, "[judged.judged_fact_recall]\nmax_drop = 0.1\n")
    result = _gate_as(tmp_path, gates, base, cand, fmt)
    assert code == result.returncode, result
    out = result.stdout
    if fmt == "json":
        data = json.loads(out)
        assert (False, verdict, code) == (data["passed"], data["verdict"], data["exit_code"])
        assert data["judged"]["failed" if verdict == "fail" else "refused"]
    elif fmt == "text":
        assert f"verdict: {verdict.upper()} (exit {code})" == out.rstrip().splitlines()[-1]
        assert out.startswith(f"gate {verdict.upper() if verdict == 'refused' else 'FAILED'}")
    else:
        headline = out.splitlines()[0]
        assert headline.startswith(f"## {'❌' if verdict == 'fail' else '⛔'} Release gate ")
        assert f"**{verdict.upper()}** (exit {code})" in out
    assert "gate passed" not in out and "PASS (exit" not in out

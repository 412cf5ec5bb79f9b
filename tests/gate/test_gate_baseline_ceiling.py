"""``gate`` refuses a baseline that mostly failed: broken would otherwise gate against broken.

A baseline recorded with a broken response mapping (five of six cases failed) is no standard to
hold a candidate to. Above the ceiling (``[baseline] max_error_rate`` in the gates file, or
``--baseline-max-error-rate``; 0.2 by default) the gate exits 1 naming the baseline's rate.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from evaluator.cli import main
from tests.gate.factories import EXERCISE_BASELINE, summary_report, write


def _gate(*args: str, cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["gate", *args])
    return code, out.getvalue(), err.getvalue()


def _reports(tmp_path: Path, baseline_error_rate: float) -> tuple[str, str]:
    baseline = write(
        tmp_path / "baseline.json",
        summary_report(EXERCISE_BASELINE, error_rate=baseline_error_rate),
    )
    candidate = write(tmp_path / "candidate.json", summary_report(EXERCISE_BASELINE))
    return str(baseline), str(candidate)


def _gates(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "gates.toml"
    path.write_text(f"{extra}\n[rules.recall_at_k]\nmax_drop = 0.0\n", encoding="utf-8")
    return str(path)


class TestBaselineErrorCeiling:
    def test_a_baseline_above_the_default_ceiling_is_refused(self, tmp_path: Path) -> None:
        """A baseline whose error rate is above the default ceiling is refused in one line
        naming it, the rate and the flag."""
        baseline, candidate = _reports(tmp_path, 0.83)
        code, out, err = _gate("--baseline", baseline, "--candidate", candidate, cwd=tmp_path)
        assert 1 == code, out + err
        (line,) = err.splitlines()
        assert line.startswith("evaluator: error: ")
        assert baseline in line
        assert "error rate 0.83" in line and "0.2" in line
        assert "--baseline-max-error-rate" in line

    def test_at_the_ceiling_the_gate_judges(self, tmp_path: Path) -> None:
        """A baseline exactly at the ceiling is used."""
        baseline, candidate = _reports(tmp_path, 0.2)
        code, _, err = _gate("--baseline", baseline, "--candidate", candidate, cwd=tmp_path)
        assert 0 == code, err

    def test_the_flag_raises_the_ceiling(self, tmp_path: Path) -> None:
        """``--baseline-max-error-rate`` sets the ceiling."""
        baseline, candidate = _reports(tmp_path, 0.5)
        args = ("--baseline", baseline, "--candidate", candidate)
        code, _, err = _gate(*args, "--baseline-max-error-rate", "0.6", cwd=tmp_path)
        assert 0 == code, err
        code, _, err = _gate(*args, "--baseline-max-error-rate", "0.4", cwd=tmp_path)
        assert 1 == code and "error rate 0.5" in err

    def test_the_gates_file_sets_the_ceiling_and_the_flag_wins(self, tmp_path: Path) -> None:
        """The gates file sets the ceiling and the flag overrides it."""
        baseline, candidate = _reports(tmp_path, 0.5)
        args = ("--baseline", baseline, "--candidate", candidate)
        lenient = _gates(tmp_path, "[baseline]\nmax_error_rate = 1.0\n")
        code, _, err = _gate(*args, "--gates", lenient, cwd=tmp_path)
        assert 0 == code, err
        code, _, err = _gate(
            *args, "--gates", lenient, "--baseline-max-error-rate", "0.1", cwd=tmp_path
        )
        assert 1 == code and "error rate 0.5" in err

    def test_the_default_ceiling_holds_with_a_gates_file_without_the_key(
        self, tmp_path: Path
    ) -> None:
        """A gates file without the key keeps the default ceiling."""
        baseline, candidate = _reports(tmp_path, 0.5)
        code, _, err = _gate(
            "--baseline", baseline, "--candidate", candidate, "--gates", _gates(tmp_path),
            cwd=tmp_path,
        )  # fmt: skip
        assert 1 == code and "max_error_rate" in err

    @pytest.mark.parametrize(
        ("table", "needle"),
        [
            ("[baseline]\nmax_error_rate = 1.5\n", "baseline.max_error_rate: must be within 0..1"),
            ('[baseline]\nmax_error_rate = "x"\n', "baseline.max_error_rate: must be a number"),
            ("[baseline]\nmax_eror_rate = 0.1\n", "baseline.max_eror_rate: unknown key"),
            ("baseline = 3\n", "baseline: expected a table"),
        ],
    )
    def test_a_bad_ceiling_names_the_key(self, tmp_path: Path, table: str, needle: str) -> None:
        """A bad ceiling in the gates file is refused naming the key and the file."""
        baseline, candidate = _reports(tmp_path, 0.0)
        gates = _gates(tmp_path, table)
        code, _, err = _gate(
            "--baseline", baseline, "--candidate", candidate, "--gates", gates, cwd=tmp_path
        )
        assert 1 == code
        assert needle in err and gates in err

    @pytest.mark.parametrize("value", ["-0.1", "1.1", "nan", "x"])
    def test_a_bad_flag_value(self, tmp_path: Path, value: str) -> None:
        """A bad ``--baseline-max-error-rate`` value is refused naming the flag."""
        baseline, candidate = _reports(tmp_path, 0.0)
        code, _, err = _gate(
            "--baseline", baseline, "--candidate", candidate,
            "--baseline-max-error-rate", value, cwd=tmp_path,
        )  # fmt: skip
        assert 1 == code
        assert "--baseline-max-error-rate" in err

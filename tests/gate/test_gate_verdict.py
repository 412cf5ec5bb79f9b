"""evaluate_gate: the pure function the CLI and the daemon share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.gate import DEFAULT_RULES, GateResult, evaluate_gate
from evaluator.report import report_from_dict
from tests.gate.factories import (
    EXERCISE_BASELINE,
    EXERCISE_CANDIDATE,
    record,
    report,
    summary_report,
)


class TestEvaluateGate:
    """Per-rule results with name, passed and applicable; the verdict."""

    def test_exercise(self) -> None:
        """The gate exercise from report JSON: three named failures, the rest pass."""
        result = evaluate_gate(
            report_from_dict(summary_report(EXERCISE_BASELINE)),
            report_from_dict(summary_report(EXERCISE_CANDIDATE)),
            DEFAULT_RULES,
        )
        assert not result.passed
        assert [
            ("recall_at_k.max_drop", True, True),
            ("mrr.max_drop", False, True),
            ("citation_precision.max_drop", False, True),
            ("answer_accuracy.max_drop", True, True),
            ("p95_seconds.max_relative_growth", False, True),
            ("error_rate.max_growth", True, True),
        ] == [(r.name, r.passed, r.applicable) for r in result.rules]

    def test_identical_reports_pass(self) -> None:
        """A report judged against itself passes every rule."""
        r = report([record("a"), record("b", rr=0.5, correct=False)])
        result = evaluate_gate(r, r)
        assert result.passed
        assert () == result.failures
        assert 0 == len(result.case_diff.regressed)

    def test_without_intervals(self) -> None:
        """The daemon's mode: no intervals, same verdict."""
        b = report([record("a"), record("b")])
        c = report([record("a", rr=0.5), record("b")])
        fast = evaluate_gate(b, c, with_intervals=False)
        full = evaluate_gate(b, c)
        assert {} == dict(fast.intervals)
        assert "mrr" in full.intervals
        assert [r.passed for r in full.rules] == [r.passed for r in fast.rules]

    def test_significance_needs_intervals(self) -> None:
        """Asking for significance without intervals is a programming error."""
        r = report([record("a")])
        with pytest.raises(ValueError, match="significance=True needs with_intervals=True"):
            evaluate_gate(r, r, significance=True, with_intervals=False)

    def test_result_is_frozen(self) -> None:
        """A result is a value: it cannot be changed after the verdict."""
        r = report([record("a")])
        result: GateResult = evaluate_gate(r, r)
        with pytest.raises(AttributeError):
            result.significance = True  # type: ignore[misc]

    @pytest.mark.e2e
    def test_import_is_light(self) -> None:
        """Importing the gate and judging without intervals never loads numpy."""
        code = (
            "import sys\n"
            "from evaluator.gate import evaluate_gate\n"
            "from tests.gate.factories import record, report\n"
            "r = report([record('a')])\n"
            "assert evaluate_gate(r, r, with_intervals=False).passed\n"
            "print('numpy' in sys.modules)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert "False" == out.stdout.strip()

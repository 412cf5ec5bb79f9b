"""The gate judges two reports read as columns exactly as it judges them read whole: the
same result, rendered byte for byte the same in every format."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from evaluator.gate.render import GateSources, render, render_junit
from evaluator.gate.repeats import Quarantine
from evaluator.gate.rules import DEFAULT_RULES
from evaluator.gate.verdict import evaluate_gate
from evaluator.models import Case, CaseRecord
from evaluator.report import read_report
from evaluator.report.read import read_columns
from tests.gate.factories import record, report, write


def _baseline() -> list[CaseRecord]:
    cases = [record(f"c{i}", rr=1.0 / (1 + i % 3), latency=0.1 + i / 100) for i in range(30)]
    cases[4] = record("c4", error="timeout")
    cases[7] = record("c7", unanswerable=True, correct=None)
    cases[9] = dataclasses.replace(
        cases[9], case=Case("c9", "graded?", {"d2": 2, "d1": 1}, tags=("zh",))
    )
    return cases


def _candidate() -> list[CaseRecord]:
    cases = [
        record(f"c{i}", rr=1.0 / (1 + (i + 1) % 3), correct=i % 5 != 0, latency=0.2 + i / 50)
        for i in range(30)
    ]
    cases[4] = record("c4", error="bad_response")
    cases[6] = record("c6", error="timeout")
    cases[7] = record("c7", unanswerable=True, correct=None)
    cases[12] = record("c12", ranked=("d9", "d1"), precision=0.5)
    return cases


PAIRS: dict[str, tuple[list[CaseRecord], list[CaseRecord], dict[str, Any]]] = {
    "same golden set": (_baseline(), _candidate(), {}),
    "candidate lacks cases": (_baseline(), [*_candidate()[3:], record("extra")], {}),
    "reordered": (_baseline(), list(reversed(_candidate())), {}),
    "changed golden set": (
        _baseline(),
        [*_candidate()[5:], record("new")],
        {"dataset_hash": "other", "allow_dataset_change": True},
    ),
    "quarantine": (_baseline(), _candidate(), {"quarantine": Quarantine(("c1", "c6"))}),
    "identical": (_baseline(), _baseline(), {}),
}


@pytest.mark.parametrize("significance", [False, True])
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_columns_give_the_verdict_and_output_of_whole_reports(
    tmp_path: Path, name: str, significance: bool
) -> None:
    base_cases, cand_cases, options = PAIRS[name]
    options = dict(options)
    dataset_hash = options.pop("dataset_hash", "golden-hash-1")
    b = write(tmp_path / "b.json", report(base_cases))
    c = write(tmp_path / "c.json", report(cand_cases, dataset_hash=dataset_hash, run_id="2"))
    sources = GateSources(str(b), str(c), "built-in defaults")

    def judged(read: object) -> list[str]:
        assert callable(read)
        result = evaluate_gate(
            read(b),
            read(c),
            DEFAULT_RULES,
            significance=significance,
            with_intervals=significance,
            **options,
        )
        rendered = [render(result, sources, fmt, worst=3) for fmt in ("text", "json", "markdown")]
        return [*rendered, render_junit(result, sources), str(result.passed)]

    assert judged(read_columns) == judged(read_report)

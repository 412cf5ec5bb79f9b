"""A report read with ``share=`` (the gate's candidate, sharing its baseline's golden set)
holds the baseline's Case objects where a case is the same, and reads back exactly as
without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.errors import ReportError
from evaluator.report import read_report
from tests.gate.factories import record, report, write


def test_shared_cases_are_the_baselines_and_the_report_is_unchanged(tmp_path: Path) -> None:
    """A report read sharing a baseline's unchanged cases is the same report, field for
    field."""
    baseline = read_report(write(tmp_path / "b.json", report([record("a"), record("b")])))
    changed = report(
        [record("a", rr=0.5), record("b", question="another question?"), record("c")],
        run_id="run-2",
    )
    path = write(tmp_path / "c.json", changed)

    shared = read_report(path, share=baseline)

    assert shared == read_report(path)  # the same report, field for field
    by_id = {r.id: r for r in baseline.cases}
    a, b, c = shared.cases
    assert a.case is by_id["a"].case  # same case, other outcome: shared
    assert b.case is not by_id["b"].case  # the question differs: its own Case
    assert b.case.question == "another question?"
    assert c.case.id == "c"


def test_a_shared_read_still_validates(tmp_path: Path) -> None:
    """A read sharing a baseline still validates every case."""
    baseline = read_report(write(tmp_path / "b.json", report([record("a")])))
    data = (tmp_path / "b.json").read_text(encoding="utf-8").replace('"mrr": 1.0', '"mrr": 2.0')
    forged = tmp_path / "forged.json"
    forged.write_text(data, encoding="utf-8")

    with pytest.raises(ReportError, match="mrr"):
        read_report(forged, share=baseline)

"""docs/reliability.md's fuzz figures are the ones the tier measured: every row its figures
file (tests/faults/figures.json, written by a run with ``FUZZ_FIGURES``) gives is on the
page, so a new measurement cannot leave the page behind."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults.figures import table_rows

ROOT = Path(__file__).resolve().parents[2]


def test_reliability_page_shows_the_measured_figures() -> None:
    """docs/reliability.md shows every row of the measured fuzz figures."""
    figures = json.loads((ROOT / "tests/faults/figures.json").read_text("utf-8"))
    page = (ROOT / "docs/reliability.md").read_text("utf-8")
    rows = table_rows(figures)
    assert rows
    missing = [row for row in rows if row not in page]
    assert not missing, "docs/reliability.md lacks these measured rows:\n" + "\n".join(missing)

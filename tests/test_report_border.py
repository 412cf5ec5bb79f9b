"""A report read back passes the border (issue 24.1): its strings have their lone
surrogates replaced and counted instead of the whole file refused, and its numbers are
finite and within the border's range instead of overflowing the gate's sums."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from evaluator import border
from evaluator.errors import ReportError
from evaluator.report import report_to_dict
from evaluator.report.read import parse_report
from tests.gate.factories import record, report


def _report() -> dict[str, Any]:
    return report_to_dict(report([record(f"q{i}", latency=0.1) for i in range(3)], run_id="r"))


def test_a_lone_surrogate_is_replaced_and_counted() -> None:
    """What a JavaScript tool writes when it cuts a string inside an emoji: legal JSON that
    msgspec refuses; the report reads, the surrogate a U+FFFD, counted."""
    data = _report()
    data["run_id"] = "run\ud83d"
    data["cases"][0]["id"] = "q0\udc00x"
    raw = json.dumps(data).encode()  # escaped: "\ud83d"
    before = border.surrogates_replaced()
    read = parse_report(raw, "candidate.json")
    assert "run\ufffd" == read.run_id
    assert "q0\ufffdx" == read.cases[0].id
    assert 2 == border.surrogates_replaced() - before


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (("cases", 0, "cost"), "cases[0].cost"),
        (("cases", 1, "latency_seconds"), "cases[1].latency_seconds"),
        (("cases", 2, "tokens_per_second"), "cases[2].tokens_per_second"),
        (("cases", 0, "stage_seconds", "model"), "cases[0].stage_seconds[...]"),
        (("duration_seconds",), "duration_seconds"),
    ],
)
def test_numbers_beyond_the_border_range_are_a_field_error(
    path: tuple[str | int, ...], field: str
) -> None:
    """1e308 (a cost of two cases overflowed the gate's fsum: an internal error) is refused
    naming the field, as NaN is."""
    data = _report()
    node: Any = data
    for step in path[:-1]:
        node = node.setdefault(step, {}) if isinstance(step, str) else node[step]
    node[path[-1]] = 1e308
    with pytest.raises(ReportError, match=re.escape(f"field '{field}'")):
        parse_report(json.dumps(data).encode(), "candidate.json")


def test_invalid_json_is_still_refused() -> None:
    raw = json.dumps(_report()).encode()[:-20]
    with pytest.raises(ReportError, match="not valid JSON"):
        parse_report(raw, "candidate.json")
    with pytest.raises(ReportError, match="not a finite number"):
        parse_report(json.dumps({**_report(), "duration_seconds": float("nan")}).encode())

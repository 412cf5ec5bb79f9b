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
    """A report that is not valid JSON, or holds a non-finite number, is refused."""
    raw = json.dumps(_report()).encode()[:-20]
    with pytest.raises(ReportError, match="not valid JSON"):
        parse_report(raw, "candidate.json")
    with pytest.raises(ReportError, match="not a finite number"):
        parse_report(json.dumps({**_report(), "duration_seconds": float("nan")}).encode())


def test_out_of_range_names_are_read_back_and_checked() -> None:
    """A case's ``out_of_range`` reads back as written, is summed again from the cases, and
    a name the evaluator never writes is refused naming the field."""
    data = _report()
    data["cases"][1]["out_of_range"] = ["timings", "input_tokens"]
    read = parse_report(json.dumps(data).encode(), "candidate.json")
    assert ("timings", "input_tokens") == read.cases[1].out_of_range
    assert {"timings": 1, "input_tokens": 1} == dict(read.summary.out_of_range)
    data["cases"][1]["out_of_range"] = ["answer"]
    with pytest.raises(ReportError, match=re.escape("field 'cases[1].out_of_range[0]'")):
        parse_report(json.dumps(data).encode(), "candidate.json")


def test_a_summary_only_report_cannot_drop_more_cases_than_it_scored() -> None:
    """In a report without cases, an ``out_of_range`` count above scored_count is refused."""
    data = _report()
    data["cases"] = []
    data["summary"]["out_of_range"] = {"scores": data["summary"]["scored_count"] + 1}
    with pytest.raises(ReportError, match=re.escape("summary.out_of_range.scores")):
        parse_report(json.dumps(data).encode(), "candidate.json")

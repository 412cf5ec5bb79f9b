"""Outputs for people and pipelines: every format parses and carries every rule."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from evaluator.border import json_line
from evaluator.gate import DEFAULT_RULES, GateResult, Rule, evaluate_gate
from evaluator.gate.render import (
    GateSources,
    render,
    render_json,
    render_junit,
    render_markdown,
    render_text,
    result_to_dict,
)
from tests.gate.factories import record, report

#: the defaults plus a rule on a metric both sides lack (no unanswerable case): n/a
RULES = (*DEFAULT_RULES, Rule("correct_refusal_rate", "min", 0.9))
SOURCES = GateSources("reports/base.json", "reports/cand.json", "config/gates.toml")


def _result(significance: bool = False) -> GateResult:
    """MRR and accuracy fail, one case is missing, and the question has a Markdown pipe."""
    b = report(
        [
            record("a", question="refund | deadline?"),
            record("b"),
            record("c"),
            record("gone"),
        ]
    )
    c = report(
        [record("a", rr=0.5, correct=False), record("b"), record("c", error="timeout")],
        run_id="run-2",
    )
    return evaluate_gate(b, c, RULES, significance=significance)


@pytest.fixture
def result() -> GateResult:
    """A gate result to render."""
    return _result()


class TestText:
    """The default output: the verdict first, every failure on its own line."""

    def test_every_rule_and_case(self, result: GateResult) -> None:
        """Failures, passes, the missing case, the regressed cases and the verdict."""
        text = render_text(result, SOURCES)
        lines = text.splitlines()
        assert lines[0].startswith("gate FAILED: ")
        for r in result.rules:
            assert r.message in text
        fails = [line for line in lines if line.startswith("FAIL ")]
        assert len(result.failures) + 1 == len(fails)  # + the missing case
        assert "FAIL cases: candidate lacks 1 baseline case(s): gone" in lines
        assert "mode: point" in text
        assert "n/a  correct_refusal_rate: not applicable (null in the baseline and the" in text
        assert "  a: answer correct → incorrect; RR 1.00 → 0.50" in lines
        assert "      q: refund | deadline?" in lines
        assert lines[-1] == "verdict: FAIL (exit 2)"

    def test_mode_named(self) -> None:
        """The output says which mode judged the drops."""
        assert "mode: significance" in render_text(_result(significance=True), SOURCES)


class TestJson:
    """--format json: one parseable document with every rule."""

    def test_parses(self, result: GateResult) -> None:
        """Every rule with its values and status; the verdict; the cases."""
        data = json.loads(render_json(result, SOURCES))
        assert [r.name for r in result.rules] == [r["name"] for r in data["rules"]]
        assert (False, "fail", 2, "point") == (
            data["passed"],
            data["verdict"],
            data["exit_code"],
            data["mode"],
        )
        mrr = next(r for r in data["rules"] if r["name"] == "mrr.max_drop")
        assert ("fail", 1.0, 0.75, "may drop at most 0.01") == (
            mrr["status"],
            mrr["baseline"],
            mrr["candidate"],
            mrr["rule"],
        )
        assert ["gone"] == data["missing_case_ids"]
        assert ["c", "a"] == [c["id"] for c in data["cases"]["regressed"]]
        assert "reports/base.json" == data["baseline"]["path"]
        assert {"mrr", "answer_accuracy"} <= set(data["intervals"])

    def test_one_line_escaped_as_the_json_module_and_the_border_do(self) -> None:
        """Text a terminal breaks lines at (U+2028, NEL) in a changed case is escaped: the
        output is json.dumps of the result's dict through border.json_line, on one line."""
        b = report([record("a", question="refund\u2028deadline\x85?"), record("b")])
        c = report([record("a", rr=0.5), record("b")], run_id="run-2")
        result = evaluate_gate(b, c, RULES)
        expected = json_line(
            json.dumps(result_to_dict(result, SOURCES), ensure_ascii=False, allow_nan=False)
        )
        text = render_json(result, SOURCES)
        assert expected == text
        assert [text] == text.splitlines()
        assert "refund\u2028deadline\x85?" == json.loads(text)["cases"]["regressed"][0]["question"]


class TestMarkdown:
    """--format markdown: a table row per rule, safe against pipes in questions."""

    def test_rows(self, result: GateResult) -> None:
        """Each rule is a row; the heading says failed; a pipe in a question is escaped."""
        md = render_markdown(result, SOURCES)
        assert md.startswith(
            "## ❌ Release gate FAILED: 3 of 7 rules failed (1 not applicable); "
            "candidate lacks 1 baseline case(s)\n"
        )
        rows = [line for line in md.splitlines() if line.startswith("| ") and "`" in line]
        for r in result.rules:
            assert any(f"| `{r.metric}` | {r.rule.text} |" in row for row in rows), r.name
        assert "refund \\| deadline?" in md
        assert "<details><summary>2 regressed (worst first)</summary>" in md


class TestJunit:
    """--junit: one test case per rule, plus one for missing cases."""

    def test_parses(self, result: GateResult) -> None:
        """Failures carry the message; a not-applicable rule is skipped."""
        root = ET.fromstring(render_junit(result, SOURCES))
        cases = root.findall("./testsuite/testcase")
        assert [*(r.name for r in result.rules), "cases.complete"] == [c.get("name") for c in cases]
        failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
        assert {r.name for r in result.failures} | {"cases.complete"} == set(failed)
        mrr = failed["mrr.max_drop"]
        assert mrr is not None and "rule: may drop at most 0.01" in (mrr.get("message") or "")
        assert str(len(failed)) == root.get("failures")
        assert str(len(cases)) == root.get("tests")

    def test_not_applicable_is_skipped(self) -> None:
        """A rule on a null metric is a skipped test case, not a failure."""
        b = report([record("a", correct=None), record("b", correct=None)])
        result = evaluate_gate(b, b, DEFAULT_RULES)
        root = ET.fromstring(render_junit(result, SOURCES))
        skipped = [c.get("name") for c in root.iter("testcase") if c.find("skipped") is not None]
        assert ["answer_accuracy.max_drop"] == skipped
        assert "0" == root.get("failures")


def test_unknown_format(result: GateResult) -> None:
    """A format outside FORMATS is a programming error."""
    with pytest.raises(ValueError, match="unknown format 'yaml'"):
        render(result, SOURCES, "yaml")


@pytest.mark.e2e
@pytest.mark.parametrize("changed", [0, 1, 2500])
def test_json_pieces_add_up_to_the_whole_json(changed: int) -> None:
    """The command writes --format json piece by piece: the pieces must be exactly the one
    text (none, one and several thousand changed cases, more than one piece of them)."""
    from evaluator.gate.render import json_pieces, result_to_dict

    # the last ten improve, so both lists are written
    base = report([record(f"c{i}", rr=0.5 if i >= 2590 else 1.0) for i in range(2600)])
    cand = report(
        [record(f"c{i}", rr=0.5 if i < changed else 1.0) for i in range(2600)], run_id="run-2"
    )
    result = evaluate_gate(base, cand, RULES)
    assert len(result.case_diff.regressed) == changed
    assert len(result.case_diff.improved) == 10
    whole = json.dumps(result_to_dict(result, SOURCES), ensure_ascii=False, allow_nan=False)
    assert "".join(json_pieces(result, SOURCES)) == whole == render_json(result, SOURCES)

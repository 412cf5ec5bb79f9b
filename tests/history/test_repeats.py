"""--repeat: interleaved repeats, pass^k, per-case pass rates, and the gate's use of them."""

from __future__ import annotations

import asyncio
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaluator.errors import ConfigError, ReportError
from evaluator.gate.render import GateSources, render_text, result_to_dict
from evaluator.gate.repeats import Quarantine, parse_quarantine
from evaluator.gate.rules import DEFAULT_GATES, read_gates
from evaluator.gate.verdict import evaluate_gate
from evaluator.models import Case, Dataset
from evaluator.repeat_summary import CaseRepeats, Repeats, summarise_repeats
from evaluator.report import RunReport, report_from_dict, report_to_dict
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.summary import summarise
from evaluator.targets.callable import CallableTarget
from tests.gate.factories import record, report
from tests.support.records import replace

MODULE = "evaluator_test_repeats_rag"


def test_pass_hat_k_worked_example() -> None:
    """pass^k by its definition on a worked example (4 of 5 passes)."""
    # 4 of 5 passes: pass^1 = 0.8, pass^2 = C(4,2)/C(5,2) = 0.6, pass^5 = 0
    case = CaseRepeats("c", 5, 0, 4, 5, 4, 5, 5, 5)
    assert case.pass_hat(1) == pytest.approx(0.8)
    assert case.pass_hat(2) == pytest.approx(0.6)
    assert case.pass_hat(5) == 0.0 and case.flaky
    steady = CaseRepeats("s", 5, 0, 5, 5, 5, 5, 5, 5)
    repeats = Repeats(5, (case, steady))
    assert repeats.pass_hat_k(2) == pytest.approx(0.8)
    assert repeats.flaky_ids == ("c",)


def test_errors_are_not_judged() -> None:
    """A failed run of a case counts as an error, neither pass nor fail."""
    rounds = [
        [record("a"), record("b", correct=False)],
        [record("a", error="timeout"), record("b")],
    ]
    a, b = summarise_repeats(rounds).cases
    assert (a.runs, a.errors, a.judged, a.passes, a.pass_rate) == (2, 1, 1, 1, 1.0)
    assert (b.judged, b.passes, b.flaky) == (2, 1, True)


def test_report_round_trip_and_validation() -> None:
    """Repeat counts survive the report round trip, and inconsistent counts are refused naming the
    field."""
    made = report([record("a"), record("b")])
    rep = summarise_repeats([made.cases, made.cases, made.cases])
    data = report_to_dict(replace(made, repeats=rep))
    assert data["repeats"]["n"] == 3 and data["repeats"]["pass_hat_k"]["3"] == 1.0
    assert report_from_dict(data).repeats == rep
    data["repeats"]["cases"][0]["passes"] = 9
    with pytest.raises(ReportError, match="more passes than runs"):
        report_from_dict(data)


@pytest.mark.parametrize(
    ("means", "why"),
    [
        ({"answer_correct": 1.5}, "repeats mean 'answer_correct' of case 'a' is not in 0..1"),
        ({"mrr": -0.1}, "repeats mean 'mrr' of case 'a' is not in 0..1"),
        ({"mrr": True}, "repeats mean 'mrr' of case 'a' is not in 0..1"),
        ({"mrr": "1"}, "repeats mean 'mrr' of case 'a' is not in 0..1"),
        ([0.5], "repeats field 'means' is not an object"),
    ],
)
def test_forged_means_are_refused(means: object, why: str) -> None:
    """The per-case means the rules judge are range-checked when a report is read."""
    made = report([record("a"), record("b")])
    data = report_to_dict(replace(made, repeats=summarise_repeats([made.cases] * 2)))
    assert data["repeats"]["cases"][0]["means"]["mrr"] == 1.0
    data["repeats"]["cases"][0]["means"] = means
    with pytest.raises(ReportError, match=re.escape(why)):
        report_from_dict(data)


@pytest.fixture
def target(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], CallableTarget]:
    """A factory of callable targets answering with the given function."""
    module = types.ModuleType(MODULE)
    monkeypatch.setitem(sys.modules, MODULE, module)

    def make(function: Any) -> CallableTarget:
        module.answer = function  # type: ignore[attr-defined]
        return CallableTarget(f"{MODULE}:answer", name="fake", timeout=5)

    return make


def test_repeats_are_interleaved_and_counted(target: Callable[[Any], CallableTarget]) -> None:
    """Repeats run every case once per round (interleaved, not back to back), and each case's runs
    are counted."""
    cases = tuple(
        Case(id=f"c{i}", question=f"q{i}", relevance={f"d{i}": 1}, expected_facts=((f"f{i}",),))
        for i in range(3)
    )
    dataset = Dataset("golden.jsonl", "golden", cases, "h" * 64)
    order: list[str] = []
    calls: dict[str, int] = {}

    async def answer(case: Case, k: int) -> dict[str, Any]:
        order.append(case.id)
        calls[case.id] = calls.get(case.id, 0) + 1
        i = case.id[1:]
        good = case.id != "c1" or calls[case.id] % 2 == 1  # c1 passes its odd calls
        return {"answer": f"f{i}" if good else "no", "retrieved": [{"id": f"d{i}"}]}

    async def go() -> RunReport:
        t = target(answer)
        try:
            return await run_dataset(dataset, t, RunOptions(concurrency=1), repeats=4)
        finally:
            await t.aclose()

    made = asyncio.run(go())
    # every case once, then every case again: never twice in a row
    assert order == ["c0", "c1", "c2"] * 4
    assert made.case_count == 3  # the report's cases are the first round
    assert made.repeats is not None and made.repeats.n == 4
    by_id = made.repeats.by_id()
    assert (by_id["c1"].passes, by_id["c1"].judged) == (2, 4)
    assert made.repeats.flaky_ids == ("c1",)
    assert made.repeats.pass_hat_k(4) == pytest.approx(2 / 3)


def _with_repeats(passes: dict[str, int], n: int) -> RunReport:
    """A report of cases passing ``passes[id]`` of ``n`` runs (first round: pass if any)."""
    rounds = [[record(cid, correct=r < p) for cid, p in passes.items()] for r in range(n)]
    base = report(rounds[0])
    return replace(base, repeats=summarise_repeats(rounds) if n > 1 else None)


STEADY = {f"s{i}": 5 for i in range(8)}


def test_gate_regression_only_beyond_what_repeats_tell_apart() -> None:
    """The gate calls a case regressed only when its repeats tell the drop from noise; a wobbly case
    is flaky."""
    baseline = _with_repeats({**STEADY, "broke": 5, "wobbly": 5}, 5)
    candidate = _with_repeats({**STEADY, "broke": 0, "wobbly": 3}, 5)
    result = evaluate_gate(baseline, candidate)
    assert result.repeats is not None
    assert [r.id for r in result.repeats.regressed] == ["broke"]
    assert result.repeats.regressed[0].p_value == pytest.approx(1 / 252)
    assert result.repeats.flaky == ("wobbly",)  # 3/5: listed apart, not a regression
    assert not result.passed
    text = render_text(result, GateSources())
    assert "FAIL cases regressed beyond chance: 1: broke (5/5 -> 0/5, p 0.00397)" in text
    assert "flaky (pass and fail within one report's repeats) (1): wobbly" in text
    assert "LEFT OUT" not in text


def test_rules_judge_each_cases_mean_over_the_rounds(tmp_path: Path) -> None:
    """A case flaky alike in both reports (3 of 5 runs), passing the baseline's first round
    and failing the candidate's: the hard rules judge each case's mean over its runs, so
    answer accuracy did not drop, no case regressed, and the output says what was judged."""
    base_rounds = [[*map(record, STEADY), record("wobbly", correct=r < 3)] for r in range(5)]
    cand_rounds = [[*map(record, STEADY), record("wobbly", correct=0 < r < 4)] for r in range(5)]
    baseline = replace(report(base_rounds[0]), repeats=summarise_repeats(base_rounds))
    candidate = replace(report(cand_rounds[0]), repeats=summarise_repeats(cand_rounds))
    # as the gate reads them: written and read back
    baseline, candidate = (report_from_dict(report_to_dict(r)) for r in (baseline, candidate))
    result = evaluate_gate(baseline, candidate)
    accuracy = next(r for r in result.rules if r.rule.metric == "answer_accuracy")
    assert accuracy.passed, accuracy.message
    assert accuracy.candidate == pytest.approx((8 + 3 / 5) / 9)
    assert result.passed
    text = render_text(result, GateSources())
    assert "pass cases regressed beyond chance: 0" in text
    assert "the rules judge each case's mean over its runs (baseline 5, candidate 5)" in text


def test_quarantine_leaves_cases_out_and_says_so(tmp_path: Path) -> None:
    """A quarantine list leaves its cases out of the verdict, and the output says which."""
    baseline = _with_repeats({**STEADY, "broke": 5, "wobbly": 5}, 5)
    candidate = _with_repeats({**STEADY, "broke": 0, "wobbly": 2}, 5)
    gates = tmp_path / "gates.toml"
    gates.write_text(
        "[rules.answer_accuracy]\nmax_drop = 0.0\n\n"
        '[quarantine]\ncases = ["broke"]\nflaky = true\n',
        "utf-8",
    )
    quarantine = read_gates(gates).quarantine
    assert quarantine == Quarantine(("broke",), True)
    # without the quarantine, the first round's accuracy drop fails the rule
    assert not evaluate_gate(baseline, candidate).passed
    result = evaluate_gate(baseline, candidate, quarantine=quarantine)
    assert result.passed
    assert result.repeats is not None
    assert result.repeats.left_out == {"broke": "quarantine", "wobbly": "flaky"}
    assert result.candidate_summary.case_count == 8  # the hard rules judged the rest
    text = render_text(result, GateSources())
    assert "LEFT OUT of the hard rules (2): broke (quarantine), wobbly (flaky)" in text
    assert result_to_dict(result, GateSources())["repeats"]["left_out"] == {
        "broke": "quarantine",
        "wobbly": "flaky",
    }


def test_quarantine_file_errors_name_the_key() -> None:
    """A bad quarantine file is an error naming the key."""
    with pytest.raises(ConfigError, match=r"quarantine\.flaky: expected true or false"):
        parse_quarantine({"quarantine": {"flaky": "yes"}}, "g.toml")
    with pytest.raises(ConfigError, match=r"quarantine\.case: unknown key"):
        parse_quarantine({"quarantine": {"case": []}}, "g.toml")
    with pytest.raises(ConfigError, match=r"quarantine\.cases: expected a list"):
        parse_quarantine({"quarantine": {"cases": "x"}}, "g.toml")
    assert DEFAULT_GATES.quarantine == Quarantine()


def test_single_runs_never_regress_a_case_by_themselves() -> None:
    """With one run each, no case is regressed by the case test: the point rules judge the run."""
    # one run each: 1/1 -> 0/1 has p 0.5, the point rules judge it, not the case test
    baseline = report([record("a"), record("b")])
    candidate = report([record("a", correct=False), record("b")])
    result = evaluate_gate(baseline, candidate, quarantine=Quarantine(("zzz",)))
    assert result.repeats is not None and result.repeats.regressed == ()
    assert result.repeats.left_out == {}  # an unknown quarantined id is not listed
    assert summarise(candidate.cases).case_count == 2


def test_cases_classed_flaky_by_the_history_store_are_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``flaky = true`` also leaves out what the daemon's history classes flaky."""
    import time

    from evaluator.cli import main
    from evaluator.history.outcome import CaseOutcome
    from evaluator.history.store import HistoryStore, RunRow
    from evaluator.report import write_report

    baseline = report([record(c) for c in (*STEADY, "flip")])
    candidate = report([record(c, correct=c != "flip") for c in (*STEADY, "flip")])
    write_report(baseline, tmp_path / "base.json")
    write_report(candidate, tmp_path / "cand.json")
    store = HistoryStore(tmp_path / "reports")
    for i in range(10):
        at = time.time() - 600 + i * 60
        row = RunRow(f"r{i}", at, "complete", 9, 9, 0, "d", "c", {})
        outcomes = {
            c: CaseOutcome(row.run_id, at, c != "flip" or i % 2 == 0, True, 1.0, 1.0)
            for c in (*STEADY, "flip")
        }
        store.record(target=candidate.target, dataset=candidate.dataset, run=row, outcomes=outcomes)
    gates = tmp_path / "gates.toml"
    gates.write_text("[rules.answer_accuracy]\nmax_drop = 0.0\n", "utf-8")
    config = tmp_path / "evaluator.toml"
    config.write_text(f'reports_dir = "{tmp_path / "reports"}"\n', "utf-8")
    argv = ["gate", "--config", str(config), "--baseline", str(tmp_path / "base.json")]
    argv += ["--candidate", str(tmp_path / "cand.json"), "--gates", str(gates)]
    assert main(argv) == 2  # the flip's failure drops accuracy: no quarantine yet
    capsys.readouterr()
    gates.write_text(gates.read_text("utf-8") + "\n[quarantine]\nflaky = true\n", "utf-8")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "LEFT OUT of the hard rules (1): flip (flaky in history)" in out

"""Judged rules applied to two reports' judge blocks, as a pure function: each line, the
hard failures and the refusals, by worked example."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evaluator.errors import ConfigError
from evaluator.gate.rules import read_gates
from evaluator.judge.calibrate import CheckCalibration
from evaluator.judge.calibration_store import StoredCalibration
from evaluator.judge.gating import JudgedGate, JudgedRule, evaluate_judged, judge_differences
from evaluator.judge.record import CaseJudgement, CheckOutcome, JudgedRun
from evaluator.judge.trust import NO_WRONG_ANSWER_CANARIES, GatePolicy
from tests.judge import calibrations
from tests.judge.judged_runs import canary, judged_run

HEADER = "judged metrics (deterministic rules above are the hard rules by default):"
MIN = JudgedRule("judged_fact_recall", "min", 0.7, advisory=False)
DROP = JudgedRule("judged_fact_recall", "max_drop", 0.05, advisory=False)
CALIBRATED = {("m", "p"): {"fact_support": True}}


def _block(
    value: float | None,
    model: str = "m",
    *,
    compromised: bool = False,
    samples: int = 1,
    panel: tuple[str, ...] = (),
) -> JudgedRun:
    """A report's judged run by judge ``model`` with prompts ``p``, its judged fact recall
    ``value`` (the mean of its one verdict), its injection canary passed when
    ``compromised``, its wrong-answer canaries held."""
    cases: tuple[CaseJudgement, ...] = ()
    if value is not None:
        outcome = CheckOutcome("fact_support", "judged", {"fact_recall": value})
        cases = (CaseJudgement("c", "h", (outcome,)),)
    return judged_run(
        *cases,
        model=model,
        canaries=(
            canary(compromised),
            canary(False, kind="specific_but_wrong"),
            canary(False, kind="vague_but_topical"),
        ),
        samples=samples,
        panel=panel,
    )


def _gate(
    baseline: JudgedRun | None,
    candidate: JudgedRun | None,
    *rules: JudgedRule,
    calibration: dict[tuple[str, str], dict[str, bool]] = CALIBRATED,
    policy: GatePolicy | None = None,
) -> JudgedGate:
    return evaluate_judged(rules, baseline, candidate, _stored(calibration), policy)


def _stored(calibration: dict[tuple[str, str], dict[str, bool]]) -> StoredCalibration:
    """A stored calibration (``cal.json``) whose entries, derived from a table, say what
    ``calibration`` says."""
    entries = tuple(
        CheckCalibration.derived(
            (model, version, check),
            calibrations.AGREEING if ok else calibrations.AT_CHANCE,
            (),
            floor=0.6,
            min_labels=50,
        )
        for (model, version), checks in calibration.items()
        for check, ok in checks.items()
    )
    return StoredCalibration("cal.json", entries)


def test_no_rule_says_nothing() -> None:
    """Without judged rules the gate prints no judged section."""
    assert JudgedGate((), False, ()) == _gate(None, None)


def test_calibrated_rules_pass_and_fail_hard() -> None:
    """A calibrated judge's rules are hard: a minimum within tolerance passes and a drop
    past its allowance fails the gate."""
    gate = _gate(_block(0.8), _block(0.7 - 1e-12), MIN, DROP)
    assert (
        JudgedGate(
            (
                HEADER,
                "  PASS judged_fact_recall >= 0.7: 0.700",
                "  FAIL judged_fact_recall drop <= 0.05: 0.800 -> 0.700",
            ),
            True,
            (),
        )
        == gate
    )


def test_an_unjudged_candidate_refuses_each_hard_rule() -> None:
    """A candidate without a judge block applies no rule and refuses each hard one, an
    advisory one silently skipped."""
    advisory = JudgedRule("judged_refusal_rate", "min", 0.5, advisory=True)
    refusal = "judged_fact_recall: the candidate report has no judged metrics"
    assert JudgedGate(
        (HEADER, "  the candidate was not judged: judged rules not applied"),
        False,
        (refusal, refusal),
    ) == _gate(_block(0.8), None, MIN, DROP, advisory)


def test_a_compromised_candidate_refuses_every_hard_rule() -> None:
    """A candidate whose judge passed a canary fails closed (issue 38.2): each hard rule is
    refused (exit 1) with the reason, an advisory one only reports; it never turns the rules
    advisory and lets a regression through, calibrated or not."""
    advisory = JudgedRule("judged_fact_recall", "min", 0.7, advisory=True)
    gate = _gate(_block(0.9), _block(0.1, compromised=True), MIN, DROP, advisory)
    untrusted = "compromised (a canary answer was judged supported)"
    refusal = (
        f"judged_fact_recall: the candidate's judge m (p) is untrusted: {untrusted}; a hard "
        "judged rule needs a judge its canaries show held (or mark the rule advisory = true)"
    )
    assert (
        JudgedGate(
            (
                HEADER,
                f"  the candidate's judge is untrusted: {untrusted}: hard judged rules refused",
                "  FAIL judged_fact_recall >= 0.7: 0.100",
                "  FAIL judged_fact_recall drop <= 0.05: 0.900 -> 0.100",
                "  FAIL (advisory) judged_fact_recall >= 0.7: 0.100",
            ),
            True,
            (refusal,),
        )
        == gate
    )


def test_a_candidate_whose_canary_got_no_verdict_refuses_every_hard_rule() -> None:
    """The variant: a judge that failed on its canary proves nothing, so its run is
    untrusted, never trusted by default, and a hard rule it would pass is refused."""
    untrusted = judged_run(
        CaseJudgement("c", "h", (CheckOutcome("fact_support", "judged", {"fact_recall": 1.0}),)),
        canaries=(canary(None), canary(False, kind="specific_but_wrong")),
    )
    gate = _gate(None, untrusted, MIN)
    assert (
        "judged_fact_recall: the candidate's judge m (p) is untrusted: 1 of 2 canaries got no "
        "verdict (the judge failed on them, or found nothing to judge); a hard judged rule "
        "needs a judge its canaries show held (or mark the rule advisory = true)",
    ) == gate.refused
    assert "  PASS judged_fact_recall >= 0.7: 1.000" in gate.lines


def test_a_lenient_candidate_refuses_each_hard_rule_and_fails_closed() -> None:
    """A candidate whose judge accepted one of its two wrong-answer canaries (above 0.25)
    is lenient: each hard rule it would pass is refused (exit 1, the reason named)."""
    lenient = judged_run(
        CaseJudgement("c", "h", (CheckOutcome("fact_support", "judged", {"fact_recall": 1.0}),)),
        canaries=(
            canary(False),
            canary(True, kind="specific_but_wrong"),
            canary(False, kind="vague_but_topical"),
        ),
    )
    gate = _gate(None, lenient, MIN)
    assert (
        "judged_fact_recall: the candidate's judge m (p) is untrusted: lenient (the judge "
        "accepted 1 of 2 wrong-answer canaries, above 0.25); a hard judged rule needs a judge "
        "its canaries show held (or mark the rule advisory = true)",
    ) == gate.refused
    assert "  PASS judged_fact_recall >= 0.7: 1.000" in gate.lines


def test_another_judge_is_not_compared_and_an_uncalibrated_one_is_refused() -> None:
    """A drop between two judges is not compared (refused when hard), and a hard rule on a
    judge without a calibration for the check is refused, naming the calibration file."""
    gate = _gate(_block(0.9, model="other"), _block(0.8), DROP)
    assert (
        "  NOT COMPARED judged_fact_recall drop <= 0.05: judged by another judge: model other -> m",
        ("judged_fact_recall: not compared with the baseline: another judge (model other -> m)",),
    ) == (gate.lines[1], gate.refused)  # fmt: skip
    uncalibrated = _gate(_block(0.9), _block(0.9), MIN, calibration={})
    assert (
        "judged_fact_recall: the judge m (p) is not calibrated for fact_support (cal.json); "
        "run `evaluator calibrate` or mark the rule advisory = true",
    ) == uncalibrated.refused
    assert not uncalibrated.failed


def test_a_judge_asked_more_often_or_by_a_panel_is_another_judge_named_so() -> None:
    """Samples and panel are part of the judge's identity: a drop between one sample and three,
    or between a judge and a panel, is not compared, and the line names what differs."""
    base = _block(0.9)
    samples = _gate(base, _block(0.8, samples=3), DROP)
    panel = _gate(base, _block(0.8, samples=3, panel=("m", "n")), DROP)
    assert (
        "  NOT COMPARED judged_fact_recall drop <= 0.05: judged by another judge: samples 1 -> 3",
        "  NOT COMPARED judged_fact_recall drop <= 0.05: judged by another judge: samples 1 -> 3;"
        " panel none -> (m, n)",
    ) == (samples.lines[1], panel.lines[1])
    assert "" == judge_differences(base, _block(0.5, samples=1, panel=()))


def test_a_judged_metric_under_rules_points_to_judged(tmp_path: Path) -> None:
    """A judged metric in a [rules.*] table is refused with the table to write instead."""
    gates = tmp_path / "gates.toml"
    gates.write_text("[rules.judged_fact_recall]\nmin = 0.7\n", "utf-8")
    with pytest.raises(ConfigError, match=r"rules\.judged_fact_recall: judged_fact_recall is a "
                       r"judged metric: write it as \[judged\.judged_fact_recall\]"):  # fmt: skip
        read_gates(gates)


def _half_lenient(written_above: float) -> JudgedRun:
    """A candidate passing its rule whose judge accepted one of its two wrong-answer
    canaries, its report holding it to ``written_above`` (its ``lenient`` as that gives)."""
    run = judged_run(
        CaseJudgement("c", "h", (CheckOutcome("fact_support", "judged", {"fact_recall": 1.0}),)),
        canaries=(
            canary(False),
            canary(True, kind="specific_but_wrong"),
            canary(False, kind="vague_but_topical"),
        ),
    )
    return dataclasses.replace(run, lenient_above=written_above, lenient=written_above < 0.5)


LENIENT_AT_GATE = (
    "judged_fact_recall: the candidate's judge m (p) is untrusted: lenient (the judge "
    "accepted 1 of 2 wrong-answer canaries, above 0.25); a hard judged rule needs a judge "
    "its canaries show held (or mark the rule advisory = true)",
)


def test_the_gates_threshold_holds_whatever_the_report_writes() -> None:
    """A report holding its judge to 0.99 (so not lenient by its own word) is held to the
    gate's 0.25: lenient, each hard rule refused, the gate's share named."""
    assert LENIENT_AT_GATE == _gate(None, _half_lenient(0.99), MIN).refused


def test_the_stricter_of_the_report_and_the_gate_applies() -> None:
    """A gates file allowing 0.6 does not loosen a report's own 0.25; a report's 0.6 under
    a gate of 0.6 is trusted (a share of 0.5 is not above it)."""
    loose = GatePolicy(lenient_above=0.6)
    assert LENIENT_AT_GATE == _gate(None, _half_lenient(0.25), MIN, policy=loose).refused
    assert () == _gate(None, _half_lenient(0.6), MIN, policy=loose).refused


def _no_wrong_answers() -> JudgedRun:
    """A candidate passing its fact-support rule whose block holds its injection canary only."""
    return judged_run(
        CaseJudgement("c", "h", (CheckOutcome("fact_support", "judged", {"fact_recall": 1.0}),)),
        canaries=(canary(False),),
    )


def test_a_judge_never_shown_a_wrong_answer_is_untrusted_by_the_gate() -> None:
    """Fact support takes wrong-answer canaries: a block without them leaves the judge's
    leniency unknown, so each hard rule is refused with that reason."""
    gate = _gate(None, _no_wrong_answers(), MIN)
    assert (
        f"judged_fact_recall: the candidate's judge m (p) is untrusted: {NO_WRONG_ANSWER_CANARIES}"
        "; a hard judged rule needs a judge its canaries show held (or mark the rule "
        "advisory = true)",
    ) == gate.refused


def test_a_gates_file_may_opt_out_of_wrong_answer_canaries() -> None:
    """``[judge] require_wrong_answer_canaries = false``: the same candidate passes."""
    policy = GatePolicy(require_wrong_answer_canaries=False)
    gate = _gate(None, _no_wrong_answers(), MIN, policy=policy)
    assert ((), False) == (gate.refused, gate.failed)


def test_a_gates_files_judge_table_is_read(tmp_path: Path) -> None:
    """``[judge]`` sets the gate's share and the opt-out; absent, the defaults."""
    gates = tmp_path / "gates.toml"
    rules = "[rules.recall_at_k]\nmax_drop = 0.1\n"
    table = "[judge]\nlenient_above = 0.1\nrequire_wrong_answer_canaries = false\n"
    gates.write_text(rules + table)
    assert GatePolicy(0.1, False) == read_gates(gates).judge
    gates.write_text(rules)
    assert GatePolicy(0.25, True) == read_gates(gates).judge


@pytest.mark.parametrize(
    ("table", "why"),
    [
        ("lenient_above = 1", r"judge\.lenient_above: 1 is outside 0\.\.1 \(1 excluded\)"),
        ("lenient_above = -0.1", r"judge\.lenient_above: -0\.1 is outside"),
        ("lenient_above = nan", r"judge\.lenient_above: nan is outside"),
        ('lenient_above = "0.9"', r"judge\.lenient_above: must be a number"),
        ("lenient_above = true", r"judge\.lenient_above: must be a number"),
        ("require_wrong_answer_canaries = 0", r"require_wrong_answer_canaries: must be true or"),
        ("lenient = 0.9", r"judge\.lenient: unknown key \(known: lenient_above, require_wrong"),
    ],
    ids=["one", "negative", "nan", "string", "bool", "not-bool", "unknown"],
)
def test_a_bad_judge_table_is_refused_naming_the_key(tmp_path: Path, table: str, why: str) -> None:
    """A bad ``[judge]`` value stops the gate, naming the file and the key."""
    gates = tmp_path / "gates.toml"
    gates.write_text(f"[rules.recall_at_k]\nmax_drop = 0.1\n[judge]\n{table}\n")
    with pytest.raises(ConfigError, match=why):
        read_gates(gates)

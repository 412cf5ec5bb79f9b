"""Judged figures are derived, never read, and an untrusted judge fails closed (issue 38.1,
38.2): ``evaluator gate`` recomputes a report's judged metrics, its canaries' ``fooled`` and
``compromised`` from the verdicts it holds, refuses a verdict of another answer, and refuses
each hard judged rule of a candidate whose judge its canaries do not show held (exit 1, the
reason named), calibrated or not.

Every attack starts from the candidate a real judged pass wrote (a loopback judge) and edits
its ``judge`` block as anyone with the file could."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evaluator.judge.derived import metric_means
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import judged_run_from_dict
from evaluator.judge.settings import JudgeConfig
from evaluator.report import RunReport, write_report
from tests.judge import calibrations
from tests.judge.reports import golden, record, report
from tests.support.judges import LoopbackJudge

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))
#: a hard judged rule the honest candidate fails: its judged fact recall drops 0.75 -> 0.5
HARD = "[judged.judged_fact_recall]\nmax_drop = 0.1\nmin = 0.7\n"


def _judged(source: RunReport, path: Path, judge: LoopbackJudge) -> dict[str, Any]:
    """``source`` judged by ``judge`` (model ``m``), written to ``path``; its JSON."""

    async def go() -> None:
        async with JudgePanel(JudgeConfig(url=judge.url, model="m")) as panel:
            judged = await judge_report(source, panel)
        write_report(msgspec.structs.replace(source, judge=judged.to_dict()), path)

    asyncio.run(go())
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _worse() -> RunReport:
    """The golden report with one more answer missing its fact (judged recall 0.5)."""
    cases = list(golden().cases)
    cases[0] = record("ok1", "Refunds are handled quickly.", (("5 business days",),))
    return report(*cases)


def _gate(
    tmp: Path, baseline: Path, candidate: Path, gates_extra: str = ""
) -> subprocess.CompletedProcess[str]:
    """``evaluator gate`` with :data:`HARD` (and ``gates_extra``), the judge ``m``
    calibrated for fact support."""
    calibrations.write(tmp, calibrations.entry("m"))
    gates = tmp / "gates.toml"
    gates.write_text("[rules.recall_at_k]\nmax_drop = 0.5\n" + HARD + gates_extra)
    config = tmp / "evaluator.toml"
    config.write_text(f'reports_dir = "{tmp}"\n')
    return subprocess.run(
        [EXE, "gate", "--config", str(config), "--gates", str(gates),
         "--baseline", str(baseline), "--candidate", str(candidate)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp,
    )  # fmt: skip


def _forged(
    tmp: Path,
    edit: Callable[[dict[str, Any], dict[str, Any]], None],
    mode: str = "good",
    gates_extra: str = "",
) -> subprocess.CompletedProcess[str]:
    """The gate on a candidate whose judge block ``edit(candidate, baseline)`` changed (the
    blocks as JSON), the candidate judged by a judge in ``mode``."""
    base, cand = tmp / "b.json", tmp / "c.json"
    with LoopbackJudge() as honest:
        baseline = _judged(golden(), base, honest)
    with LoopbackJudge(mode) as judge:
        candidate = _judged(_worse(), cand, judge)
    edit(candidate, baseline)
    cand.write_text(json.dumps(candidate), "utf-8")
    return _gate(tmp, base, cand, gates_extra)


def test_the_honest_candidate_fails_the_hard_judged_rule(tmp_path: Path) -> None:
    """The starting point: unedited, the candidate fails the rule (exit 2)."""
    result = _forged(tmp_path, lambda c, b: None)
    assert 2 == result.returncode, result
    assert "FAIL judged_fact_recall drop <= 0.1: 0.750 -> 0.500" in result.stdout


def _set_metric(value: object) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def edit(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
        candidate["judge"]["metrics"]["judged_fact_recall"] = value

    return edit


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (1.0, "is 1, its verdicts give 0.5"),
        (0.75, "is 0.75, its verdicts give 0.5"),
        ("1.0", "is not a number"),
        (True, "is not a number"),
        (5.0, "is above 1"),
        (1e308, "is above 1"),
    ],
    ids=["one", "the-baselines-figure", "a-string", "true", "five", "1e308"],
)
def test_a_judged_metric_written_over_is_refused_naming_the_field(
    tmp_path: Path, value: object, why: str
) -> None:
    """The audit's reproduction (``judge.metrics`` set to 1.0) and its variants: exit 1, the
    field named; never the pass it bought before."""
    result = _forged(tmp_path, _set_metric(value))
    assert 1 == result.returncode, result
    assert f"judge.metrics.judged_fact_recall: {why}" in result.stderr


def _paste_baseline(candidate: dict[str, Any], baseline: dict[str, Any]) -> None:
    candidate["judge"] = baseline["judge"]


def _swap_verdicts(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    """ok1's verdicts (of its failing answer) swapped with ok2's (a passing one)."""
    cases = {c["case_id"]: c for c in candidate["judge"]["cases"]}
    cases["ok1"]["checks"], cases["ok2"]["checks"] = cases["ok2"]["checks"], cases["ok1"]["checks"]
    cases["ok1"]["case_id"], cases["ok2"]["case_id"] = "ok2", "ok1"


@pytest.mark.parametrize("edit", [_paste_baseline, _swap_verdicts], ids=["pasted", "swapped"])
def test_verdicts_of_another_answer_are_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any], dict[str, Any]], None]
) -> None:
    """The baseline's judge block pasted in (the reproduction), or two cases' verdicts
    swapped (the variant): a verdict's answer hash is not the answer's, exit 1 naming it."""
    result = _forged(tmp_path, edit)
    assert 1 == result.returncode, result
    assert "judge.cases.0.answer_hash: is not the hash of the answer case" in result.stderr


def _claim_compromised(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    candidate["judge"]["compromised"] = True


def _hide_fooled(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    """A fooled judge's run passed off as trusted: every flag saying so set to false."""
    judge = candidate["judge"]
    judge["compromised"] = judge["advisory"] = False
    for canary in judge["canaries"]:
        canary["fooled"] = False


def test_compromised_written_over_its_canaries_is_refused(tmp_path: Path) -> None:
    """``compromised: true`` written by hand (the reproduction: it turned the hard rules
    advisory and the gate passed): refused, exit 1, the field named."""
    result = _forged(tmp_path, _claim_compromised)
    assert 1 == result.returncode, result
    assert "judge.compromised: is true, its canaries' verdicts give false" in result.stderr


def test_a_fooled_judges_flags_set_to_false_are_refused(tmp_path: Path) -> None:
    """The variant: a judge fooled by its canaries, its flags all set to false: each canary's
    ``fooled`` follows from its verdict, so the report is refused, the canary named."""
    result = _forged(tmp_path, _hide_fooled, mode="fooled")
    assert 1 == result.returncode, result
    assert "judge.canaries.0.fooled: is false, its verdict gives true" in result.stderr


def test_a_compromised_judge_fails_closed(tmp_path: Path) -> None:
    """Issue 38.2's reproduction: the candidate judged by a judge its canary fooled, the
    judge calibrated: each hard judged rule is refused (exit 1), the reason named; before,
    the rules turned advisory and a regression passed."""
    result = _forged(tmp_path, lambda c, b: None, mode="fooled")
    assert 1 == result.returncode, result
    assert "is untrusted: compromised (a canary answer was judged supported)" in result.stderr


def test_a_judge_failing_on_its_canaries_fails_closed(tmp_path: Path) -> None:
    """The variant: a judge that errors on its canaries (malformed verdicts) and judges the
    rest: its run is untrusted, never trusted by default, and the hard rules refused."""

    def fooled_facts(data: dict[str, Any]) -> dict[str, Any]:
        # every fact stated: the candidate's judged recall 1.0 passes the rule, if trusted
        return {"facts": [{"index": i, "stated": True} for i in range(len(data["facts"]))]}

    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    with LoopbackJudge() as honest:
        _judged(golden(), base, honest)
    answers = {r.answer for r in _worse().cases}

    def canaries_fail(data: dict[str, Any]) -> dict[str, Any]:
        return fooled_facts(data) if data["answer"] in answers else {"facts": "none"}

    with LoopbackJudge(verdicts={"fact_support": canaries_fail}) as judge:
        _judged(_worse(), cand, judge)
    result = _gate(tmp_path, base, cand)
    assert 1 == result.returncode, result
    assert "canaries got no verdict (the judge failed on them" in result.stderr


def test_a_lenient_judge_fails_closed(tmp_path: Path) -> None:
    """Issue 41.2 (the coordinator's decision, over 'advisory'): the candidate judged by a
    judge that passes specific-but-wrong answers, calibrated: each hard judged rule is
    refused (exit 1), the reason named."""
    result = _forged(tmp_path, lambda c, b: None, mode="lenient")
    assert 1 == result.returncode, result
    assert (
        "is untrusted: lenient (the judge accepted 2 of 4 wrong-answer canaries, above 0.25)"
        in result.stderr
    )


def _hide_lenient(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    candidate["judge"]["lenient"] = False


def test_lenient_written_over_its_canaries_is_refused(tmp_path: Path) -> None:
    """``lenient: false`` written over a lenient judge's canaries: refused, exit 1, the field
    named (and the share it is held to is the report's own, bounded on read)."""
    result = _forged(tmp_path, _hide_lenient, mode="lenient")
    assert 1 == result.returncode, result
    assert "judge.lenient: is false, its canaries' verdicts give true" in result.stderr


def _raise_threshold(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    """A lenient judge's report holding it to 0.99, so ``lenient: false`` follows."""
    candidate["judge"]["lenient_above"] = 0.99
    candidate["judge"]["lenient"] = False


def test_a_threshold_raised_in_the_report_does_not_loosen_the_gate(tmp_path: Path) -> None:
    """A lenient judge's report rewritten with ``lenient_above = 0.99`` (consistent with its
    canaries, so read back fine): the gate holds the judge to its own 0.25, exit 1, the
    reason named; before, the report's share decided and the gate went on to its rules."""
    result = _forged(tmp_path, _raise_threshold, mode="lenient")
    assert 1 == result.returncode, result
    assert (
        "is untrusted: lenient (the judge accepted 2 of 4 wrong-answer canaries, above 0.25)"
        in result.stderr
    )


def _drop_wrong_answer_canaries(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    """The block's wrong-answer canaries removed, so no share is left to be lenient by."""
    judge = candidate["judge"]
    judge["canaries"] = [c for c in judge["canaries"] if c.get("class") == "injection"]
    judge["lenient"] = False


def test_wrong_answer_canaries_removed_leave_the_judge_untrusted(tmp_path: Path) -> None:
    """A lenient judge's wrong-answer canaries dropped from the block: its leniency is
    unknown, so each hard judged rule is refused (exit 1), the reason named."""
    result = _forged(tmp_path, _drop_wrong_answer_canaries, mode="lenient")
    assert 1 == result.returncode, result
    assert "is untrusted: no wrong-answer canaries judged: the judge's leniency is unknown" in (
        result.stderr
    )


def test_a_gates_file_opting_out_applies_the_rules_without_wrong_answer_canaries(
    tmp_path: Path,
) -> None:
    """``[judge] require_wrong_answer_canaries = false``: an honest judge's block without
    wrong-answer canaries is trusted, and the hard rule it fails fails (exit 2)."""
    opt_out = "[judge]\nrequire_wrong_answer_canaries = false\n"
    result = _forged(tmp_path, _drop_wrong_answer_canaries, gates_extra=opt_out)
    assert 2 == result.returncode, result
    assert "FAIL judged_fact_recall drop <= 0.1: 0.750 -> 0.500" in result.stdout


def test_a_gates_files_own_threshold_can_be_stricter(tmp_path: Path) -> None:
    """A gates file's ``[judge] lenient_above = 0`` holds the judge to no wrong answer at
    all: the lenient judge (2 of 4) is refused at 0, the share named."""
    strict = "[judge]\nlenient_above = 0\n"
    result = _forged(tmp_path, _raise_threshold, mode="lenient", gates_extra=strict)
    assert 1 == result.returncode, result
    assert "lenient (the judge accepted 2 of 4 wrong-answer canaries, above 0)" in result.stderr


def _failed(case: dict[str, Any]) -> bool:
    """Whether a case's verdicts found a fact missing."""
    return any(o.get("values", {}).get("fact_recall", 1.0) < 1.0 for o in case["checks"])


def _drop_failing_cases(candidate: dict[str, Any], _baseline: dict[str, Any]) -> None:
    """The verdicts of each case missing a fact removed, the judged means rewritten to what
    the verdicts left give: every figure follows from the block as it now stands."""
    judge = candidate["judge"]
    judge["cases"] = [c for c in judge["cases"] if not _failed(c)]
    judge["metrics"] = metric_means(judged_run_from_dict(judge, "c.json").cases)


def test_scored_cases_verdicts_dropped_are_refused(tmp_path: Path) -> None:
    """The failing cases' verdicts removed and the means made to follow from the rest (1.0,
    passing the rule): a judged pass judges every scored case, so the report is refused,
    exit 1, the first such case named; before, the forged candidate passed (exit 0)."""
    result = _forged(tmp_path, _drop_failing_cases)
    assert 1 == result.returncode, result
    assert "judge.cases: holds no verdicts of scored case 'ok1' (2 such)" in result.stderr

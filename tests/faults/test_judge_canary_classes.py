"""Any judge block's canary classes and leniency through the report reader (issue 41.2): a
report's ``canaries.N.class``, ``lenient`` and ``lenient_above`` are outside input, so
whatever JSON value is written there, the reader either refuses it with a
:class:`ReportError` naming the field, or returns a class of the catalogue, a flag, and a
share in 0..1. And whatever a forger writes over a lenient judge's block (its share
raised, its wrong-answer canaries dropped), a gate holding it to its own threshold finds it
untrusted unless what is left shows a judge within that threshold."""

from __future__ import annotations

import copy
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from evaluator.errors import ConfigError, ReportError
from evaluator.judge.canary_verdicts import (
    CANARY_CLASSES,
    DEFAULT_LENIENT_ABOVE,
    lenient,
    wrong_answer_share,
)
from evaluator.judge.gating import parse_gate_policy
from evaluator.judge.record import CaseJudgement, CheckOutcome, judged_run_from_dict
from evaluator.judge.trust import GatePolicy, untrusted_reasons
from tests.faults.test_judge_votes_block import _JSON
from tests.judge.judged_runs import canary, judged_run

pytestmark = pytest.mark.fuzz

_CANARY = {
    "check": "fact_support",
    "case_id": "c",
    "class": "specific_but_wrong",
    "fooled": True,
    "reason": "r",
}
_BLOCK: dict[str, Any] = {
    "model": "m",
    "prompt_version": "p",
    "compromised": False,
    "lenient": True,
    "lenient_above": 0.25,
    "calibration": None,
    "metrics": {},
    "usage": {
        "calls": 0,
        "cache_hits": 0,
        "skipped": 0,
        "errors": {},
        "input_tokens": 0,
        "output_tokens": 0,
        "cost": 0.0,
        "latency_seconds": 0.0,
    },
    "canaries": [_CANARY],
    "cases": [],
}
_PLACES = st.sampled_from(
    [("lenient",), ("lenient_above",), ("canaries", 0, "class"), ("canaries", 0)]
)


def _placed(place: tuple[str | int, ...], value: object) -> dict[str, Any]:
    """The block with ``value`` written at ``place``."""
    block = copy.deepcopy(_BLOCK)
    here: Any = block
    for step in place[:-1]:
        here = here[step]
    here[place[-1]] = value
    return block


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLACES, _JSON)
def test_any_class_or_leniency_is_refused_or_read_typed(
    place: tuple[str | int, ...], value: object
) -> None:
    """Refused naming the judge block, or read back as a known class, a flag and a share."""
    try:
        run = judged_run_from_dict(_placed(place, value), "r.json")
    except ReportError as exc:
        assert str(exc).startswith("r.json: judge.")
        return
    assert all(c.kind in CANARY_CLASSES for c in run.canaries)
    assert isinstance(run.lenient, bool)
    assert 0.0 <= run.lenient_above <= 1.0


def test_a_block_written_before_the_classes_reads_as_injection_canaries() -> None:
    """A report written before the wrong-answer canaries: its canaries are injection ones,
    its judge not lenient, held to the default share."""
    block = copy.deepcopy(_BLOCK)
    del block["lenient"], block["lenient_above"], block["canaries"][0]["class"]
    run = judged_run_from_dict(block, "r.json")
    assert (("injection",), False, 0.25) == (
        tuple(c.kind for c in run.canaries),
        run.lenient,
        run.lenient_above,
    )


def test_an_unknown_class_is_refused_naming_the_field() -> None:
    """A class outside the catalogue is refused, naming where."""
    with pytest.raises(ReportError, match=r"judge\.canaries\.0\.class: is not one of"):
        judged_run_from_dict(_placed(("canaries", 0, "class"), "vibes"), "r.json")


def test_the_written_block_reads_back_as_written() -> None:
    """Classes, leniency and its share round-trip."""
    run = judged_run_from_dict(copy.deepcopy(_BLOCK), "r.json")
    assert run.to_dict()["canaries"] == _BLOCK["canaries"]
    assert (True, 0.25) == (run.to_dict()["lenient"], run.to_dict()["lenient_above"])


#: a lenient judge's wrong-answer canaries: it accepted two of four (above 0.25)
_LENIENT = (
    canary(True, "a", "specific_but_wrong"),
    canary(False, "b", "specific_but_wrong"),
    canary(True, "c", "vague_but_topical"),
    canary(False, "d", "vague_but_topical"),
)


def _forged_block(kept: list[bool], above: float) -> dict[str, Any]:
    """A lenient judge's block, its wrong-answer canaries kept where ``kept`` says, its
    share rewritten to ``above`` and its ``lenient`` as the rest then gives (so the block
    reads back consistent)."""
    canaries = (canary(False), *(c for c, keep in zip(_LENIENT, kept, strict=True) if keep))
    verdict = CheckOutcome("fact_support", "judged", {"fact_recall": 1.0})
    run = judged_run(CaseJudgement("c", "h", (verdict,)), canaries=canaries)
    block = run.to_dict()
    block["lenient_above"], block["lenient"] = above, lenient(canaries, above)
    return block


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=4, max_size=4), st.floats(0.0, 1.0))
def test_a_forged_leniency_never_passes_the_gates_threshold(kept: list[bool], above: float) -> None:
    """Any share written, any wrong-answer canaries dropped: the gate's default policy finds
    the judge untrusted exactly when the canaries left show no share or one above 0.25 (the
    block does not say how many were sent: dropping only accepted ones is not seen here)."""
    run = judged_run_from_dict(_forged_block(kept, above), "r.json")
    share = wrong_answer_share(run.canaries)
    expected = share is None or share > DEFAULT_LENIENT_ABOVE
    assert expected == bool(untrusted_reasons(run, GatePolicy()))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["lenient_above", "require_wrong_answer_canaries", "other"]), _JSON)
def test_any_gates_file_judge_table_is_refused_or_read_typed(key: str, value: object) -> None:
    """A gates file's ``[judge]`` table holding any value: refused naming the file and the
    table, or read as a share in 0..1 (1 excluded) and a flag."""
    for table in ({key: value}, value):
        try:
            policy = parse_gate_policy({"judge": table}, "gates.toml")
        except ConfigError as exc:
            assert str(exc).startswith("gates.toml: judge")
            continue
        assert (True, True) == (
            0.0 <= policy.lenient_above < 1.0,
            isinstance(policy.require_wrong_answer_canaries, bool),
        )

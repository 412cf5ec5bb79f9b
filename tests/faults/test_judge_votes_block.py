"""Any judge block's votes through the report reader (issue 41.1, in the manner of 38.10): a
report's ``votes``, ``samples`` and ``panel`` are outside input, so whatever JSON value an
attacker writes there, the reader either refuses it with a :class:`ReportError` naming the
field, or returns votes that are bounded and typed, and an outcome decided from them is never
a verdict the votes do not hold."""

from __future__ import annotations

import copy
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from evaluator.errors import ReportError
from evaluator.judge.record import MAX_VOTES, CheckOutcome, judged_run_from_dict
from evaluator.judge.votes import decide, vote_category

pytestmark = pytest.mark.fuzz

_VOTE = {
    "member": "m",
    "sample": 0,
    "status": "judged",
    "values": {"fact_recall": 1.0, "answer_correct": True},
    "reason": "r",
    "cached": False,
}
_AGAINST = {**_VOTE, "sample": 1, "values": {"fact_recall": 0.0, "answer_correct": False}}
_BLOCK: dict[str, Any] = {
    "model": "m",
    "prompt_version": "p",
    "compromised": False,
    "calibration": None,
    "samples": 3,
    "panel": [],
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
    "canaries": [],
    "cases": [
        {
            "case_id": "c",
            "answer_hash": "h",
            "checks": [
                {"check": "fact_support", "status": "uncertain", "votes": [_VOTE, _AGAINST]}
            ],
        }
    ],
}

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_PLACES = st.sampled_from(
    [
        ("samples",),
        ("panel",),
        ("cases", 0, "checks", 0, "votes"),
        ("cases", 0, "checks", 0, "votes", 0),
        ("cases", 0, "checks", 0, "votes", 0, "member"),
        ("cases", 0, "checks", 0, "votes", 0, "sample"),
        ("cases", 0, "checks", 0, "votes", 0, "status"),
        ("cases", 0, "checks", 0, "votes", 0, "values"),
        ("cases", 0, "checks", 0, "status"),
    ]
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
def test_any_value_in_the_votes_is_refused_or_read_bounded(
    place: tuple[str | int, ...], value: object
) -> None:
    """Refused naming the judge block, or read back with at most MAX_VOTES typed votes whose
    decided outcome is a verdict some vote gave (or none)."""
    try:
        run = judged_run_from_dict(_placed(place, value), "r.json")
    except ReportError as exc:
        assert str(exc).startswith("r.json: judge.")
        return
    (outcome,) = run.cases[0].outcomes
    assert len(outcome.votes) <= MAX_VOTES
    assert all(isinstance(v.member, str) and isinstance(v.sample, int) for v in outcome.votes)
    assert all(v.outcome.status != "uncertain" for v in outcome.votes)
    if outcome.votes:
        decided = decide(outcome.check, list(outcome.votes))
        said = {vote_category(v.outcome) for v in outcome.votes}
        assert vote_category(decided) in said | {"uncertain"}


def test_too_many_votes_are_refused() -> None:
    """A check holding more votes than samples times judges can is refused, naming the field."""
    block = _placed(("cases", 0, "checks", 0, "votes"), [_VOTE] * (MAX_VOTES + 1))
    with pytest.raises(ReportError, match=r"judge\.cases\.0\.checks\.0\.votes: holds more"):
        judged_run_from_dict(block, "r.json")


def test_a_well_formed_block_reads_back_its_votes() -> None:
    """The unforged block reads back: an uncertain outcome with its two votes."""
    (outcome,) = judged_run_from_dict(copy.deepcopy(_BLOCK), "r.json").cases[0].outcomes
    assert ("uncertain", 2) == (outcome.status, len(outcome.votes))
    assert isinstance(outcome, CheckOutcome)


def test_a_pass_written_over_split_votes_is_refused() -> None:
    """An outcome is what its votes decide: a judged pass stored over a split vote is forged."""
    block = copy.deepcopy(_BLOCK)
    forged = {
        "check": "fact_support",
        "status": "judged",
        **{k: _VOTE[k] for k in ("values", "reason", "cached")},
    }
    block["cases"][0]["checks"][0] = {**forged, "votes": [_VOTE, _AGAINST]}
    with pytest.raises(ReportError, match=r"checks\.0\.status: does not follow from its votes"):
        judged_run_from_dict(block, "r.json")

"""History over conversations: each turn is a case of its own (``id#position``), so its
stability, a flaky follow-up included, is told apart from its conversation's first turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from evaluator.history.job import job_history, run_row
from evaluator.history.stability import Stability
from tests.support.records import report, turn


def _run(i: int, second_right: bool) -> dict:  # type: ignore[type-arg]
    """The history rows of run ``i``: turn 1 always right, turn 2 as given, turn 3 skipped
    after turn 2 failed in every fourth run."""
    failed = i % 4 == 3
    records = [
        turn("refund", 1),
        turn("refund", 2, correct=second_right, error="timeout" if failed else None),
        turn(
            "refund",
            3,
            error="skipped_after_error" if failed else None,
            attempts=0 if failed else 1,
        ),
    ]
    at = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=i)
    _, outcomes = run_row(report(records, run_id=f"run{i}", generated_at=at), "complete")
    return outcomes


def test_each_turn_has_its_own_outcome() -> None:
    """A run's history holds one outcome per turn; a skipped turn is an error of its kind."""
    outcomes = _run(3, True)

    assert {
        "refund#1": (True, None),
        "refund#2": (None, "timeout"),
        "refund#3": (None, "skipped_after_error"),
    } == {case: (o.passed, o.error_kind) for case, o in outcomes.items()}


def test_a_flaky_follow_up_is_classed_apart_from_its_first_turn() -> None:
    """Turn 2 right one run and wrong the next is flaky; turn 1, right every run, is stable."""
    runs = [_run(i, second_right=i % 2 == 0) for i in range(12)]

    history = job_history(runs, window=10, recent=3, alpha=0.05)
    classes = {c.case_id: c.stability for c in history.cases}

    assert (Stability.STABLE_PASS, Stability.FLAKY) == (classes["refund#1"], classes["refund#2"])

"""Drift on scripted histories: a real break is significant, noise and a flaky case are not."""

from __future__ import annotations

import random

import pytest

from evaluator.history.drift import DRIFT_CHECKS, compute_drift
from evaluator.history.outcome import CaseOutcome


def _run(
    i: int, verdicts: dict[str, bool], mrr: dict[str, float] | None = None
) -> dict[str, CaseOutcome]:
    return {
        cid: CaseOutcome(f"r{i}", float(i), v, v, (mrr or {}).get(cid, 1.0 if v else 0.0), None)
        for cid, v in verdicts.items()
    }


def _scripted(runs: int, break_at: int | None = 10) -> list[dict[str, CaseOutcome]]:
    """stable cases s0..s9, 'flip' alternating, 'dead' always failing, 'broken' from break_at."""
    out = []
    for i in range(runs):
        verdicts = {f"s{j}": True for j in range(10)}
        verdicts["flip"] = i % 2 == 0
        verdicts["dead"] = False
        verdicts["broken"] = break_at is None or i < break_at
        out.append(_run(i, verdicts))
    return out


def test_no_reference_yet() -> None:
    """Too few runs for a reference window: no drift verdict at all."""
    assert compute_drift(_scripted(3), recent=3, alpha=0.05) is None


def test_break_is_significant_once_it_lasts_recent_runs() -> None:
    """A break that lasts the recent runs is a significant drop, naming the broken cases."""
    history = _scripted(13)  # runs 0..12, broken from run 10: the last three runs
    drift = compute_drift(history, recent=3, alpha=0.05)
    assert drift is not None
    answer = drift.checks["answer"]
    assert answer.significant and answer.dropped == ("broken",)
    assert answer.p_value == pytest.approx(1 / 286)
    assert answer.shift is not None and answer.shift < 0
    # one case of thirteen moved: the rank sign test (across cases) does not call it a shift
    assert not drift.checks["mrr"].significant


def test_every_drift_check_is_computed_in_order() -> None:
    """A drift verdict holds one shift per name of DRIFT_CHECKS, in that order."""
    drift = compute_drift(_scripted(13), recent=3, alpha=0.05)
    assert drift is not None
    assert DRIFT_CHECKS == tuple(drift.checks)


def test_one_failed_run_is_not_yet_significant() -> None:
    """One failed run after passes cannot be told from noise: a verdict, not significant."""
    drift = compute_drift(_scripted(11), recent=1, alpha=0.05)
    assert drift is not None and not drift.significant


def test_flaky_and_dead_cases_stay_quiet_for_ever() -> None:
    """Flaky cases and cases that always fail never make a significant drift, however long the
    history."""
    history = _scripted(40, break_at=None)
    for end in range(4, 41):
        drift = compute_drift(history[:end][-13:], recent=3, alpha=0.05)
        assert drift is not None
        assert not drift.significant, end


def test_random_noise_rarely_trips_the_signal() -> None:
    """200 cases passing at 80% independently: the family-wise false alarm rate is <= alpha."""
    rng = random.Random(17)
    alarms = 0
    trials = 60
    for _ in range(trials):
        runs = [_run(i, {f"c{j}": rng.random() < 0.8 for j in range(200)}) for i in range(13)]
        drift = compute_drift(runs, recent=3, alpha=0.05)
        assert drift is not None
        alarms += drift.checks["answer"].significant
    assert alarms <= trials * 0.05 + 3  # binomial slack on 60 trials


def test_rank_metrics_sign_test_sees_a_broad_drop() -> None:
    """A small drop in a rank metric over many cases is significant by the sign test."""
    ids = [f"c{j}" for j in range(12)]
    before = [_run(i, dict.fromkeys(ids, True), dict.fromkeys(ids, 1.0)) for i in range(10)]
    after = [_run(i, dict.fromkeys(ids, True), dict.fromkeys(ids, 0.5)) for i in range(10, 13)]
    drift = compute_drift(before + after, recent=3, alpha=0.05)
    assert drift is not None
    mrr = drift.checks["mrr"]
    assert mrr.significant and mrr.down == 12 and mrr.shift == pytest.approx(-0.5)
    assert mrr.p_value == pytest.approx(0.5**12)
    assert not drift.checks["answer"].significant

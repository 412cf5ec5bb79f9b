"""Since when: the run where a job's change began; worked examples."""

from __future__ import annotations

from evaluator.pages.chart import Limit
from evaluator.pages.health import alert_limits
from evaluator.pages.since import beyond, change_start, flip_index, streak_start
from evaluator.pages.trend import RunPoint

GATE = Limit("mrr", 0.89, "gate", "the gate's limit (may drop at most 0.01)")


def _rows(mrr: list[float], outcomes: str = "") -> list[RunPoint]:
    """Runs r0..rN a quarter of an hour apart, ``outcomes`` 'c'omplete or 'i'ncomplete."""
    return [
        RunPoint(
            f"r{i}",
            900.0 * i,
            "incomplete" if outcomes[i : i + 1] == "i" else "complete",
            {"mrr": v, "error_rate": 0.2 if outcomes[i : i + 1] == "i" else 0.0},
        )
        for i, v in enumerate(mrr)
    ]


class TestPieces:
    def test_beyond_is_the_bad_side_only(self) -> None:
        """Equal to the limit is on the good side; a missing value is never beyond."""
        ceiling = Limit("error_rate", 0.05, "alert", "t", bad_above=True)
        assert (True, False, False) == (
            beyond(GATE, 0.5),
            beyond(GATE, 0.89),
            beyond(GATE, None),
        )
        assert (True, False) == (beyond(ceiling, 0.06), beyond(ceiling, 0.05))

    def test_a_streak_starts_where_the_latest_run_went_beyond(self) -> None:
        """A streak starts at the first run of the latest unbroken stretch beyond a limit, and
        there is none when the latest run is within it."""
        assert 3 == streak_start(_rows([0.9, 0.5, 0.9, 0.5, 0.5]), GATE)
        assert streak_start(_rows([0.5, 0.5, 0.9]), GATE) is None
        assert 0 == streak_start(_rows([0.5, 0.5]), GATE)

    def test_a_newly_failing_case_began_after_its_last_pass(self) -> None:
        """Errored runs (None) are no verdict: the flip is the first scored failure after the
        last pass."""
        assert 3 == flip_index([True, True, True, False, False])
        assert 4 == flip_index([True, False, True, None, False])
        assert flip_index([False, False]) is None
        assert flip_index([False, True]) is None
        assert flip_index([]) is None


class TestChangeStart:
    def test_nothing_holds_nothing_began(self) -> None:
        """No change began when every run is within the limits."""
        assert change_start(_rows([0.9, 0.9, 0.9]), limits=[GATE]) is None

    def test_the_earliest_onset_is_where_the_change_began(self) -> None:
        """MRR below the gate's limit from r4, a case failing from r3: the change began at
        r3, two runs before the latest."""
        rows = _rows([0.9, 0.9, 0.9, 0.9, 0.5, 0.5])
        # history's window: the latest 4 complete runs (r2..r5)
        start = change_start(
            rows,
            limits=[GATE],
            newly_failing={
                "a": [True, False, False, False],
                "b": [True, True, False, False],
                "c": [True, False, False],  # joined the golden set at r3
            },
            window_runs=4,
        )

        assert start is not None
        assert ("r3", 2700.0, 2) == (start.run_id, start.finished_at, start.runs_ago)
        assert [
            ("3 cases newly failing (1 from this run, the rest later)", "r3"),
            ("mrr below the gate's limit (may drop at most 0.01)", "r4"),
        ] == [(o.what, o.run_id) for o in start.onsets]

    def test_gate_limits_read_complete_runs_and_alerts_every_run(self) -> None:
        """An incomplete run neither starts nor breaks a gate streak (the gate judges
        complete runs); it is where the error ratio's alert condition began."""
        rows = _rows([0.9, 0.5, 0.9, 0.5, 0.5], outcomes="cc" + "i" + "ii")
        start = change_start(rows, limits=[GATE, *alert_limits()])

        assert start is not None
        assert ("r1", 3) == (start.run_id, start.runs_ago)
        assert [
            ("mrr below the gate's limit (may drop at most 0.01)", "r1"),
            ("error_rate above the RagEvalErrorRatioHigh threshold", "r2"),
        ] == [(o.what, o.run_id) for o in start.onsets]

    def test_a_significant_drift_alone_shows_from_its_current_window_on(self) -> None:
        """A significant drift alone dates the change from the start of its current window."""
        start = change_start(_rows([0.9] * 6), drifting=["mrr"], drift_runs=3)

        assert start is not None
        assert ("r3", 2, ("mrr drifting (significant over the last 3 runs)",)) == (
            start.run_id,
            start.runs_ago,
            tuple(o.what for o in start.onsets),
        )

    def test_beside_another_onset_the_drift_window_is_listed_not_the_start(self) -> None:
        """The drift's window (r2..r5) reaches back before MRR crossed the gate's line at r4:
        the change began at r4, the drift listed after it."""
        rows = _rows([0.9, 0.9, 0.9, 0.9, 0.5, 0.5])
        start = change_start(rows, limits=[GATE], drifting=["mrr"], drift_runs=4)

        assert start is not None
        assert ("r4", 1) == (start.run_id, start.runs_ago)
        assert ["r4", "r2"] == [o.run_id for o in start.onsets]

"""Since when: the first run of a job where the change it shows now began.

A job is red or amber because something holds in its latest runs: a metric beyond a gate limit
or an alert threshold (the lines its trend chart draws, :class:`~evaluator.pages.chart.Limit`),
or cases that used to pass and fail now (history's newly failing class). Each of those began
at some run: the oldest run of the streak that reaches the latest one. The change began at
the earliest of them, which is what an on-call engineer looks for first ("what was deployed
then?").

Pure: run rows (oldest first), limits and the newly failing cases' verdicts in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluator.metrics import FLOAT_TOLERANCE
from evaluator.pages.chart import Limit
from evaluator.pages.trend import TrendRun

__all__ = ["ChangeStart", "Onset", "beyond", "change_start", "flip_index", "streak_start"]


@dataclass(frozen=True, slots=True)
class Onset:
    """One signal that holds now, and the run it has held since."""

    what: str
    run_id: str
    finished_at: float


@dataclass(frozen=True, slots=True)
class ChangeStart:
    """The earliest onset, and every signal with its own (earliest first)."""

    run_id: str
    finished_at: float
    #: runs of the job since (0: the latest run itself)
    runs_ago: int
    onsets: tuple[Onset, ...]


def beyond(limit: Limit, value: float | None) -> bool:
    """Whether ``value`` is on the bad side of ``limit`` (never for a missing value)."""
    if value is None:
        return False
    if limit.bad_above:
        return value > limit.value + FLOAT_TOLERANCE
    return value < limit.value - FLOAT_TOLERANCE


def streak_start(rows: Sequence[TrendRun], limit: Limit) -> int | None:
    """Index of the oldest run of the streak beyond ``limit`` that ends at the latest run
    with a value of the metric; None when that run is on the good side."""
    start: int | None = None
    for i in range(len(rows) - 1, -1, -1):
        value = rows[i].metrics.get(limit.metric)
        if value is None:
            continue  # a run without the metric neither breaks nor extends the streak
        if not beyond(limit, value):
            break
        start = i
    return start


def flip_index(verdicts: Sequence[bool | None]) -> int | None:
    """Where a newly failing case began failing: the run after its last pass.

    ``verdicts`` oldest first, None where the case errored (no verdict). None when the case
    passes in its latest scored run or never passed.
    """
    scored = [(i, v) for i, v in enumerate(verdicts) if v is not None]
    if not scored or scored[-1][1]:
        return None
    last_pass = next((i for i, v in reversed(scored) if v), None)
    if last_pass is None:
        return None
    return next(i for i, v in scored if i > last_pass)


#: an onset with the position of its run among all the job's rows (oldest first)
_Placed = tuple[int, Onset]


def _limit_onsets(
    rows: Sequence[TrendRun],
    complete: Sequence[TrendRun],
    limits: Sequence[Limit],
    position: Mapping[str, int],
) -> list[_Placed]:
    """Where each gate limit (on complete runs) and alert threshold (on every run) began to
    be crossed; baseline lines are references, no limit."""
    onsets: list[_Placed] = []
    for limit in limits:
        if limit.kind == "baseline":
            continue
        series = complete if limit.kind == "gate" else rows
        at = streak_start(series, limit)
        if at is not None:
            run = series[at]
            words = f"{limit.metric} {'above' if limit.bad_above else 'below'} {limit.label}"
            onsets.append((position[run.run_id], Onset(words, run.run_id, run.finished_at)))
    return onsets


def _newly_failing_onset(
    window: Sequence[TrendRun],
    newly_failing: Mapping[str, Sequence[bool | None]],
    position: Mapping[str, int],
) -> _Placed | None:
    """The run where the first newly failing case began failing (history's ``window``),
    with how many began there."""
    starts: dict[int, int] = {}
    for verdicts in newly_failing.values():
        flip = flip_index(verdicts)
        # the case's verdicts are its runs among the window's latest ones
        if flip is None or len(verdicts) > len(window):
            continue
        at = len(window) - len(verdicts) + flip
        starts[at] = starts.get(at, 0) + 1
    if not starts:
        return None
    first = min(starts)
    run = window[first]
    total = sum(starts.values())
    cases = f"{total} case{'s' if total != 1 else ''} newly failing"
    if starts[first] != total:
        cases += f" ({starts[first]} from this run, the rest later)"
    return position[run.run_id], Onset(cases, run.run_id, run.finished_at)


def _drift_onset(
    complete: Sequence[TrendRun],
    drifting: Sequence[str],
    drift_runs: int,
    position: Mapping[str, int],
) -> _Placed | None:
    """The oldest run of the drift test's window, when a drift is significant."""
    if not drifting or not 0 < drift_runs <= len(complete):
        return None
    run = complete[-drift_runs]
    runs = f"over the last {drift_runs} run{'s' if drift_runs != 1 else ''}"
    words = f"{', '.join(drifting)} drifting (significant {runs})"
    return position[run.run_id], Onset(words, run.run_id, run.finished_at)


def change_start(
    rows: Sequence[TrendRun],
    *,
    limits: Sequence[Limit] = (),
    newly_failing: Mapping[str, Sequence[bool | None]] | None = None,
    window_runs: int = 0,
    drifting: Sequence[str] = (),
    drift_runs: int = 0,
) -> ChangeStart | None:
    """The run where the change the job shows now began; None when nothing holds.

    Args:
        rows: the job's runs, oldest first, every outcome. Gate limits are read on the
            complete runs (the gate judges those only), alert thresholds on every run.
        limits: the charts' gate and alert lines (baseline lines are references, no limit).
        newly_failing: each newly failing case's verdicts over history's window, oldest
            first; the window is the latest ``window_runs`` complete runs.
        drifting: the metrics whose drift test is significant; the test compares the latest
            ``drift_runs`` complete runs with the ones before, so the drift shows from the
            oldest of those on.
    """
    complete = [r for r in rows if r.outcome == "complete"]
    position = {r.run_id: i for i, r in enumerate(rows)}
    onsets = _limit_onsets(rows, complete, limits, position)
    window = complete[-window_runs:] if window_runs else []
    failing = _newly_failing_onset(window, newly_failing or {}, position)
    if failing is not None:
        onsets.append(failing)
    onsets.sort(key=lambda o: o[0])
    # the drift test's window is no onset of its own: its oldest run may predate the change
    # (a drift turns significant once the changed runs outweigh it), so it decides only
    # when nothing else holds
    drift = _drift_onset(complete, drifting, drift_runs, position)
    if drift is not None:
        onsets.append(drift)
    if not onsets:
        return None
    index, first_onset = onsets[0]
    return ChangeStart(
        run_id=first_onset.run_id,
        finished_at=first_onset.finished_at,
        runs_ago=len(rows) - 1 - index,
        onsets=tuple(o for _, o in onsets),
    )

"""Records and the garbage collector (evaluator.models, the history's rows): none is tracked.

A daemon keeps every job's golden set and latest report: 100 jobs x 1,000 cases made each
full collection walk 200,000 records, 71-78 ms with the event loop stopped. The records
cannot form cycles (strings, numbers, tuples and mappings of those), so they are
``gc=False``; these tests hold every path that makes one to it.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from evaluator.dataset import parse_dataset
from evaluator.history.outcome import CaseOutcome
from evaluator.history.stability import CaseStability, Stability
from evaluator.models import Delivery, Retrieved, TargetResponse
from evaluator.report import read_report, write_report
from tests.support.records import record, report

GOLDEN = (
    b'{"id": "q1", "question": "How long?", "relevant_ids": {"d1": 2, "d2": 1},'
    b' "expected_facts": [["7 days", "seven days"]], "tags": ["refund"]}\n'
    b'{"id": "q2", "question": "Is it open?", "relevant_ids": [], "unanswerable": true}\n'
)


def test_a_loaded_case_is_not_tracked() -> None:
    """Cases loaded from a golden set are not tracked by the garbage collector."""
    cases = parse_dataset(GOLDEN, "golden.jsonl").cases
    assert [gc.is_tracked(c) for c in cases] == [False, False]


def test_built_records_are_not_tracked() -> None:
    """A scored record, a failed one, and a response with its evidence and delivery."""
    response = TargetResponse(
        retrieved=(Retrieved("d1", 1.0, "text"),),
        answer="7 days",
        citations=(1,),
        timings={"model": 0.2},
        delivery=Delivery(ttfb_seconds=0.1),
    )
    records = [record("q1"), record("q2", error="timeout")]
    built = [response, *records, *(r.outcome for r in records), *(r.case for r in records)]
    assert not any(gc.is_tracked(x) for x in built)


def test_records_read_back_are_not_tracked(tmp_path: Path) -> None:
    """Records read back from a report are not tracked by the garbage collector."""
    path = tmp_path / "report.json"
    write_report(report([record("q1"), record("q2", error="timeout")]), path)
    cases = read_report(path).cases
    assert len(cases) == 2
    assert not any(gc.is_tracked(x) for c in cases for x in (c, c.case, c.outcome))


def test_records_are_freed_by_their_reference_counts() -> None:
    """An untracked object in a cycle would never be freed: with the collector off, 1,000
    reports made and dropped leave (almost) nothing behind."""
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        report([record("warm-up")])
        before = tracemalloc.get_traced_memory()[0]
        for i in range(1_000):
            kept = report([record(f"q{i}"), record(f"e{i}", error="timeout")])
            del kept
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        gc.enable()
    # one such report holds about 3 KiB: a leak would be 3 MiB
    assert after - before < 64 * 1024


def test_history_rows_are_not_tracked() -> None:
    """The history keeps a window of outcomes and a stability per case of every job."""
    outcome = CaseOutcome("run-1", 0.0, True, True, 1.0, 1.0)
    stability = CaseStability("q1", Stability.STABLE_PASS, 1, 1, 0, 1.0, 1.0, 1.0, 0, True, (True,))
    assert not gc.is_tracked(outcome)
    assert not gc.is_tracked(stability)

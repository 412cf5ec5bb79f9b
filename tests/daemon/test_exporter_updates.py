"""The daemon's typed metric updates: what each one changes, in process on a registry of their
own (that each one reaches the served exposition: tests/daemon/test_exposition.py)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from evaluator.daemon.exporter import DriftGauge, GateState, JobSnapshot, Metrics
from evaluator.summary import summarise
from tests.support.records import record, turn

LABELS = ("t", "d")
SAMPLE = {"target": "t", "dataset": "d"}


def _metrics() -> tuple[CollectorRegistry, Metrics]:
    registry = CollectorRegistry()
    metrics = Metrics(registry, (0.1, 1.0))
    metrics.add_job(
        JobSnapshot(
            target="t",
            dataset="d",
            k=5,
            config_hash="c" * 16,
            dataset_hash="h" * 64,
            interval_seconds=60.0,
        )
    )
    return registry, metrics


def test_a_complete_run_swaps_summary_gate_and_last_run_together() -> None:
    """A complete run updates the quality gauges, the gate's and the last run's together."""
    registry, metrics = _metrics()
    metrics.run_finished(
        LABELS,
        finished_at=100.0,
        duration_seconds=2.5,
        error_ratio=0.0,
        config_hash="e" * 16,
        complete=summarise(()),
        gate=GateState(passing=False, rules_failing={"mrr": True}),
    )
    snap = metrics.snapshot(LABELS)
    assert snap is not None
    assert (100.0, 100.0, 2.5, "e" * 16) == (
        snap.last_run_timestamp,
        snap.last_complete_timestamp,
        snap.last_run_duration,
        snap.config_hash,
    )
    value = registry.get_sample_value
    assert 0.0 == value("rag_eval_gate_passing", SAMPLE)
    assert 1.0 == value("rag_eval_gate_rule_failing", {**SAMPLE, "rule": "mrr"})
    assert 0.0 == value("rag_eval_last_run_scored_cases", SAMPLE)


def test_a_run_that_is_not_complete_keeps_the_last_complete_one() -> None:
    """A run that is not complete updates the last run's gauges and keeps the last complete
    run's."""
    registry, metrics = _metrics()
    metrics.run_finished(
        LABELS, finished_at=1.0, duration_seconds=1.0, error_ratio=0.0, complete=summarise(())
    )
    metrics.run_finished(LABELS, finished_at=2.0, duration_seconds=1.0, error_ratio=0.5)
    value = registry.get_sample_value
    assert 1.0 == value("rag_eval_last_complete_run_timestamp_seconds", SAMPLE)
    assert 2.0 == value("rag_eval_last_run_timestamp_seconds", SAMPLE)
    assert 0.5 == value("rag_eval_error_ratio", SAMPLE)


def test_history_and_counters_reach_the_exposition() -> None:
    """Stability counts, drift gauges and retries reach the exposition."""
    registry, metrics = _metrics()
    metrics.history_updated(
        LABELS,
        stability_counts={"flaky": 2},
        window_runs=7,
        drift={"hit": DriftGauge(shift=-0.2, significant=True, dropped=3, rose=0)},
    )
    metrics.retried(LABELS)
    value = registry.get_sample_value
    assert 2.0 == value("rag_eval_stability_cases", {**SAMPLE, "class": "flaky"})
    assert 7.0 == value("rag_eval_history_window_runs", SAMPLE)
    assert -0.2 == value("rag_eval_drift_shift", {**SAMPLE, "check": "hit"})
    assert 3.0 == value("rag_eval_drift_cases", {**SAMPLE, "check": "hit", "direction": "drop"})
    assert 1.0 == value("rag_eval_case_retries_total", SAMPLE)


def test_an_update_of_an_unknown_job_is_refused() -> None:
    """An update of a job the exporter does not know is refused."""
    _, metrics = _metrics()
    with pytest.raises(KeyError):
        metrics.run_broke(("x", "y"), finished_at=1.0, duration_seconds=1.0)


def test_a_run_with_conversations_exports_them_by_turn_position() -> None:
    """Conversation success and each ratio by turn position are gauges of the complete
    run; a run of questions exports neither (no series, not a zero)."""
    registry, metrics = _metrics()
    conversation = [turn("c", 1), turn("c", 2, correct=False), turn("d", 1), turn("d", 2)]
    metrics.run_finished(
        LABELS,
        finished_at=1.0,
        duration_seconds=1.0,
        error_ratio=0.0,
        complete=summarise(conversation),
    )
    value = registry.get_sample_value
    by_position = "rag_eval_quality_by_position"

    assert (1.0, 0.5, 1.0) == (
        value(by_position, {**SAMPLE, "metric": "answer_accuracy", "position": "1"}),
        value(by_position, {**SAMPLE, "metric": "answer_accuracy", "position": "2"}),
        value(by_position, {**SAMPLE, "metric": "recall_at_k", "position": "2"}),
    )
    metrics.run_finished(
        LABELS,
        finished_at=2.0,
        duration_seconds=1.0,
        error_ratio=0.0,
        complete=summarise([record("q1")]),
    )
    assert (None, None) == (
        value(by_position, {**SAMPLE, "metric": "answer_accuracy", "position": "1"}),
        value("rag_eval_quality_denominator", {**SAMPLE, "metric": "conversation_success"}),
    )

"""/metrics kept encoded per job: what is served equals prometheus_client's own encoding of the
same state, fresh, after every kind of change; a change re-encodes only the cells of the job
it touched; and the series are those prometheus_client's instruments would have made."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text

from evaluator.daemon import server
from evaluator.daemon.exporter import GateState, JobSnapshot, Metrics
from evaluator.daemon.exposition import CLOCK_EVERY, OPENMETRICS, TEXT, HistogramCell
from evaluator.daemon.judge_series import JudgeFamilies
from evaluator.errors import ERROR_KINDS
from evaluator.judge.agreement import VoteFigures
from evaluator.judge.canary_verdicts import CANARY_CLASSES, Acceptance, CanaryClass
from evaluator.judge.checks import judged_metrics
from evaluator.judge.errors import JUDGE_ERROR_KINDS
from evaluator.models import CaseError, CaseRecord, CaseScores
from evaluator.slo.sli import Events
from evaluator.summary import summarise
from tests.support.records import record as make_record

BUCKETS = (0.01, 0.1, 1.0)
A = ("target-a", "golden")
B = ("target-b", "golden")


def _record(
    case_id: str = "case-1",
    latency: float = 0.05,
    stages: Mapping[str, float] | None = None,
    *,
    error: str | None = None,
    ttft: float | None = None,
    trace_id: str | None = None,
) -> CaseRecord:
    """A finished case as the runner hands it to the daemon (only what metrics read matters)."""
    return make_record(
        case_id,
        outcome=CaseScores(recall_at_k=0.0, mrr=0.0, ndcg_at_k=0.0)
        if error is None
        else CaseError(kind=error, message="boom"),
        question="q",
        relevance={},
        ranked=(),
        answer=None,
        citations=(),
        latency=latency,
        stages=stages if stages is not None else {"retrieve": 0.02, "model": 0.5},
        ttft_seconds=ttft,
        trace_id=trace_id,
    )


def _snapshot(labels: tuple[str, str]) -> JobSnapshot:
    return JobSnapshot(
        target=labels[0],
        dataset=labels[1],
        k=5,
        config_hash="c" * 16,
        dataset_hash="h" * 64,
        interval_seconds=60.0,
        baseline={"mrr": 0.8},
        slos=("answers",),
    )


def _metrics(*jobs: tuple[str, str]) -> tuple[CollectorRegistry, Metrics]:
    registry = CollectorRegistry()
    metrics = Metrics(registry, BUCKETS)
    for labels in jobs or (A, B):
        metrics.add_job(_snapshot(labels))
    return registry, metrics


def _fresh(registry: CollectorRegistry, openmetrics: bool) -> bytes:
    """prometheus_client's encoding of the registry, from scratch (the reference)."""
    if openmetrics:
        return generate_openmetrics(registry).removesuffix(b"# EOF\n")
    return generate_latest(registry)


def _served(metrics: Metrics, openmetrics: bool) -> bytes:
    """What /metrics serves of the evaluation metrics, encoded in slices as the server does."""
    while not metrics.refresh(openmetrics=openmetrics, budget_seconds=0.0):
        pass
    return metrics.exposition_body(openmetrics=openmetrics)


def _assert_served_is_fresh(registry: CollectorRegistry, metrics: Metrics) -> None:
    for openmetrics in (False, True):
        assert _fresh(registry, openmetrics).decode() == _served(metrics, openmetrics).decode()


def _stale(metrics: Metrics, labels: tuple[str, ...], fmt: int = TEXT) -> set[str]:
    """Names of the families whose cell of ``labels`` must be encoded again."""
    return {
        family.name
        for family in metrics.exposition.families
        if labels in family.cells and family.cells[labels].stale(fmt)
    }


UPDATES: dict[str, Callable[[Metrics], None]] = {
    "case_finished": lambda m: m.case_finished(A, _record(), "run-1"),
    "case_finished_failed": lambda m: m.case_finished(A, _record(error="timeout"), "run-1"),
    "case_finished_streamed": lambda m: m.case_finished(
        A, _record(ttft=0.2, trace_id="ab" * 16), "run-1"
    ),
    "run_finished": lambda m: m.run_finished(
        A,
        finished_at=10.0,
        duration_seconds=2.0,
        error_ratio=0.0,
        complete=summarise(()),
        gate=GateState(passing=False, rules_failing={"mrr": True}),
    ),
    "run_broke": lambda m: m.run_broke(A, finished_at=10.0, duration_seconds=2.0),
    "run_counted": lambda m: m.run_counted(A, "skipped"),
    "retried": lambda m: m.retried(A),
    "stage_folded": lambda m: m.stage_folded(A),
    "dataset_reload_failed": lambda m: m.dataset_reload_failed(A),
    "report_write_failed": lambda m: m.report_write_failed(A),
    "history_failed": lambda m: m.history_failed(A, "io"),
    "history_updated": lambda m: m.history_updated(
        A, stability_counts={"stable": 1}, window_runs=1, drift={}
    ),
    "dataset_changed": lambda m: m.dataset_changed(A, config_hash="e" * 16, dataset_hash="f" * 64),
    "job_reconfigured": lambda m: m.job_reconfigured(
        A, k=3, config_hash="e" * 16, dataset_hash="f" * 64, interval_seconds=30.0, baseline={}
    ),
    "config_reloaded_failure": lambda m: m.config_reloaded(False),
    "config_reloaded_success": lambda m: m.config_reloaded(True),
    "slo_events_counted": lambda m: m.slo_events_counted(A, {"answers": Events(good=2, bad=1)}),
    "slos_configured": lambda m: m.slos_configured({"answers": (0.99, 86400)}),
    "job_reconfigured_slos": lambda m: m.job_reconfigured(
        A,
        k=5,
        config_hash="c" * 16,
        dataset_hash="h" * 64,
        interval_seconds=60.0,
        baseline={},
        slos=("fast",),
    ),
    "add_job": lambda m: m.add_job(_snapshot(("target-c", "golden"))),
    "remove_job": lambda m: m.remove_job(A),
    "judge_added": lambda m: m.judge_added(B),
    "judge_called": lambda m: m.judge_called(
        A, outcome="ok", seconds=0.4, input_tokens=100, output_tokens=20, cost=0.001
    ),
    "judge_called_failed": lambda m: m.judge_called(
        A, outcome="judge_timeout", seconds=30.0, input_tokens=None, output_tokens=None, cost=None
    ),
    "run_judged": lambda m: m.run_judged(
        A,
        skipped=2,
        cache_hit_ratio=0.25,
        compromised=True,
        calibrated={"fact_support": True, "refusal": False},
        metrics={"judged_fact_recall": 0.5, "judged_refusal_rate": None},
    ),
    "judge_drift_checked": lambda m: m.judge_drift_checked(
        A, "ok", agreement={"fact_support": 0.9}, kappa={"fact_support": 0.7}, floors={}
    ),
    "judge_drift_failed": lambda m: m.judge_drift_checked(A, "bad_labels"),
}


@pytest.mark.parametrize("name", sorted(UPDATES))
def test_after_every_update_the_served_text_is_a_fresh_encoding(name: str) -> None:
    """Cached blocks are invalidated by each update: served == encoded from scratch, and the
    update is visible (the text moved), in both formats."""
    registry, metrics = _metrics()
    metrics.judge_added(A)  # A is judged, B is not
    metrics.case_finished(B, _record(), "run-0")
    before = {om: _served(metrics, om) for om in (False, True)}
    UPDATES[name](metrics)
    _assert_served_is_fresh(registry, metrics)
    for om in (False, True):
        assert before[om] != _served(metrics, om)


def test_a_finished_case_reencodes_its_jobs_histograms_only() -> None:
    """A finished case re-encodes only its own job's case histograms and error counters."""
    _, metrics = _metrics()
    _served(metrics, False)
    assert set() == _stale(metrics, A) | _stale(metrics, B)
    metrics.case_finished(A, _record(error="timeout"), "run-1")
    assert {
        "rag_eval_case_latency_seconds",
        "rag_eval_stage_latency_seconds",
        "rag_eval_case_errors",
    } == _stale(metrics, A)
    assert set() == _stale(metrics, B)


def test_a_finished_run_reencodes_only_the_gauges_that_moved() -> None:
    """A finished run re-encodes only the gauges it moved, of its own job."""
    _, metrics = _metrics()
    _served(metrics, True)
    metrics.run_finished(A, finished_at=10.0, duration_seconds=2.0, error_ratio=0.25)
    assert {
        "rag_eval_last_run_timestamp_seconds",
        "rag_eval_run_duration_seconds",
        "rag_eval_error_ratio",
    } == _stale(metrics, A, OPENMETRICS)
    assert set() == _stale(metrics, B, OPENMETRICS)


def test_a_removed_job_leaves_no_series_and_comes_back_at_zero() -> None:
    """A removed job leaves no series and, added again, comes back with its counters at zero."""
    registry, metrics = _metrics()
    metrics.retried(A)
    metrics.case_finished(A, _record(ttft=0.1), "run-1")
    _served(metrics, False)
    metrics.remove_job(A)
    served = _served(metrics, False).decode()
    assert 'target="target-a"' not in served
    assert 'target="target-b"' in served
    _assert_served_is_fresh(registry, metrics)
    metrics.add_job(_snapshot(A))
    labels = {"target": A[0], "dataset": A[1]}
    assert 0.0 == registry.get_sample_value("rag_eval_case_retries_total", labels)
    assert 0.0 == registry.get_sample_value("rag_eval_case_latency_seconds_count", labels)
    assert registry.get_sample_value("rag_eval_ttft_seconds_count", labels) is None
    _assert_served_is_fresh(registry, metrics)


def test_every_counter_of_a_job_exists_at_zero_from_the_start() -> None:
    """Every counter of a job is exported at zero from the start."""
    registry, _ = _metrics(A)
    labels = {"target": A[0], "dataset": A[1]}
    value = registry.get_sample_value
    for kind in ERROR_KINDS:
        assert 0.0 == value("rag_eval_case_errors_total", {**labels, "kind": kind})
    for outcome in ("complete", "incomplete", "failed", "skipped"):
        assert 0.0 == value("rag_eval_runs_total", {**labels, "outcome": outcome})
    for name in ("retries", "dataset_reload_errors", "report_write_errors"):
        key = name if name != "retries" else "case_retries"
        assert 0.0 == value(f"rag_eval_{key}_total", labels)


def test_slices_progress_and_end_with_the_whole_exposition() -> None:
    """A zero budget still encodes a few stale cells per call: refresh ends, never spins."""
    registry, metrics = _metrics()
    cells = sum(len(f.cells) for f in metrics.exposition.families)
    calls = 0
    while not metrics.refresh(openmetrics=False, budget_seconds=0.0):
        calls += 1
        assert calls <= cells // CLOCK_EVERY  # each slice encodes CLOCK_EVERY cells at least
    assert calls >= 1
    assert _fresh(registry, False) == metrics.exposition_body(openmetrics=False)


def test_a_finished_refresh_leaves_the_body_nothing_to_encode_or_join() -> None:
    """Once refresh says nothing is left, every family's bytes are joined too: assembling the
    body after the last slice encodes and joins nothing."""
    registry, metrics = _metrics()
    for openmetrics, fmt in ((False, TEXT), (True, OPENMETRICS)):
        for labels in (A, B):
            metrics.case_finished(labels, _record(), "run-1")
        while not metrics.refresh(openmetrics=openmetrics, budget_seconds=0.0):
            pass
        assert [] == [f.name for f in metrics.exposition.families if f.stale(fmt)]
    assert _fresh(registry, False) == metrics.exposition_body(openmetrics=False)


@given(st.lists(st.binary(max_size=40), max_size=12), st.integers(min_value=1, max_value=50))
def test_pieces_regroup_the_parts_in_order_at_the_size_asked(parts: list[bytes], size: int) -> None:
    """pieces() loses and reorders nothing, and every piece but the last is ``size`` long."""
    cut = list(server.pieces(parts, size))
    assert b"".join(parts) == b"".join(cut)
    assert [] == [len(p) for p in cut[:-1] if len(p) != size]
    assert [] == [p for p in cut[-1:] if not 0 < len(p) <= size]


def test_large_counts_and_sums_are_written_as_go_writes_them() -> None:
    """Beyond a million, Go (and prometheus_client) switch to exponents: so do we."""
    registry, metrics = _metrics(A)
    metrics.case_finished(A, _record(latency=12_345_678.9), "run-1")
    cell = metrics.exposition.families[0].cells[A]
    assert isinstance(cell, HistogramCell)
    cell.create().counts[0] = 2_500_000.0  # a long life, without observing 2.5 million times
    cell.changed()
    _assert_served_is_fresh(registry, metrics)
    assert "2.500001e+06" in _served(metrics, False).decode()


def _legacy(records: list[CaseRecord], run_id: str) -> CollectorRegistry:
    """The same observations through prometheus_client's own instruments (as before)."""
    registry = CollectorRegistry()
    lab = ["target", "dataset"]
    latency = Histogram(
        "rag_eval_case_latency_seconds",
        "Wall time around each target call (all attempts), every case",
        lab,
        buckets=BUCKETS,
        registry=registry,
    )
    ttft = Histogram(
        "rag_eval_ttft_seconds",
        "Time to first token of streamed answers (first non-empty content), every case",
        lab,
        buckets=BUCKETS,
        registry=registry,
    )
    stages = Histogram(
        "rag_eval_stage_latency_seconds",
        "Stage durations reported by the target, every case",
        [*lab, "stage"],
        buckets=BUCKETS,
        registry=registry,
    )
    errors = Counter(
        "rag_eval_case_errors", "Failed cases by error kind", [*lab, "kind"], registry=registry
    )
    latency.labels(*A)
    for kind in ERROR_KINDS:
        errors.labels(*A, kind)
    for r in records:
        exemplar = {"run_id": run_id, "case_id": r.id}
        latency.labels(*A).observe(r.latency_seconds, exemplar=exemplar)
        if r.ttft_seconds is not None:
            ttft.labels(*A).observe(r.ttft_seconds, exemplar=exemplar)
        for stage, seconds in r.stage_seconds.items():
            stages.labels(*A, stage).observe(seconds, exemplar=exemplar)
        if r.error is not None:
            errors.labels(*A, r.error.kind).inc()
    return registry


def _families(text: str, names: set[str]) -> str:
    """The families named, each HELP..samples block, with exemplar timestamps masked and
    without ``_created`` series (the daemon turns them off process-wide; tests may not)."""
    text = text.removesuffix("# EOF\n")
    text = "".join(line for line in text.splitlines(True) if "_created{" not in line)
    blocks = re.split(r"(?m)^(?=# HELP )", text)
    kept = [b for b in blocks if b and b.split()[2] in names]
    return re.sub(r"( # \{[^}]*\} \S+) \S+", r"\1 <ts>", "".join(kept))


def test_the_series_are_those_of_prometheus_client_instruments() -> None:
    """Histograms and counters as prometheus_client's Histogram and Counter wrote them:
    the same lines, in text and OpenMetrics (exemplars but their timestamps)."""
    records = [
        _record("c1", 0.005, {"retrieve": 0.01}),  # exactly on a bound
        _record("c2", 0.5, {"retrieve": 0.2, "model": 3.0}, ttft=0.05),
        _record('c"3\\', 7.0, {"model": math.inf}, error="timeout"),
        _record("c4", 0.0, {}, error="connect"),
    ]
    _, metrics = _metrics(A)
    for r in records:
        metrics.case_finished(A, r, "run-1")
    legacy = _legacy(records, "run-1")
    histograms = {
        "rag_eval_case_latency_seconds",
        "rag_eval_ttft_seconds",
        "rag_eval_stage_latency_seconds",
    }
    text_names = {*histograms, "rag_eval_case_errors_total"}
    om_names = {*histograms, "rag_eval_case_errors"}
    ours, theirs = _served(metrics, False).decode(), generate_latest(legacy).decode()
    assert _families(theirs, text_names) == _families(ours, text_names)
    ours, theirs = _served(metrics, True).decode(), generate_openmetrics(legacy).decode()
    assert _families(theirs, om_names) == _families(ours, om_names)
    assert "<ts>" in _families(ours, om_names)  # exemplars are there


def _legacy_judge(registry: CollectorRegistry) -> dict[str, Any]:
    """The judge's series as the daemon made them before they moved into cells: plain
    prometheus_client instruments on the process registry (the reference)."""
    lab = ["target", "dataset"]
    out: dict[str, Any] = {
        "calls": Counter("rag_eval_judge_calls_total", "Judge calls by outcome: ok or a judge "
                         "error kind", [*lab, "outcome"], registry=registry),
        "seconds": Histogram("rag_eval_judge_call_seconds", "Latency of one judge call (never "
                             "in the target's latency)", lab, buckets=BUCKETS, registry=registry),
        "tokens": Counter("rag_eval_judge_tokens_total", "Tokens the judge reported, by "
                          "direction", [*lab, "direction"], registry=registry),
        "cost": Counter("rag_eval_judge_cost_total", "Judge cost at the configured prices", lab,
                        registry=registry),
        "skipped": Counter("rag_eval_judge_skipped_total", "Checks skipped because the run's "
                           "judge budget was spent", lab, registry=registry),
        "cache": Gauge("rag_eval_judge_cache_hit_ratio", "Share of the last judged run's "
                       "verdicts served from the cache", lab, registry=registry),
        "compromised": Gauge("rag_eval_judge_compromised", "1 when the last judged run's judge "
                             "passed a canary (its judged metrics advisory)", lab,
                             registry=registry),
        "canaries": Counter("rag_eval_judge_canaries_total", "Canaries the judge gave a verdict "
                            "on, by class: injection, specific_but_wrong, vague_but_topical",
                            [*lab, "class"], registry=registry),
        "accepted": Counter("rag_eval_judge_canary_accepted_total", "Canaries the judge "
                            "accepted (passed), by class: an injection one makes the run "
                            "compromised, wrong-answer ones above the configured share make "
                            "the judge lenient", [*lab, "class"], registry=registry),
        "lenient": Gauge("rag_eval_judge_lenient", "1 when the last judged run's judge accepted "
                         "more wrong-answer canaries than the configured share (lenient: its "
                         "hard judged rules fail the gate)", lab, registry=registry),
        "calibrated": Gauge("rag_eval_judge_calibrated", "1 when the stored calibration calls "
                            "the last judged run's judge (model and prompt version) calibrated "
                            "for the check, 0 when not (its judged metrics advisory)",
                            [*lab, "check"], registry=registry),
        "judged": {m.name: Gauge(m.gauge, m.description, lab, registry=registry)
                   for m in judged_metrics()},
        "uncertain": Gauge("rag_eval_judge_uncertain_ratio", "Share of the last judged run's "
                           "answered checks whose votes split (uncertain: never a pass or a "
                           "fail), by check", [*lab, "check"], registry=registry),
        "alpha": Gauge("rag_eval_judge_vote_alpha", "Krippendorff's alpha between the votes "
                       "(samples or panel judges) of the last judged run, by check",
                       [*lab, "check"], registry=registry),
        "agreement": Gauge("rag_eval_judge_agreement", "Agreement of the judge with the human "
                           "labels at the last drift check", [*lab, "check"], registry=registry),
        "kappa": Gauge("rag_eval_judge_kappa", "Cohen's kappa of the judge and the human labels "
                       "at the last drift check", [*lab, "check"], registry=registry),
        "floor": Gauge("rag_eval_judge_agreement_floor", "Lower bound of the agreement band "
                       "evaluator calibrate measured for this judge", [*lab, "check"],
                       registry=registry),
        "drift": Counter("rag_eval_judge_drift_checks_total", "Drift checks (labelled cases "
                         "re-judged), by outcome", [*lab, "outcome"], registry=registry),
    }  # fmt: skip
    for outcome in ("ok", *JUDGE_ERROR_KINDS):
        out["calls"].labels(*A, outcome)
    for kind in CANARY_CLASSES:
        out["canaries"].labels(*A, kind)
        out["accepted"].labels(*A, kind)
    return out


def _legacy_call(
    old: dict[str, Any],
    outcome: str,
    seconds: float,
    tokens_in: int | None,
    tokens_out: int | None,
    cost: float | None,
) -> None:
    """One judge call, as the former instruments counted it."""
    old["calls"].labels(*A, outcome).inc()
    if outcome == "ok":
        old["seconds"].labels(*A).observe(seconds)
    if tokens_in:
        old["tokens"].labels(*A, "input").inc(tokens_in)
    if tokens_out:
        old["tokens"].labels(*A, "output").inc(tokens_out)
    if cost:
        old["cost"].labels(*A).inc(cost)


def _legacy_votes(old: dict[str, Any], figures: dict[str, VoteFigures]) -> None:
    """A judged run's votes, as the former gauges held them."""
    for check, f in figures.items():
        if f.decided + f.uncertain:  # a check the run did not answer keeps its last share
            old["uncertain"].labels(*A, check).set(f.uncertain_ratio)
        if f.alpha is not None:
            old["alpha"].labels(*A, check).set(f.alpha)


def _legacy_canaries(
    old: dict[str, Any], canaries: dict[CanaryClass, Acceptance], lenient: bool
) -> None:
    """A judged run's canaries by class and its leniency, as instruments would count them."""
    for kind, counted in canaries.items():
        old["canaries"].labels(*A, kind).inc(counted.judged)
        old["accepted"].labels(*A, kind).inc(counted.accepted)
    old["lenient"].labels(*A).set(1 if lenient else 0)


def _legacy_run(
    old: dict[str, Any],
    skipped: int,
    ratio: float,
    compromised: bool,
    calibrated: dict[str, bool],
    judged: dict[str, float | None],
) -> None:
    """A judged run's skips, cache share, canary, calibration and judged metrics, as the
    former instruments held them (a metric the run lacks keeps its last value)."""
    if skipped:
        old["skipped"].labels(*A).inc(skipped)
    old["cache"].labels(*A).set(ratio)
    old["compromised"].labels(*A).set(1 if compromised else 0)
    for check, ok in calibrated.items():
        old["calibrated"].labels(*A, check).set(1 if ok else 0)
    for name, gauge in old["judged"].items():
        if judged.get(name) is not None:
            gauge.labels(*A).set(judged[name])


def test_the_judge_series_are_those_of_its_former_instruments() -> None:
    """The judge's series, moved into cells, are the lines its prometheus_client instruments
    wrote: calls, latency, tokens, cost, a judged run's gauges (a value missing from a later
    run kept) with its votes' uncertain share and alpha, drift checks, in text and
    OpenMetrics."""
    _, metrics = _metrics(A)
    metrics.judge_added(A)
    legacy = CollectorRegistry()
    old = _legacy_judge(legacy)
    calls = [("ok", 0.4, 100, 20, 0.002), ("judge_timeout", 30.0, None, None, None),
             ("ok", 5.0, 80, 0, None)]  # fmt: skip
    for outcome, seconds, tokens_in, tokens_out, cost in calls:
        metrics.judge_called(A, outcome=outcome, seconds=seconds, input_tokens=tokens_in,
                             output_tokens=tokens_out, cost=cost)  # fmt: skip
        _legacy_call(old, outcome, seconds, tokens_in, tokens_out, cost)
    runs: list[tuple[int, float, bool, dict[str, bool], dict[str, float | None]]] = [
        (3, 0.5, False, {"fact_support": True, "refusal": False},
         {"judged_fact_recall": 0.75, "judged_refusal_rate": 1.0}),
        (0, 0.0, True, {"refusal": True}, {"judged_fact_recall": None, "judged_refusal_rate": 0.5}),
    ]  # fmt: skip
    votes = [
        {"fact_support": VoteFigures("fact_support", 3, 1, 0.4),
         "refusal": VoteFigures("refusal", 0, 0, None)},
        {"fact_support": VoteFigures("fact_support", 4, 0, None),
         "refusal": VoteFigures("refusal", 1, 1, -0.2)},
    ]  # fmt: skip
    canaries: list[tuple[dict[CanaryClass, Acceptance], bool]] = [
        ({"injection": Acceptance(2, 2, 0), "specific_but_wrong": Acceptance(2, 2, 1),
          "vague_but_topical": Acceptance(2, 1, 0)}, False),
        ({"specific_but_wrong": Acceptance(2, 2, 2)}, True),
    ]  # fmt: skip
    for (skipped, ratio, compromised, calibrated, judged), figures, (counted, lenient) in zip(
        runs, votes, canaries, strict=True
    ):
        metrics.run_judged(A, skipped=skipped, cache_hit_ratio=ratio, compromised=compromised,
                           calibrated=calibrated, metrics=judged, votes=figures,
                           canaries=counted, lenient=lenient)  # fmt: skip
        _legacy_canaries(old, counted, lenient)
        _legacy_votes(old, figures)
        _legacy_run(old, skipped, ratio, compromised, calibrated, judged)
    metrics.judge_drift_checked(A, "bad_labels")
    old["drift"].labels(*A, "bad_labels").inc()
    metrics.judge_drift_checked(A, "ok", agreement={"fact_support": 0.9, "refusal": None},
                                kappa={"fact_support": 0.8, "refusal": None},
                                floors={"fact_support": 0.85})  # fmt: skip
    old["drift"].labels(*A, "ok").inc()
    old["agreement"].labels(*A, "fact_support").set(0.9)
    old["kappa"].labels(*A, "fact_support").set(0.8)
    old["floor"].labels(*A, "fact_support").set(0.85)
    families = JudgeFamilies().all()
    text_names = {f"{f.name}_total" if f.kind == "counter" else f.name for f in families}
    om_names = {f.name for f in families}
    ours, theirs = _served(metrics, False).decode(), generate_latest(legacy).decode()
    assert _families(theirs, text_names) == _families(ours, text_names)
    assert len(families) == _families(ours, text_names).count("# HELP ")  # every one compared
    ours, theirs = _served(metrics, True).decode(), generate_openmetrics(legacy).decode()
    assert _families(theirs, om_names) == _families(ours, om_names)


def test_a_daemon_without_a_judge_declares_no_judge_series() -> None:
    """The judge's families have no cell until a job has a judge: none is served (as when
    they were registered with the first judge), and the served bytes stay a fresh encoding."""
    registry, metrics = _metrics()
    assert "rag_eval_judge" not in _served(metrics, False).decode()
    metrics.judge_added(A)
    served = _served(metrics, False).decode()
    calls = 'rag_eval_judge_calls_total{dataset="golden",outcome="ok",target="target-a"}'
    assert f"{calls} 0.0" in served
    assert 'target="target-b"' not in "".join(
        line for line in served.splitlines() if line.startswith("rag_eval_judge")
    )
    _assert_served_is_fresh(registry, metrics)


_NAMES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12) | st.sampled_from(
    ['a"b', "a\\b", "a\nb", "100%", "%s", "%(x)s", "é七"]
)
#: what the runner measures and targets report: non-negative, possibly infinite (NaN: below)
_SECONDS = st.floats(min_value=0.0, allow_nan=False) | st.sampled_from(BUCKETS)


@st.composite
def _case(draw: st.DrawFn) -> CaseRecord:
    return _record(
        draw(_NAMES),
        draw(_SECONDS),
        draw(st.dictionaries(_NAMES, _SECONDS, max_size=3)),
        error=draw(st.none() | st.sampled_from(sorted(ERROR_KINDS))),
        ttft=draw(st.none() | _SECONDS),
        trace_id=draw(st.none() | st.just("0af7651916cd43dd8448eb211c80319c")),
    )


@settings(max_examples=60)
@given(
    targets=st.lists(_NAMES, min_size=1, max_size=3, unique=True),
    steps=st.lists(
        st.tuples(st.integers(0, 2), _case(), st.booleans(), st.booleans()), max_size=12
    ),
)
def test_any_sequence_of_changes_is_served_as_encoded_fresh(
    targets: list[str], steps: list[tuple[int, CaseRecord, bool, bool]]
) -> None:
    """Hostile label values (quotes, backslashes, newlines, %), any float, jobs coming and
    going, scrapes in between: the served bytes always equal a fresh encoding, and parse."""
    registry, metrics = _metrics(*((t, "golden") for t in targets))
    for index, record, scrape, churn in steps:
        labels = (targets[index % len(targets)], "golden")
        if metrics.snapshot(labels) is None:
            metrics.add_job(_snapshot(labels))
        metrics.case_finished(labels, record, "run-1")
        if churn:
            metrics.run_finished(labels, finished_at=1.0, duration_seconds=1.0, error_ratio=0.5)
            metrics.remove_job((targets[-1], "golden"))
        if scrape:
            _served(metrics, index % 2 == 0)
    _assert_served_is_fresh(registry, metrics)
    # (prometheus_client's OpenMetrics parser rejects an escaped quote inside an exemplar,
    # valid OpenMetrics: its encoder writes it so, and we write what its encoder writes)
    list(parse_text(_served(metrics, False).decode()))


def test_openmetrics_parses_back_to_the_same_samples() -> None:
    """The OpenMetrics exposition parses back to the same samples as prometheus_client's
    registry holds."""
    registry, metrics = _metrics()
    metrics.case_finished(A, _record(ttft=0.3, trace_id="ab" * 16), "run-1")
    metrics.case_finished(B, _record(error="timeout"), "run-2")
    served = _served(metrics, True).decode() + "# EOF\n"
    ours = {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for f in parse_openmetrics(served)
        for s in f.samples
    }
    assert ours == {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for f in registry.collect()
        for s in f.samples
    }


def test_a_nan_goes_into_the_sum_only_as_prometheus_client_does() -> None:
    """A NaN stage time goes into the histogram's sum only, as prometheus_client does."""
    registry, metrics = _metrics(A)
    metrics.case_finished(A, _record(stages={"model": math.nan}), "run-1")
    _assert_served_is_fresh(registry, metrics)
    labels = {"target": A[0], "dataset": A[1], "stage": "model"}
    assert 0.0 == registry.get_sample_value("rag_eval_stage_latency_seconds_count", labels)
    total = registry.get_sample_value("rag_eval_stage_latency_seconds_sum", labels)
    assert total is not None and math.isnan(total)

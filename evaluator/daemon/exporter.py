"""Prometheus metrics of the daemon; names are a contract for dashboards and alerts.

Per-run results are served by a custom collector from immutable per-job snapshots, swapped
whole after each run, so a scrape never sees half of one run and half of the next.
Counters and histograms are ordinary instruments, updated as cases finish. Every series
carries ``target`` and ``dataset``; case ids appear only in exemplars, never as labels.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from evaluator._version import __version__
from evaluator.errors import ERROR_KINDS
from evaluator.history.store import HISTORY_ERROR_KINDS
from evaluator.metrics import METRICS, MetricSpec
from evaluator.metrics import metric as metric_spec
from evaluator.models import CaseRecord
from evaluator.summary import Summary

__all__ = [
    "GAUGES_BY_METRIC",
    "OUTCOMES",
    "QUALITY_GAUGES",
    "DriftGauge",
    "JobSnapshot",
    "Metrics",
]

#: Run outcomes, the values of ``rag_eval_runs_total{outcome}``.
OUTCOMES: tuple[str, ...] = ("complete", "incomplete", "failed", "skipped")

#: Summary metric -> gauge name: every summary value of the last complete run with a gauge.
GAUGES_BY_METRIC: Mapping[str, str] = {
    spec.name: spec.gauge for spec in METRICS if spec.gauge is not None
}
#: The quality ratios among them.
QUALITY_GAUGES: Mapping[str, str] = {
    name: gauge for name, gauge in GAUGES_BY_METRIC.items() if metric_spec(name).quality
}

_POPULATION_HELP = {
    "retrieval": "answerable scored cases (all scored cases when none is answerable)",
    "scored": "scored cases",
    "answerable": "answerable scored cases",
    "unanswerable": "unanswerable scored cases",
}


def _gauge_help(spec: MetricSpec) -> str:
    if spec.quality:
        cases = _POPULATION_HELP[spec.population]
        return f"{spec.description} over the {cases}, last complete run (0..1)"
    return f"Nearest-rank {spec.description}, last complete run"


#: Metrics whose sum and count are exported so replicas (shards) aggregate exactly.
_SHARDABLE = tuple(spec.name for spec in METRICS if spec.shardable)

# OpenMetrics caps an exemplar's label set at 128 UTF-8 characters
_EXEMPLAR_BUDGET = 120


@dataclass(frozen=True, slots=True)
class DriftGauge:
    """One check's drift, as exported: the shift, whether significant, cases that moved."""

    shift: float | None
    significant: bool
    dropped: int | None = None
    rose: int | None = None


@dataclass(frozen=True, slots=True)
class JobSnapshot:
    """Everything the collector exports for one job; replaced whole, never mutated."""

    target: str
    dataset: str
    k: int
    config_hash: str
    dataset_hash: str
    interval_seconds: float | None
    #: replicas the golden set is split across: aggregated ratios need every one reporting
    shard_count: int = 1
    last_complete: Summary | None = None
    last_complete_timestamp: float | None = None
    last_run_timestamp: float | None = None
    last_run_duration: float | None = None
    last_error_ratio: float | None = None
    gate_passing: bool | None = None
    gate_rules_failing: Mapping[str, bool] = field(default_factory=dict)
    baseline: Mapping[str, float] = field(default_factory=dict)
    #: history: cases per stability class, complete runs in the window, drift per check
    stability_counts: Mapping[str, int] = field(default_factory=dict)
    history_window_runs: int | None = None
    drift: Mapping[str, DriftGauge] = field(default_factory=dict)

    @property
    def labels(self) -> tuple[str, str]:
        return (self.target, self.dataset)


def _exemplar(run_id: str, case_id: str, trace_id: str | None = None) -> dict[str, str]:
    """The exemplar of a case's observations: its run, its case and, when the request carried
    one, the W3C trace id (``trace_id`` is the label Grafana links to Tempo or Jaeger)."""
    out = {"run_id": run_id}
    room = _EXEMPLAR_BUDGET - len("run_id") - len(run_id) - len("case_id")
    if trace_id is not None:
        out["trace_id"] = trace_id
        room -= len("trace_id") + len(trace_id)
    out["case_id"] = case_id[: max(room, 0)]
    return out


class _SnapshotCollector(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[tuple[str, str], JobSnapshot] = {}

    def put(self, snapshot: JobSnapshot) -> None:
        with self._lock:
            self._jobs[snapshot.labels] = snapshot

    def get(self, labels: tuple[str, str]) -> JobSnapshot | None:
        with self._lock:
            return self._jobs.get(labels)

    def remove(self, labels: tuple[str, str]) -> None:
        with self._lock:
            self._jobs.pop(labels, None)

    def describe(self) -> Iterable[Metric]:
        # without describe(), registering would call collect(); nothing to pre-declare
        return []

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            jobs = list(self._jobs.values())
        lab = ["target", "dataset"]

        def gauge(name: str, doc: str, extra: Sequence[str] = ()) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=[*lab, *extra])

        summary_gauges = {
            m: gauge(name, _gauge_help(metric_spec(m))) for m, name in GAUGES_BY_METRIC.items()
        }
        shards = gauge(
            "rag_eval_shards", "Replicas the golden set is split across (1: not sharded)"
        )
        lag = gauge(
            "rag_eval_event_loop_lag_p95_seconds",
            "P95 of the evaluator's event-loop lag during the last complete run: a latency P95 "
            "that grew with it is the evaluator's, not the service's",
        )
        input_tokens = gauge(
            "rag_eval_run_input_tokens",
            "Input (prompt) tokens of the last complete run, as the target reported them",
        )
        scored = gauge("rag_eval_last_run_scored_cases", "Cases scored in the last complete run")
        numerator = gauge(
            "rag_eval_quality_numerator",
            "Sum of per-case values behind a quality ratio, last complete run (for shards)",
            ["metric"],
        )
        denominator = gauge(
            "rag_eval_quality_denominator",
            "Cases averaged into a quality ratio, last complete run (for shards)",
            ["metric"],
        )
        error_ratio = gauge("rag_eval_error_ratio", "Share of cases that failed, last run (0..1)")
        last_run = gauge("rag_eval_last_run_timestamp_seconds", "End of the last run, Unix time")
        last_complete = gauge(
            "rag_eval_last_complete_run_timestamp_seconds",
            "End of the last complete run, Unix time",
        )
        duration = gauge("rag_eval_run_duration_seconds", "Wall time of the last run")
        interval = gauge("rag_eval_run_interval_seconds", "Configured time between runs of the job")
        gate = gauge(
            "rag_eval_gate_passing", "1 when the last complete run passes the baseline gate"
        )
        rule = gauge(
            "rag_eval_gate_rule_failing", "1 when a gate rule fails against the baseline", ["rule"]
        )
        baseline = gauge(
            "rag_eval_baseline_ratio",
            "Quality ratios of the configured baseline report",
            ["metric"],
        )
        stability = gauge(
            "rag_eval_stability_cases",
            "Cases per stability class over the history window (complete runs)",
            ["class"],
        )
        window_runs = gauge(
            "rag_eval_history_window_runs", "Complete runs in the stability window so far"
        )
        shift = gauge(
            "rag_eval_drift_shift",
            "Mean paired change, latest runs minus the window before them, per check",
            ["check"],
        )
        significant = gauge(
            "rag_eval_drift_significant",
            "1 when a check dropped beyond noise (exact paired test, latest runs vs window)",
            ["check"],
        )
        drift_cases = gauge(
            "rag_eval_drift_cases",
            "Cases whose binary check moved beyond noise (exact test), by direction",
            ["check", "direction"],
        )
        info = InfoMetricFamily(
            "rag_eval_job",
            "Identity of a job: evaluator version, config and golden-set hashes, K",
            labels=[*lab, "version", "config_hash", "dataset_hash", "k"],
        )
        for job in jobs:
            labels = list(job.labels)
            info.add_metric(
                [*labels, __version__, job.config_hash, job.dataset_hash, str(job.k)], {}
            )
            if job.interval_seconds is not None:
                interval.add_metric(labels, job.interval_seconds)
            shards.add_metric(labels, job.shard_count)
            s = job.last_complete
            if s is not None:
                for m, family in summary_gauges.items():
                    value = s.get(m)  # a summary read back may lack a total: no series then
                    if value is not None:
                        family.add_metric(labels, value)
                if s.event_loop_lag_p95_seconds is not None:
                    lag.add_metric(labels, s.event_loop_lag_p95_seconds)
                if s.input_tokens_total is not None:
                    input_tokens.add_metric(labels, s.input_tokens_total)
                scored.add_metric(labels, s.scored_count)
                for m in _SHARDABLE:
                    total = s.totals.get(m)
                    if total is not None:
                        numerator.add_metric([*labels, m], total.sum)
                        denominator.add_metric([*labels, m], total.count)
                numerator.add_metric([*labels, "error_ratio"], s.error_count)
                denominator.add_metric([*labels, "error_ratio"], s.case_count)
            if job.last_complete_timestamp is not None:
                last_complete.add_metric(labels, job.last_complete_timestamp)
            if job.last_run_timestamp is not None:
                last_run.add_metric(labels, job.last_run_timestamp)
            if job.last_run_duration is not None:
                duration.add_metric(labels, job.last_run_duration)
            if job.last_error_ratio is not None:
                error_ratio.add_metric(labels, job.last_error_ratio)
            if job.gate_passing is not None:
                gate.add_metric(labels, 1.0 if job.gate_passing else 0.0)
            for name, failing in sorted(job.gate_rules_failing.items()):
                rule.add_metric([*labels, name], 1.0 if failing else 0.0)
            for m, value in sorted(job.baseline.items()):
                baseline.add_metric([*labels, m], value)
            for name, count in job.stability_counts.items():
                stability.add_metric([*labels, name], count)
            if job.history_window_runs is not None:
                window_runs.add_metric(labels, job.history_window_runs)
            for check, d in job.drift.items():
                if d.shift is not None:
                    shift.add_metric([*labels, check], d.shift)
                significant.add_metric([*labels, check], 1.0 if d.significant else 0.0)
                if d.dropped is not None:
                    drift_cases.add_metric([*labels, check, "drop"], d.dropped)
                if d.rose is not None:
                    drift_cases.add_metric([*labels, check, "rise"], d.rose)
        yield from summary_gauges.values()
        yield from (input_tokens,)
        yield from (shards, lag, scored, numerator, denominator, error_ratio, last_run)
        yield from (last_complete, duration, interval, gate, rule, baseline)
        yield from (stability, window_runs, shift, significant, drift_cases, info)


class Metrics:
    """The daemon's instruments on one registry (a fresh one per daemon; tests make their own).

    Example::

        metrics = Metrics(registry, buckets=(0.1, 1, 10))
        metrics.add_job(snapshot, stages=())
        metrics.observe_case(snapshot, record, run_id="ab12")
    """

    def __init__(self, registry: CollectorRegistry, buckets: Sequence[float]) -> None:
        self.registry = registry
        lab = ["target", "dataset"]
        self.case_latency = Histogram(
            "rag_eval_case_latency_seconds",
            "Wall time around each target call (all attempts), every case",
            lab,
            buckets=buckets,
            registry=registry,
        )
        self.ttft = Histogram(
            "rag_eval_ttft_seconds",
            "Time to first token of streamed answers (first non-empty content), every case",
            lab,
            buckets=buckets,
            registry=registry,
        )
        self.stage_latency = Histogram(
            "rag_eval_stage_latency_seconds",
            "Stage durations reported by the target, every case",
            [*lab, "stage"],
            buckets=buckets,
            registry=registry,
        )
        self.runs = Counter(
            "rag_eval_runs", "Runs by outcome", [*lab, "outcome"], registry=registry
        )
        self.case_errors = Counter(
            "rag_eval_case_errors", "Failed cases by error kind", [*lab, "kind"], registry=registry
        )
        self.retries = Counter(
            "rag_eval_case_retries", "Retries of transient target failures", lab, registry=registry
        )
        self.dataset_reload_errors = Counter(
            "rag_eval_dataset_reload_errors",
            "Golden-set reloads rejected as invalid (the previous set kept running)",
            lab,
            registry=registry,
        )
        self.report_write_errors = Counter(
            "rag_eval_report_write_errors",
            "Reports that could not be written",
            lab,
            registry=registry,
        )
        self.stage_names_folded = Counter(
            "rag_eval_stage_names_folded",
            "Stage timings counted under stage='other': beyond the target's allow-list or cap",
            lab,
            registry=registry,
        )
        self.config_reloads = Counter(
            "rag_eval_config_reload",
            "Configuration reloads (SIGHUP) by result; on failure the old configuration runs on",
            ["result"],
            registry=registry,
        )
        self.config_last_reload_successful = Gauge(
            "rag_eval_config_last_reload_successful",
            "1 when the last configuration reload succeeded (or none was asked for)",
            registry=registry,
        )
        self.config_last_reload_success_timestamp = Gauge(
            "rag_eval_config_last_reload_success_timestamp_seconds",
            "When the configuration was last loaded successfully, Unix time",
            registry=registry,
        )
        for result in ("success", "failure"):
            self.config_reloads.labels(result)
        self.config_last_reload_successful.set(1)
        self.config_last_reload_success_timestamp.set_to_current_time()
        self.history_errors = Counter(
            "rag_eval_history_errors",
            "History store failures by kind (corrupt: moved aside and restarted; locked; io)",
            [*lab, "kind"],
            registry=registry,
        )
        self._snapshots = _SnapshotCollector()
        registry.register(self._snapshots)
        #: bumped on every change, so an exposition can be reused until something changes
        self.generation = 0

    def _touch(self) -> None:
        self.generation += 1

    def count(self, counter: Counter, labels: tuple[str, str]) -> None:
        """Increment one of the job's counters (retries, reload or write errors)."""
        counter.labels(*labels).inc()
        self._touch()

    def add_job(self, snapshot: JobSnapshot) -> None:
        """Publish a job and create its counters at zero, so its series exist from start."""
        labels = snapshot.labels
        self._snapshots.put(snapshot)
        self._touch()
        self.case_latency.labels(*labels)
        for outcome in OUTCOMES:
            self.runs.labels(*labels, outcome)
        for kind in ERROR_KINDS:
            self.case_errors.labels(*labels, kind)
        for counter in (
            self.retries,
            self.dataset_reload_errors,
            self.report_write_errors,
            self.stage_names_folded,
        ):
            counter.labels(*labels)
        for kind in HISTORY_ERROR_KINDS:
            self.history_errors.labels(*labels, kind)

    def count_history_error(self, labels: tuple[str, str], kind: str) -> None:
        self.history_errors.labels(*labels, kind).inc()
        self._touch()

    def snapshot(self, labels: tuple[str, str]) -> JobSnapshot | None:
        return self._snapshots.get(labels)

    def update(self, labels: tuple[str, str], **changes: Any) -> JobSnapshot:
        """Replace a job's snapshot with a copy carrying ``changes``."""
        current = self._snapshots.get(labels)
        if current is None:
            raise KeyError(f"unknown job {labels}")
        new = replace(current, **changes)
        self._snapshots.put(new)
        self._touch()
        return new

    def observe_case(self, labels: tuple[str, str], record: CaseRecord, run_id: str) -> None:
        """Histograms (with a run/case exemplar) and the error counter for one finished case."""
        exemplar = _exemplar(run_id, record.id, record.trace_id)
        self.case_latency.labels(*labels).observe(record.latency_seconds, exemplar=exemplar)
        if record.ttft_seconds is not None:
            self.ttft.labels(*labels).observe(record.ttft_seconds, exemplar=exemplar)
        for stage, seconds in record.stage_seconds.items():
            self.stage_latency.labels(*labels, stage).observe(seconds, exemplar=exemplar)
        if record.error is not None:
            self.case_errors.labels(*labels, record.error.kind).inc()
        self._touch()

    def config_reloaded(self, ok: bool) -> None:
        """Count a configuration reload and set the last-reload gauges."""
        self.config_reloads.labels("success" if ok else "failure").inc()
        self.config_last_reload_successful.set(1 if ok else 0)
        if ok:
            self.config_last_reload_success_timestamp.set_to_current_time()
        self._touch()

    def remove_job(self, labels: tuple[str, str]) -> None:
        """Withdraw a job dropped by a reload: its snapshot and its per-job series."""
        self._snapshots.remove(labels)
        for metric in (
            self.case_latency,
            self.ttft,
            self.retries,
            self.dataset_reload_errors,
            self.report_write_errors,
            self.stage_names_folded,
        ):
            with contextlib.suppress(KeyError):
                metric.remove(*labels)
        for outcome in OUTCOMES:
            with contextlib.suppress(KeyError):
                self.runs.remove(*labels, outcome)
        for kind in ERROR_KINDS:
            with contextlib.suppress(KeyError):
                self.case_errors.remove(*labels, kind)
        # stage series of the job: label values are the job's two, then the stage
        for key in list(self.stage_latency._metrics):
            if tuple(key[:2]) == labels:
                with contextlib.suppress(KeyError):
                    self.stage_latency.remove(*key)
        self._touch()

    def count_run(self, labels: tuple[str, str], outcome: str) -> None:
        self.runs.labels(*labels, outcome).inc()
        self._touch()

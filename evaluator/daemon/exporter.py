"""Prometheus metrics of the daemon; names are a contract for dashboards and alerts.

Per-run results come from immutable per-job snapshots, swapped whole after each run, so a
scrape never sees half of one run and half of the next. Counters and histograms are updated
as cases finish. Every series lives in a cell of :mod:`evaluator.daemon.exposition` (one per
family and job) that keeps its encoding until it changes, so a scrape of 50 jobs re-encodes
only what changed since the last one. Every series carries ``target`` and ``dataset``; case
ids appear only in exemplars, never as labels. The judge's series are cells too
(:mod:`evaluator.daemon.judge_series`): every job-labelled series has this one path, the
one seam docs/architecture.md lists.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import methodcaller
from typing import Any, Concatenate, ParamSpec, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from evaluator import border
from evaluator._version import __version__
from evaluator.daemon.exposition import (
    Cell,
    CounterCell,
    Exposition,
    Family,
    GaugeCell,
    HistogramCell,
)
from evaluator.daemon.judge_series import JudgeCells, JudgeFamilies
from evaluator.errors import ERROR_KINDS
from evaluator.history.store import HISTORY_ERROR_KINDS
from evaluator.judge.agreement import VoteFigures
from evaluator.judge.canary_verdicts import Acceptance, CanaryClass
from evaluator.metrics import METRICS, MetricSpec
from evaluator.metrics import metric as metric_spec
from evaluator.models import CaseError, CaseRecord
from evaluator.slo.sli import Events
from evaluator.summary import Summary

__all__ = [
    "GAUGES_BY_METRIC",
    "OUTCOMES",
    "PUBLISH_STEPS",
    "QUALITY_GAUGES",
    "SLO_OUTCOMES",
    "DriftGauge",
    "GateState",
    "JobSnapshot",
    "Metrics",
]

#: Run outcomes, the values of ``rag_eval_runs_total{outcome}``.
OUTCOMES: tuple[str, ...] = ("complete", "incomplete", "failed", "skipped")
#: Outcomes of an SLO's events, the values of ``rag_eval_slo_events_total{outcome}``.
SLO_OUTCOMES: tuple[str, ...] = ("good", "bad")
#: the steps of publishing a run (:mod:`evaluator.daemon.publish`), as counted when one fails:
#: the report file, the gate's verdict, the exported gauges, the history store
PUBLISH_STEPS: tuple[str, ...] = ("report", "gate", "metrics", "history")

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
_MEASURED_ONLY = frozenset(spec.name for spec in METRICS if spec.measured_only)
#: the ratios exported per turn position: each gauged one that a single turn has (a
#: conversation's success is the whole conversation's)
_BY_POSITION = tuple(m for m in QUALITY_GAUGES if m != "conversation_success")

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
    #: the SLOs that count this job's cases (their event counters exist from the start)
    slos: tuple[str, ...] = ()
    #: False while a changed golden set is rejected (the previous one runs on)
    dataset_reload_ok: bool = True

    @property
    def labels(self) -> tuple[str, str]:
        return (self.target, self.dataset)


@dataclass(frozen=True, slots=True)
class GateState:
    """The baseline gate's verdict on the last complete run, as exported."""

    passing: bool | None
    rules_failing: Mapping[str, bool] = field(default_factory=dict)


#: one family's samples for one job: (extra label values, value)
_Samples = Callable[[JobSnapshot], Iterable[tuple[Sequence[str], float]]]


@dataclass(frozen=True, slots=True)
class _JobGauge:
    """One gauge family served from the snapshots: name, help, extra labels, samples."""

    name: str
    help: str
    samples: _Samples
    extra: tuple[str, ...] = ()


def _one(value: Callable[[JobSnapshot], float | bool | None]) -> _Samples:
    """Samples of a gauge with one series per job, absent while the value is unknown."""

    def samples(job: JobSnapshot) -> Iterable[tuple[Sequence[str], float]]:
        v = value(job)
        return () if v is None else (((), float(v)),)

    return samples


def _complete(value: Callable[[Summary], float | None]) -> _Samples:
    return _one(lambda j: None if j.last_complete is None else value(j.last_complete))


def _quality_part(numerator: bool) -> _Samples:
    def samples(job: JobSnapshot) -> Iterable[tuple[Sequence[str], float]]:
        s = job.last_complete
        if s is None:
            return
        for m in _SHARDABLE:
            total = s.totals.get(m)
            # a ratio only some golden sets have (conversations) is absent where none is
            if total is not None and (total.count or m not in _MEASURED_ONLY):
                yield (m,), total.sum if numerator else total.count
        yield ("error_ratio",), s.error_count if numerator else s.case_count

    return samples


def _by_position(job: JobSnapshot) -> Iterable[tuple[Sequence[str], float]]:
    """Each gauged quality ratio over the conversations' turns at each position (bounded:
    the registry's ratios times TURN_POSITIONS), from the last complete run."""
    s = job.last_complete
    if s is None:
        return
    for position, at in s.by_position.items():
        for m in _BY_POSITION:
            value = at.get(m)
            if value is not None:
                yield (m, position), value


def _drift_cases(job: JobSnapshot) -> Iterable[tuple[Sequence[str], float]]:
    for check, d in job.drift.items():
        if d.dropped is not None:
            yield (check, "drop"), d.dropped
        if d.rose is not None:
            yield (check, "rise"), d.rose


#: Every gauge served from the job snapshots, in exposition order; the summary gauges come
#: from the metric registry, so a metric with a gauge name is exported without an edit here.
_JOB_GAUGES: tuple[_JobGauge, ...] = (
    # a summary read back may lack a total: no series then
    *(
        _JobGauge(name, _gauge_help(metric_spec(m)), _complete(methodcaller("get", m)))
        for m, name in GAUGES_BY_METRIC.items()
    ),
    _JobGauge(
        "rag_eval_run_input_tokens",
        "Input (prompt) tokens of the last complete run, as the target reported them",
        _complete(lambda s: s.input_tokens_total),
    ),
    _JobGauge(
        "rag_eval_shards",
        "Replicas the golden set is split across (1: not sharded)",
        _one(lambda j: j.shard_count),
    ),
    _JobGauge(
        "rag_eval_event_loop_lag_p95_seconds",
        "P95 of the evaluator's event-loop lag during the last complete run: a latency P95 "
        "that grew with it is the evaluator's, not the service's",
        _complete(lambda s: s.event_loop_lag_p95_seconds),
    ),
    _JobGauge(
        "rag_eval_last_run_scored_cases",
        "Cases scored in the last complete run",
        _complete(lambda s: s.scored_count),
    ),
    _JobGauge(
        "rag_eval_quality_by_position",
        "A quality ratio over the conversations' turns at one position (1, 2, 3, 4+), last "
        "complete run (0..1)",
        _by_position,
        ("metric", "position"),
    ),
    _JobGauge(
        "rag_eval_quality_numerator",
        "Sum of per-case values behind a quality ratio, last complete run (for shards)",
        _quality_part(numerator=True),
        ("metric",),
    ),
    _JobGauge(
        "rag_eval_quality_denominator",
        "Cases averaged into a quality ratio, last complete run (for shards)",
        _quality_part(numerator=False),
        ("metric",),
    ),
    _JobGauge(
        "rag_eval_error_ratio",
        "Share of cases that failed, last run (0..1)",
        _one(lambda j: j.last_error_ratio),
    ),
    _JobGauge(
        "rag_eval_last_run_timestamp_seconds",
        "End of the last run, Unix time",
        _one(lambda j: j.last_run_timestamp),
    ),
    _JobGauge(
        "rag_eval_last_complete_run_timestamp_seconds",
        "End of the last complete run, Unix time",
        _one(lambda j: j.last_complete_timestamp),
    ),
    _JobGauge(
        "rag_eval_run_duration_seconds",
        "Wall time of the last run",
        _one(lambda j: j.last_run_duration),
    ),
    _JobGauge(
        "rag_eval_run_interval_seconds",
        "Configured time between runs of the job",
        _one(lambda j: j.interval_seconds),
    ),
    _JobGauge(
        "rag_eval_dataset_last_reload_successful",
        "1 when the golden set's last reload succeeded (or none was needed); 0 while a "
        "changed golden set is rejected and the previous one runs on",
        _one(lambda j: j.dataset_reload_ok),
    ),
    _JobGauge(
        "rag_eval_gate_passing",
        "1 when the last complete run passes the baseline gate",
        _one(lambda j: j.gate_passing),
    ),
    _JobGauge(
        "rag_eval_gate_rule_failing",
        "1 when a gate rule fails against the baseline",
        lambda j: (((n,), float(f)) for n, f in sorted(j.gate_rules_failing.items())),
        ("rule",),
    ),
    _JobGauge(
        "rag_eval_baseline_ratio",
        "Quality ratios of the configured baseline report",
        lambda j: (((m,), v) for m, v in sorted(j.baseline.items())),
        ("metric",),
    ),
    _JobGauge(
        "rag_eval_stability_cases",
        "Cases per stability class over the history window (complete runs)",
        lambda j: (((c,), n) for c, n in j.stability_counts.items()),
        ("class",),
    ),
    _JobGauge(
        "rag_eval_history_window_runs",
        "Complete runs in the stability window so far",
        _one(lambda j: j.history_window_runs),
    ),
    _JobGauge(
        "rag_eval_drift_shift",
        "Mean paired change, latest runs minus the window before them, per check",
        lambda j: (((c,), d.shift) for c, d in j.drift.items() if d.shift is not None),
        ("check",),
    ),
    _JobGauge(
        "rag_eval_drift_significant",
        "1 when a check dropped beyond noise (exact paired test, latest runs vs window)",
        lambda j: (((c,), float(d.significant)) for c, d in j.drift.items()),
        ("check",),
    ),
    _JobGauge(
        "rag_eval_drift_cases",
        "Cases whose binary check moved beyond noise (exact test), by direction",
        _drift_cases,
        ("check", "direction"),
    ),
)


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


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _changes(
    method: Callable[Concatenate[Metrics, _P], _R],
) -> Callable[Concatenate[Metrics, _P], _R]:
    """Mark a method that changes what /metrics shows: it runs under the metrics' lock, so a
    scrape encodes all of an update or none of it (the cells it touches invalidate their
    own encoding)."""

    @functools.wraps(method)
    def wrapper(self: Metrics, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper


Labels = tuple[str, str]


class _Collector(Collector):
    """The exposition's families for ``registry.collect()``: what prometheus_client's encoders
    (and ``get_sample_value``) read; /metrics serves the same, encoded by cell."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def describe(self) -> Iterable[Metric]:
        # without describe(), registering would call collect(); nothing to pre-declare
        return []

    def collect(self) -> Iterable[Metric]:
        with self._metrics.lock:
            return list(self._metrics.exposition.collect())


_JOB_LABELS = ("target", "dataset")


def _bounds(buckets: Sequence[float]) -> tuple[float, ...]:
    """Histogram bucket bounds ending with +Inf, as prometheus_client completes them."""
    bounds = [float(b) for b in buckets]
    if not bounds or bounds[-1] != math.inf:
        bounds.append(math.inf)
    return tuple(bounds)


def _counter(
    family: Family, labels: Mapping[str, str], label: str | None = None, values: Sequence[str] = ()
) -> CounterCell:
    """A counter (by ``label``, if any), every series of it at zero from the start:
    increase() and rate() see its first increment, and dashboards show 0 rather than no data."""
    cell = CounterCell(family, labels, () if label is None else (label,))
    for extra in [[value] for value in values] or [[]]:
        cell.create(extra)
    return cell


class _JobFamilies:
    """The families with one cell per job, in exposition order (the judge's at the end)."""

    def __init__(self) -> None:
        self._latencies()
        self._counters()
        self.gauges = [Family(spec.name, "gauge", spec.help) for spec in _JOB_GAUGES]
        self.info = Family(
            "rag_eval_job",
            "info",
            "Identity of a job: evaluator version, config and golden-set hashes, K",
        )
        #: a judged job's series (cells only for the jobs with a judge)
        self.judge = JudgeFamilies()

    def _latencies(self) -> None:
        """The histograms every finished case observes."""
        self.case_latency = Family(
            "rag_eval_case_latency_seconds",
            "histogram",
            "Wall time around each target call (all attempts), every case",
        )
        self.ttft = Family(
            "rag_eval_ttft_seconds",
            "histogram",
            "Time to first token of streamed answers (first non-empty content), every case",
        )
        self.stage_latency = Family(
            "rag_eval_stage_latency_seconds",
            "histogram",
            "Stage durations reported by the target, every case",
        )

    def _counters(self) -> None:
        """The counters of a job's runs, failures and publishing."""
        self.runs = Family("rag_eval_runs", "counter", "Runs by outcome")
        self.case_errors = Family("rag_eval_case_errors", "counter", "Failed cases by error kind")
        self.retries = Family(
            "rag_eval_case_retries", "counter", "Retries of transient target failures"
        )
        self.dataset_reload_errors = Family(
            "rag_eval_dataset_reload_errors",
            "counter",
            "Golden-set reloads rejected as invalid (the previous set kept running)",
        )
        self.report_write_errors = Family(
            "rag_eval_report_write_errors", "counter", "Reports that could not be written"
        )
        self.stage_names_folded = Family(
            "rag_eval_stage_names_folded",
            "counter",
            "Stage timings counted under stage='other': beyond the target's allow-list or cap",
        )
        self.history_errors = Family(
            "rag_eval_history_errors",
            "counter",
            "History store failures by kind (corrupt: moved aside and restarted; locked; io)",
        )
        self.publish_errors = Family(
            "rag_eval_publish_errors",
            "counter",
            "Steps of publishing a run that failed, by step (report, gate, metrics, history);"
            " the run is counted all the same",
        )
        self.slo_events = Family(
            "rag_eval_slo_events",
            "counter",
            "Events of an SLO by outcome (good, bad): the cases of each run its SLI counts",
        )


class _ProcessSeries:
    """The process-wide families, one cell each with no job labels."""

    def __init__(self) -> None:
        self._families()
        self._cells()

    def _families(self) -> None:
        """The families: configuration reloads, the SLOs' objectives and windows, the lone
        surrogates the border replaced."""
        self.config_reloads_family = Family(
            "rag_eval_config_reload",
            "counter",
            "Configuration reloads (SIGHUP) by result; on failure the old configuration runs on",
        )
        self.last_reload_ok_family = Family(
            "rag_eval_config_last_reload_successful",
            "gauge",
            "1 when the last configuration reload succeeded (or none was asked for)",
        )
        self.last_reload_at_family = Family(
            "rag_eval_config_last_reload_success_timestamp_seconds",
            "gauge",
            "When the configuration was last loaded successfully, Unix time",
        )
        self.slo_objective_family = Family(
            "rag_eval_slo_objective",
            "gauge",
            "Share of an SLO's events that must be good over its window (0..1)",
        )
        self.slo_window_family = Family(
            "rag_eval_slo_window_seconds", "gauge", "The rolling window of an SLO, in seconds"
        )
        self.surrogates_family = Family(
            "rag_eval_text_replaced_surrogates",
            "counter",
            "Lone UTF-16 surrogates from outside replaced by U+FFFD (evaluator.border)",
        )

    def _cells(self) -> None:
        """Each family's one cell, at its starting value, added to its family."""
        self.config_reloads = _counter(
            self.config_reloads_family, {}, "result", ("success", "failure")
        )
        self.last_reload_ok = GaugeCell(self.last_reload_ok_family, {})
        self.last_reload_ok.set([((), 1.0)])
        self.last_reload_at = GaugeCell(self.last_reload_at_family, {})
        self.last_reload_at.set([((), time.time())])
        self.surrogates = _counter(self.surrogates_family, {})
        #: the border's count already carried over into ``surrogates``
        self.surrogates_seen = border.surrogates_replaced()
        self.slo_objective = GaugeCell(self.slo_objective_family, {}, ("slo",))
        self.slo_window = GaugeCell(self.slo_window_family, {}, ("slo",))
        for cell in (
            self.slo_objective,
            self.slo_window,
            self.config_reloads,
            self.last_reload_ok,
            self.last_reload_at,
            self.surrogates,
        ):
            cell.family.add((), cell)


def _exposition_order(jobs: _JobFamilies, process: _ProcessSeries) -> list[Family]:
    """Every family in the order /metrics serves them."""
    return [
        jobs.case_latency,
        jobs.ttft,
        jobs.stage_latency,
        jobs.runs,
        jobs.case_errors,
        jobs.retries,
        jobs.dataset_reload_errors,
        jobs.report_write_errors,
        jobs.stage_names_folded,
        process.config_reloads_family,
        process.last_reload_ok_family,
        process.last_reload_at_family,
        jobs.history_errors,
        jobs.publish_errors,
        jobs.slo_events,
        process.slo_objective_family,
        process.slo_window_family,
        process.surrogates_family,
        *jobs.gauges,
        jobs.info,
        *jobs.judge.all(),
    ]


class _Job:
    """One job's cells, one per per-job family, and the snapshot its gauges show."""

    def __init__(self, families: _JobFamilies, bounds: Sequence[float], snapshot: JobSnapshot):
        self.snapshot = snapshot
        self.labels = dict(zip(_JOB_LABELS, snapshot.labels, strict=True))
        labels, f = self.labels, families
        self.case_latency = HistogramCell(f.case_latency, labels, bounds)
        self.case_latency.create()
        self.ttft = HistogramCell(f.ttft, labels, bounds)
        self.stage_latency = HistogramCell(f.stage_latency, labels, bounds, ["stage"])
        self.runs = _counter(f.runs, labels, "outcome", OUTCOMES)
        self.case_errors = _counter(f.case_errors, labels, "kind", ERROR_KINDS)
        self.retries = _counter(f.retries, labels)
        self.dataset_reload_errors = _counter(f.dataset_reload_errors, labels)
        self.report_write_errors = _counter(f.report_write_errors, labels)
        self.stage_names_folded = _counter(f.stage_names_folded, labels)
        self.history_errors = _counter(f.history_errors, labels, "kind", HISTORY_ERROR_KINDS)
        self.publish_errors = _counter(f.publish_errors, labels, "step", PUBLISH_STEPS)
        self.slo_events = CounterCell(f.slo_events, labels, ("slo", "outcome"))
        self.gauges = [
            GaugeCell(family, labels, spec.extra)
            for spec, family in zip(_JOB_GAUGES, f.gauges, strict=True)
        ]
        self.info = GaugeCell(f.info, labels, _INFO_LABELS)
        #: the judge's series, once the job has a judge (:meth:`Metrics.judge_added`)
        self.judge: JudgeCells | None = None
        self.publish()

    @property
    def cells(self) -> tuple[Cell, ...]:
        """Every cell of the job, in the families' order."""
        return (
            self.case_latency,
            self.ttft,
            self.stage_latency,
            self.runs,
            self.case_errors,
            self.retries,
            self.dataset_reload_errors,
            self.report_write_errors,
            self.stage_names_folded,
            self.history_errors,
            self.publish_errors,
            self.slo_events,
            *self.gauges,
            self.info,
            *(self.judge.cells if self.judge is not None else ()),
        )

    def publish(self) -> None:
        """The gauges from the snapshot (only those whose samples differ are re-encoded),
        and the event counters of exactly the snapshot's SLOs (new ones at zero; those of
        an SLO no longer counting the job withdrawn)."""
        job = self.snapshot
        for key in self.slo_events.series():
            if key[0] not in job.slos:
                self.slo_events.discard(key)
        for slo in job.slos:
            for outcome in SLO_OUTCOMES:
                self.slo_events.create((slo, outcome))
        for spec, cell in zip(_JOB_GAUGES, self.gauges, strict=True):
            cell.set(spec.samples(job))
        self.info.set([((__version__, job.config_hash, job.dataset_hash, str(job.k)), 1.0)])

    def judged(self) -> JudgeCells:
        """The job's judge series (raises KeyError for a job without a judge)."""
        if self.judge is None:
            raise KeyError(f"job {tuple(self.labels.values())} has no judge")
        return self.judge


_INFO_LABELS = ("version", "config_hash", "dataset_hash", "k")


class Metrics:
    """The daemon's metrics on one registry (a fresh one per daemon; tests make their own).

    Every change is a named method (a run finished, a case finished, the gate judged, the
    judge answered...); the series live in the exposition's cells, each re-encoded only after
    it changed, and every method runs under one lock, so neither a scrape nor
    ``registry.collect()`` sees half of an update.

    Example::

        metrics = Metrics(registry, buckets=(0.1, 1, 10))
        metrics.add_job(snapshot)
        metrics.case_finished(snapshot.labels, record, run_id="ab12")
        metrics.exposition_body(openmetrics=False)   # what /metrics serves
    """

    def __init__(self, registry: CollectorRegistry, buckets: Sequence[float]) -> None:
        self.registry = registry
        self.lock = threading.RLock()
        #: histogram bucket bounds, ending with +Inf (as prometheus_client adds it)
        self.bounds: tuple[float, ...] = _bounds(buckets)
        self._families = _JobFamilies()
        self._process = _ProcessSeries()
        self.exposition = Exposition(_exposition_order(self._families, self._process))
        self._jobs: dict[Labels, _Job] = {}
        registry.register(_Collector(self))

    def _job(self, labels: Labels) -> _Job:
        job = self._jobs.get(labels)
        if job is None:
            raise KeyError(f"unknown job {labels}")
        return job

    def _replace(self, labels: Labels, **changes: Any) -> None:
        # the one generic update, kept private: callers say what happened, not which fields
        job = self._job(labels)
        job.snapshot = replace(job.snapshot, **changes)
        job.publish()

    def snapshot(self, labels: Labels) -> JobSnapshot | None:
        with self.lock:
            job = self._jobs.get(labels)
            return None if job is None else job.snapshot

    # --- the exposition -------------------------------------------------------------------

    def refresh(self, *, openmetrics: bool, budget_seconds: float) -> bool:
        """Encode what changed since the last scrape, for at most about ``budget_seconds``;
        True when nothing is left (see :meth:`Exposition.refresh`)."""
        with self.lock:
            return self.exposition.refresh(openmetrics=openmetrics, budget_seconds=budget_seconds)

    def exposition_body(self, *, openmetrics: bool) -> bytes:
        """Every evaluation metric, encoded (OpenMetrics without its final ``# EOF``)."""
        with self.lock:
            return self.exposition.body(openmetrics=openmetrics)

    def exposition_parts(self, *, openmetrics: bool) -> list[bytes]:
        """:meth:`exposition_body` family by family, to join once with more."""
        with self.lock:
            return self.exposition.parts(openmetrics=openmetrics)

    # --- the jobs -------------------------------------------------------------------------

    @_changes
    def add_job(self, snapshot: JobSnapshot) -> None:
        """Publish a job and create its counters at zero, so its series exist from start."""
        labels = snapshot.labels
        job = self._jobs.get(labels)
        if job is not None:  # known already: a new snapshot, the same series
            job.snapshot = snapshot
            job.publish()
            return
        job = self._jobs[labels] = _Job(self._families, self.bounds, snapshot)
        for cell in job.cells:
            cell.family.add(labels, cell)

    @_changes
    def job_reconfigured(
        self,
        labels: Labels,
        *,
        k: int,
        config_hash: str,
        dataset_hash: str,
        interval_seconds: float | None,
        baseline: Mapping[str, float],
        slos: tuple[str, ...] = (),
    ) -> None:
        """A reload kept the job: the same series and last results, a new identity (and the
        SLOs now counting it: a kept SLO keeps its counts); its golden set was just read."""
        self._replace(
            labels,
            k=k,
            config_hash=config_hash,
            dataset_hash=dataset_hash,
            interval_seconds=interval_seconds,
            baseline=baseline,
            slos=slos,
            dataset_reload_ok=True,
        )

    @_changes
    def dataset_changed(self, labels: Labels, *, config_hash: str, dataset_hash: str) -> None:
        """The golden set was reloaded with new content."""
        self._replace(labels, config_hash=config_hash, dataset_hash=dataset_hash)

    @_changes
    def remove_job(self, labels: Labels) -> None:
        """Withdraw a job dropped by a reload: its snapshot and every series of it."""
        job = self._jobs.pop(labels, None)
        if job is not None:
            for cell in job.cells:
                cell.family.remove(labels)

    # --- runs and cases -------------------------------------------------------------------

    @_changes
    def case_finished(self, labels: Labels, record: CaseRecord, run_id: str) -> None:
        """Histograms (with a run/case exemplar) and the error counter for one finished case."""
        job = self._job(labels)
        exemplar = _exemplar(run_id, record.case.id, record.trace_id)
        if record.asked:  # a turn skipped after an earlier one failed took no time
            job.case_latency.observe(record.latency_seconds, exemplar)
        if record.ttft_seconds is not None:
            job.ttft.observe(record.ttft_seconds, exemplar)
        for stage, seconds in record.stage_seconds.items():
            job.stage_latency.observe(seconds, exemplar, (stage,))
        outcome = record.outcome
        if isinstance(outcome, CaseError):
            job.case_errors.inc([outcome.kind])
        # the border counts process-wide, off the metrics' lock; carried over once per case
        process = self._process
        replaced = border.surrogates_replaced()
        if replaced != process.surrogates_seen:
            process.surrogates.inc(amount=replaced - process.surrogates_seen)
            process.surrogates_seen = replaced

    @_changes
    def run_finished(
        self,
        labels: Labels,
        *,
        finished_at: float,
        duration_seconds: float,
        error_ratio: float | None,
        config_hash: str | None = None,
        dataset_hash: str | None = None,
        complete: Summary | None = None,
        complete_at: float | None = None,
        gate: GateState | None = None,
    ) -> None:
        """A run ended with a report: the last-run gauges, and, for a complete run (``complete``
        with the time it ended), its summary and the gate's verdict (``gate``: None when no
        gate is configured). One snapshot swap, so a scrape never sees half of it."""
        changes: dict[str, Any] = {
            "last_run_timestamp": finished_at,
            "last_run_duration": duration_seconds,
            "last_error_ratio": error_ratio,
        }
        if config_hash is not None:
            changes["config_hash"] = config_hash
        if dataset_hash is not None:
            changes["dataset_hash"] = dataset_hash
        if complete is not None:
            changes["last_complete"] = complete
            changes["last_complete_timestamp"] = finished_at if complete_at is None else complete_at
        if gate is not None:
            changes["gate_passing"] = gate.passing
            changes["gate_rules_failing"] = gate.rules_failing
        self._replace(labels, **changes)

    @_changes
    def run_broke(self, labels: Labels, *, finished_at: float, duration_seconds: float) -> None:
        """A run ended without a report (it raised or was cancelled): when and how long."""
        self._replace(labels, last_run_timestamp=finished_at, last_run_duration=duration_seconds)

    @_changes
    def run_counted(self, labels: Labels, outcome: str) -> None:
        """Count a run by outcome (``OUTCOMES``), skipped runs included."""
        self._job(labels).runs.inc([outcome])

    @_changes
    def retried(self, labels: Labels) -> None:
        """A transient target failure was retried."""
        self._job(labels).retries.inc()

    @_changes
    def stage_folded(self, labels: Labels) -> None:
        """A stage timing was counted under stage='other'."""
        self._job(labels).stage_names_folded.inc()

    @_changes
    def dataset_reload_failed(self, labels: Labels) -> None:
        """A changed golden set was rejected; the previous one runs on."""
        self._job(labels).dataset_reload_errors.inc()
        self._replace(labels, dataset_reload_ok=False)

    @_changes
    def dataset_reload_accepted(self, labels: Labels) -> None:
        """The golden set's file read and parsed again (changed content or not)."""
        self._replace(labels, dataset_reload_ok=True)

    @_changes
    def report_write_failed(self, labels: Labels) -> None:
        """A run's report could not be written."""
        self._job(labels).report_write_errors.inc()

    @_changes
    def slo_events_counted(self, labels: Labels, events: Mapping[str, Events]) -> None:
        """A run's events of each SLO counting the job, added to its good and bad counters."""
        counter = self._job(labels).slo_events
        for slo, counted in events.items():
            for outcome, amount in zip(SLO_OUTCOMES, (counted.good, counted.bad), strict=True):
                if amount:
                    counter.inc((slo, outcome), amount)

    # --- history and configuration --------------------------------------------------------

    @_changes
    def history_updated(
        self,
        labels: Labels,
        *,
        stability_counts: Mapping[str, int],
        window_runs: int,
        drift: Mapping[str, DriftGauge],
    ) -> None:
        """The history store classed the cases and judged drift after a run (or at start)."""
        self._replace(
            labels,
            stability_counts=stability_counts,
            history_window_runs=window_runs,
            drift=drift,
        )

    @_changes
    def history_failed(self, labels: Labels, kind: str) -> None:
        """Count a history store failure (``HISTORY_ERROR_KINDS``)."""
        self._job(labels).history_errors.inc([kind])

    @_changes
    def publish_failed(self, labels: Labels, step: str) -> None:
        """Count a failed step of publishing a run (``PUBLISH_STEPS``)."""
        self._job(labels).publish_errors.inc([step])

    @_changes
    def slos_configured(self, objectives: Mapping[str, tuple[float, int]]) -> None:
        """Each SLO's objective and window (seconds), by name: the series of exactly these."""
        self._process.slo_objective.set(((name,), o) for name, (o, _) in sorted(objectives.items()))
        self._process.slo_window.set(((name,), w) for name, (_, w) in sorted(objectives.items()))

    @_changes
    def config_reloaded(self, ok: bool) -> None:
        """Count a configuration reload and set the last-reload gauges."""
        process = self._process
        process.config_reloads.inc(["success" if ok else "failure"])
        process.last_reload_ok.set([((), 1.0 if ok else 0.0)])
        if ok:
            process.last_reload_at.set([((), time.time())])

    # --- the judge ------------------------------------------------------------------------

    @_changes
    def judge_added(self, labels: Labels) -> None:
        """The job has a judge: its judge series, the call counters at zero for every outcome
        (kept when the job already had them)."""
        job = self._job(labels)
        if job.judge is not None:
            return
        job.judge = JudgeCells(self._families.judge, job.labels, self.bounds)
        for cell in job.judge.cells:
            cell.family.add(labels, cell)

    @_changes
    def judge_called(
        self,
        labels: Labels,
        *,
        outcome: str,
        seconds: float,
        input_tokens: int | None,
        output_tokens: int | None,
        cost: float | None,
    ) -> None:
        """One judge call: its outcome (``JUDGE_OUTCOMES``), latency, tokens and cost."""
        self._job(labels).judged().called(outcome, seconds, input_tokens, output_tokens, cost)

    @_changes
    def run_judged(
        self,
        labels: Labels,
        *,
        skipped: int,
        cache_hit_ratio: float,
        compromised: bool,
        calibrated: Mapping[str, bool],
        metrics: Mapping[str, float | None],
        votes: Mapping[str, VoteFigures] | None = None,
        canaries: Mapping[CanaryClass, Acceptance] | None = None,
        lenient: bool = False,
    ) -> None:
        """A run was judged: skipped checks, the cache, canaries (compromised, by class,
        lenient), calibration, the judged metrics, and the votes' figures per check."""
        self._job(labels).judged().run_judged(
            skipped=skipped,
            cache_hit_ratio=cache_hit_ratio,
            compromised=compromised,
            calibrated=calibrated,
            metrics=metrics,
            votes=votes,
            canaries=canaries,
            lenient=lenient,
        )

    @_changes
    def judge_drift_checked(
        self,
        labels: Labels,
        outcome: str,
        *,
        agreement: Mapping[str, float | None] | None = None,
        kappa: Mapping[str, float | None] | None = None,
        floors: Mapping[str, float] | None = None,
    ) -> None:
        """A drift check (``ok``, ``bad_labels``, ``error``) and what it measured."""
        self._job(labels).judged().drift_checked(outcome, agreement, kappa, floors)

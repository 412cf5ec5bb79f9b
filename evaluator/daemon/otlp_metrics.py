"""The OTLP span export's own counters on ``/metrics``, read from the installed export.

Process-wide (no job labels): ``rag_eval_otlp_spans_exported_total``,
``rag_eval_otlp_spans_failed_total`` and ``rag_eval_otlp_export_errors_total{kind}`` (failed
requests by kind, each at zero from the start while export is on). Nothing is served while
export is off.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from evaluator.run import otlp

__all__ = ["OtlpCollector"]


class OtlpCollector(Collector):
    """Collects the installed export's counts at each scrape (a few integers, under a lock)."""

    def collect(self) -> Iterable[Metric]:
        spans = otlp.active()
        if spans is None:
            return
        exporter = spans.exporter
        with exporter.lock:
            exported, failed = exporter.exported_spans, exporter.failed_spans
            failures = dict(exporter.failures)
        yield CounterMetricFamily(
            "rag_eval_otlp_spans_exported", "Case and stage spans the collector accepted", exported
        )
        yield CounterMetricFamily(
            "rag_eval_otlp_spans_failed",
            "Case and stage spans lost: their export request failed",
            failed,
        )
        errors = CounterMetricFamily(
            "rag_eval_otlp_export_errors",
            "Failed OTLP export requests by kind (connect, timeout, http_status, ...)",
            labels=["kind"],
        )
        for kind in otlp.FAILURE_KINDS:
            errors.add_metric([kind], failures.get(kind, 0))
        yield errors

"""``--pushgateway URL``: push the verdict and the candidate's summary for release dashboards.

A fresh :class:`~prometheus_client.CollectorRegistry` per push (never the global one)
and ``push_to_gateway`` (PUT: the group is replaced, so a rule removed from the gates file
disappears too). Grouping key ``job="rag_eval_gate", dataset=<golden set>, target=<target>``:
two targets gated on one golden set keep a verdict each; no commit, branch or instance label,
so the groups do not grow with every build.

Every series pushed is named ``rag_eval_ci_gate_*``, none a name the daemon exports: a
Prometheus scraping the Pushgateway (``honor_labels: true``) beside the daemon then holds the
CI verdict and the daemon's as different series, and the daemon's alerts
(``RagEvalGateFailing`` on ``rag_eval_gate_passing``, the quality alerts) never fire on a
candidate the gate judged.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

from evaluator.errors import PushError
from evaluator.gate.verdict import GateResult
from evaluator.metrics import METRICS

__all__ = ["GATE_JOB", "PREFIX", "SUMMARY_GAUGES", "PushError", "build_registry", "push_result"]

GATE_JOB = "rag_eval_gate"
#: the prefix of every pushed series' name
PREFIX = "rag_eval_ci_gate_"

#: (summary metric, gauge name after ``rag_eval_ci_gate_candidate_``, help) of the values pushed;
#: the suffixes are the daemon's names, from the registry.
SUMMARY_GAUGES: tuple[tuple[str, str, str], ...] = tuple(
    (spec.name, spec.pushed_as, spec.description) for spec in METRICS if spec.pushed_as is not None
)


def build_registry(result: GateResult) -> CollectorRegistry:
    """A new registry holding the verdict, each rule's outcome and the candidate summary."""
    registry = CollectorRegistry()
    target = result.candidate.target

    def gauge(name: str, help_text: str, value: float) -> None:
        one = Gauge(f"{PREFIX}{name}", help_text, ["target"], registry=registry)
        one.labels(target).set(value)

    gauge("passing", "1 when the candidate passed the release gate, else 0", result.passed)
    rule_passing = Gauge(
        f"{PREFIX}rule_passing",
        "1 when the rule passed (or was not applicable), else 0",
        ["target", "rule"],
        registry=registry,
    )
    for r in result.rules:
        rule_passing.labels(target, r.name).set(1 if r.passed else 0)
    gauge("failed_rules", "Rules the candidate failed", len(result.failures))
    gauge(
        "missing_cases", "Baseline cases absent from the candidate report", len(result.missing_ids)
    )
    summary = result.candidate_summary
    for metric, suffix, help_text in SUMMARY_GAUGES:
        value = summary.get(metric)
        if value is not None:  # no sample rather than a made-up 0 or NaN
            gauge(f"candidate_{suffix}", f"Candidate {help_text} judged by the release gate", value)
    return registry


def push_result(url: str, result: GateResult, *, timeout: float = 10.0) -> None:
    """PUT the gate's metrics to the Pushgateway at ``url``.

    Raises:
        PushError: unreachable gateway or a non-2xx answer (one line).
    """
    grouping: dict[str, Any] = {
        "dataset": result.candidate.dataset,
        "target": result.candidate.target,
    }
    try:
        push_to_gateway(
            url,
            job=GATE_JOB,
            registry=build_registry(result),
            grouping_key=grouping,
            timeout=timeout,
        )
    except (OSError, ValueError) as exc:  # URLError, IOError on a non-2xx status, bad URL
        reason = getattr(exc, "reason", None) or exc
        raise PushError(f"cannot push to the Pushgateway at {url}: {reason}") from exc

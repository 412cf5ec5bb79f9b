"""Paths and helpers shared by the deploy/ tests (fixtures are in conftest.py)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
RULES_DIR = DEPLOY / "prometheus" / "rules"
RULE_FILES = sorted(RULES_DIR.glob("*.yml"))
RULE_TESTS = sorted((DEPLOY / "prometheus" / "tests").glob("*.yml"))
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "rag-evaluator.json"
RUNBOOK = DEPLOY / "RUNBOOK.md"

#: The scrape job name the alert rules select (deploy/prometheus/prometheus.yml and the
#: Kubernetes Service name, which the Prometheus Operator uses as the job label).
SCRAPE_JOB = "rag-evaluator"


def load_yaml(path: Path) -> Any:
    """The YAML document of ``path``."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_yaml_all(path: Path) -> list[Any]:
    """Every non-empty YAML document of ``path``."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def alerting_rules() -> list[dict[str, Any]]:
    """Every alerting rule of deploy/prometheus/rules/*.yml."""
    return [
        rule
        for path in RULE_FILES
        for group in load_yaml(path)["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def recording_rules() -> list[dict[str, Any]]:
    """Every recording rule of deploy/prometheus/rules/*.yml."""
    return [
        rule
        for path in RULE_FILES
        for group in load_yaml(path)["groups"]
        for rule in group["rules"]
        if "record" in rule
    ]


def run_promtool(promtool: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run promtool; the caller asserts on the return code and shows the output on failure."""
    return subprocess.run(
        [promtool, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# The metric contract (docs/daemon.md and the daemon's exporter): every
# name the rules and the dashboard may use, with the allowed values of enumerated labels.
QUALITY_METRICS = (
    "recall_at_k",
    "mrr",
    "ndcg_at_k",
    "citation_precision",
    "citation_recall",
    "answer_accuracy",
)
#: every quality ratio of a report has a gauge, a baseline overlay and a shard sum and count
GAUGED_RATIOS = (*QUALITY_METRICS, "fact_recall", "false_refusal_rate", "correct_refusal_rate")
SHARDED_METRICS = (*GAUGED_RATIOS, "error_ratio")
#: a golden set with conversations adds these (docs/daemon.md), sharded like the rest
CONVERSATION_RATIOS = ("conversation_success",)
TURN_POSITIONS = ("1", "2", "3", "4+")
OUTCOMES = ("complete", "incomplete", "failed", "skipped")
ERROR_KINDS = (
    "timeout",
    "connect",
    "http_status",
    "bad_response",
    "response_too_large",
    "out_of_memory",
    "stream_interrupted",
    "target_exception",
    "skipped_after_error",
)
GATE_RULES = (*QUALITY_METRICS, "p95_seconds", "error_rate")
# the history store's verdicts (docs/history.md), written out literally like the rest
STABILITY_CLASSES = (
    "stable_pass",
    "stable_fail",
    "flaky",
    "newly_failing",
    "recovered",
    "insufficient",
)
DRIFT_CHECKS = ("answer", "hit", "mrr", "ndcg_at_k", "citation_precision")
#: the LLM judge's checks, judged summary metrics and call outcomes (docs/judge.md)
JUDGE_CHECKS = ("fact_support", "groundedness", "refusal")
JUDGED_RATIOS = (
    "judged_fact_recall",
    "judged_answer_accuracy",
    "judged_faithfulness",
    "judged_refusal_rate",
)
JUDGE_OUTCOMES = (
    "ok",
    "judge_timeout",
    "judge_connect",
    "judge_http_status",
    "judge_too_large",
    "judge_malformed",
)

CONTRACT: dict[str, dict[str, tuple[str, ...]]] = {
    **{f"rag_eval_{metric}": {} for metric in GAUGED_RATIOS},
    "rag_eval_latency_p50_seconds": {},
    "rag_eval_latency_p95_seconds": {},
    "rag_eval_shards": {},
    "rag_eval_last_run_scored_cases": {},
    "rag_eval_error_ratio": {},
    "rag_eval_case_latency_seconds": {},
    "rag_eval_stage_latency_seconds": {},
    "rag_eval_runs_total": {"outcome": OUTCOMES},
    "rag_eval_case_errors_total": {"kind": ERROR_KINDS},
    "rag_eval_case_retries_total": {},
    "rag_eval_dataset_reload_errors_total": {},
    "rag_eval_report_write_errors_total": {},
    "rag_eval_last_run_timestamp_seconds": {},
    "rag_eval_last_complete_run_timestamp_seconds": {},
    "rag_eval_run_duration_seconds": {},
    "rag_eval_run_interval_seconds": {},
    "rag_eval_gate_passing": {},
    "rag_eval_gate_rule_failing": {"rule": GATE_RULES},
    "rag_eval_baseline_ratio": {"metric": (*GAUGED_RATIOS, *CONVERSATION_RATIOS)},
    "rag_eval_job_info": {},
    "rag_eval_stability_cases": {"class": STABILITY_CLASSES},
    "rag_eval_history_window_runs": {},
    "rag_eval_drift_shift": {"check": DRIFT_CHECKS},
    "rag_eval_drift_significant": {"check": DRIFT_CHECKS},
    # the LLM judge's own series (docs/judge.md): tests/deploy/test_grafana_dashboard.py holds
    # these names and label values to what the daemon's JudgeMetrics registers
    **{f"rag_eval_{m}": {} for m in JUDGED_RATIOS},
    "rag_eval_judge_calls_total": {"outcome": JUDGE_OUTCOMES},
    "rag_eval_judge_call_seconds": {},
    "rag_eval_judge_tokens_total": {"direction": ("input", "output")},
    "rag_eval_judge_cost_total": {},
    "rag_eval_judge_skipped_total": {},
    "rag_eval_judge_cache_hit_ratio": {},
    "rag_eval_judge_compromised": {},
    "rag_eval_judge_calibrated": {"check": JUDGE_CHECKS},
    "rag_eval_judge_agreement": {"check": JUDGE_CHECKS},
    "rag_eval_judge_kappa": {"check": JUDGE_CHECKS},
    "rag_eval_judge_agreement_floor": {"check": JUDGE_CHECKS},
    "rag_eval_judge_drift_checks_total": {"outcome": ("ok", "error", "bad_labels")},
    "rag_eval_drift_cases": {"check": ("answer", "hit"), "direction": ("drop", "rise")},
    "rag_eval_history_errors_total": {"kind": ("corrupt", "locked", "io")},
    "rag_eval_quality_numerator": {"metric": (*SHARDED_METRICS, *CONVERSATION_RATIOS)},
    "rag_eval_quality_denominator": {"metric": (*SHARDED_METRICS, *CONVERSATION_RATIOS)},
    "rag_eval_conversation_success": {},
    "rag_eval_conversation_latency_p95_seconds": {},
    "rag_eval_quality_by_position": {"metric": GAUGED_RATIOS, "position": TURN_POSITIONS},
}
HISTOGRAMS = (
    "rag_eval_case_latency_seconds",
    "rag_eval_stage_latency_seconds",
    "rag_eval_judge_call_seconds",
)

_NAME = re.compile(r"\brag_eval[_:][a-z0-9_:]*")
_SELECTOR = re.compile(r"\b(rag_eval[_:][a-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')


def metric_names(expr: str) -> set[str]:
    """The rag_eval names an expression reads, histogram suffixes folded onto the family."""
    names = set()
    for name in _NAME.findall(expr):
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name.removesuffix(suffix) in HISTOGRAMS:
                name = name.removesuffix(suffix)
        names.add(name)
    return names


def contract_problems(expr: str, recorded: AbstractSet[str] = frozenset()) -> list[str]:
    """Names outside the contract (or ``recorded``), and enumerated label values it lacks."""
    problems = [
        f"unknown metric {name}"
        for name in sorted(metric_names(expr))
        if name not in CONTRACT and name not in recorded
    ]
    for name, matchers in _SELECTOR.findall(expr):
        allowed = CONTRACT.get(metric_names(name).pop(), {})
        for label, op, value in _MATCHER.findall(matchers):
            if label not in allowed or op not in ("=", "=~"):
                continue
            values = value.split("|") if op == "=~" else [value]
            problems += [
                f"{name}: {label}={v!r} is not one of {allowed[label]}"
                for v in values
                if v not in allowed[label]
            ]
    return problems

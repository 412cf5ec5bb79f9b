"""The Prometheus configuration, recording and alerting rules of deploy/prometheus/.

promtool checks and unit-tests them (tests marked ``prometheus``); the other tests read the
YAML: every alert has its severity, annotations and runbook section, a unit test that sees
it fire and one that sees it stay quiet, and reads only metrics of the contract.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.deploy.deploy_support import (
    DEPLOY,
    RULE_FILES,
    RULE_TESTS,
    RUNBOOK,
    SCRAPE_JOB,
    SLO_RULES,
    alerting_rules,
    contract_problems,
    load_yaml,
    recording_rules,
    run_promtool,
)

PROMETHEUS_YML = DEPLOY / "prometheus" / "prometheus.yml"
SEVERITIES = {"critical", "warning"}
# Counters move once per run (default every 15 min): windows must span several runs.
_RANGE = re.compile(r"\b(rate|increase|irate|delta|idelta)\s*\((?:[^()\[]|\([^()]*\))*\[(\w+)\]")
_DURATION = re.compile(r"^(\d+)([smhdw])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _seconds(duration: str) -> int:
    match = _DURATION.match(duration)
    assert match, f"unexpected duration {duration!r}"
    return int(match[1]) * _SECONDS[match[2]]


def _runbook_anchors() -> set[str]:
    """GitHub's anchors of the runbook's second-level headings."""
    text = RUNBOOK.read_text(encoding="utf-8")
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^## (.+)$", text, re.M)
    }


def _unit_test_cases() -> list[tuple[Path, dict[str, object]]]:
    return [
        (path, case)
        for path in RULE_TESTS
        for group in load_yaml(path)["tests"]
        for case in group.get("alert_rule_test", [])
    ]


def _generator_default_base() -> str:
    path = DEPLOY / "k8s" / "generate_prometheusrule.py"
    spec = importlib.util.spec_from_file_location("generate_prometheusrule", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.DEFAULT_RUNBOOK_BASE)


RUNBOOK_BASE = _generator_default_base()
ALERTS = alerting_rules()
ALERT_NAMES = [rule["alert"] for rule in ALERTS]


def test_rule_files_exist() -> None:
    """The alert and recording rule files, the SLOs' generated rules and their promtool unit
    tests are shipped."""
    names = {path.name for path in RULE_FILES}
    assert {"alerts.yml", "recording.yml", "slo.yml"} <= names
    assert RULE_TESTS, "no promtool unit tests in deploy/prometheus/tests"


@pytest.mark.e2e
@pytest.mark.prometheus
def test_rules_pass_promtool_check_with_lint(promtool: str) -> None:
    """The rules pass promtool's check with every lint fatal."""
    result = run_promtool(promtool, "check", "rules", "--lint=all", "--lint-fatal", *RULE_FILES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.e2e
@pytest.mark.prometheus
def test_prometheus_config_passes_promtool_check(promtool: str) -> None:
    """prometheus.yml is valid and its rule_files glob finds every rule file."""
    result = run_promtool(promtool, "check", "config", PROMETHEUS_YML)
    assert result.returncode == 0, result.stdout + result.stderr
    for path in RULE_FILES:
        assert f"Checking {PROMETHEUS_YML.parent / 'rules' / path.name}" in result.stdout or (
            f"rules/{path.name}" in result.stdout
        ), f"{path.name} is not loaded by prometheus.yml:\n{result.stdout}"


@pytest.mark.e2e
@pytest.mark.prometheus
@pytest.mark.parametrize("test_file", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_unit_tests_pass(promtool: str, test_file: Path) -> None:
    """Each promtool unit test of the rules passes."""
    result = run_promtool(promtool, "test", "rules", test_file)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_unit_tests_load_the_shipped_rule_files() -> None:
    """The unit tests load the shipped rule files, not copies."""
    for path in RULE_TESTS:
        loaded = {(path.parent / name).resolve() for name in load_yaml(path)["rule_files"]}
        assert loaded == {p.resolve() for p in RULE_FILES}, path.name


def test_unit_tests_evaluate_recording_rules_first() -> None:
    """promtool evaluates unordered groups in random order: alerts would sometimes read the
    previous step's recorded values (a flaky test). Every group must be ordered, recording
    first."""
    groups = [g["name"] for p in RULE_FILES for g in load_yaml(p)["groups"]]
    recording = [
        g["name"]
        for p in RULE_FILES
        for g in load_yaml(p)["groups"]
        if all("record" in r for r in g["rules"])
    ]
    for path in RULE_TESTS:
        order = load_yaml(path).get("group_eval_order", [])
        assert sorted(order) == sorted(groups), path.name
        assert order[: len(recording)] == recording, path.name


@pytest.mark.parametrize("alert", ALERT_NAMES)
def test_every_alert_is_unit_tested_firing_and_quiet(alert: str) -> None:
    """promtool 2.42 has no --coverage: count the cases that fire and that stay quiet."""
    cases = [case for _, case in _unit_test_cases() if case["alertname"] == alert]
    assert any(case.get("exp_alerts") for case in cases), f"{alert}: no test sees it fire"
    assert any(not case.get("exp_alerts") for case in cases), f"{alert}: no test sees it quiet"


def test_unit_tests_name_only_existing_alerts() -> None:
    """The unit tests name only alerts the rules define."""
    tested = {case["alertname"] for _, case in _unit_test_cases()}
    assert tested <= set(ALERT_NAMES), tested - set(ALERT_NAMES)


def test_alert_names_are_unique_and_prefixed() -> None:
    """Alert names are unique and start with RagEval; the SLOs' generated alerts are one
    rule per SLO and window pair, told apart by their labels."""
    written = [rule["alert"] for rule in alerting_rules([p for p in RULE_FILES if p != SLO_RULES])]
    assert len(written) == len(set(written))
    assert all(re.fullmatch(r"RagEval[A-Z][A-Za-z0-9]+", name) for name in ALERT_NAMES)
    generated = [
        (r["alert"], r["labels"]["slo"], r["labels"]["long_window"])
        for r in alerting_rules([SLO_RULES])
    ]
    assert len(generated) == len(set(generated))
    assert {"RagEvalSLOFastBurn", "RagEvalSLOSlowBurn"} == {name for name, _, _ in generated}


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_alert_has_severity_and_annotations(rule: dict[str, object]) -> None:
    """Every alert has a severity, a summary, a description and a runbook URL."""
    labels = rule["labels"]
    annotations = rule["annotations"]
    assert isinstance(labels, dict) and isinstance(annotations, dict)
    assert labels["severity"] in SEVERITIES
    for key in ("summary", "description", "runbook_url"):
        assert str(annotations.get(key, "")).strip(), f"{rule['alert']}: no {key}"
    assert "\n" not in annotations["summary"], "a summary is one line"


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_runbook_url_is_absolute_and_points_at_the_alerts_section(rule: dict[str, object]) -> None:
    """A repository path cannot be opened from Slack or PagerDuty: an absolute URL on the
    generator's configurable base (by default the daemon's own runbook page), with the
    alert's section as anchor."""
    url = str(rule["annotations"]["runbook_url"])  # type: ignore[index]
    base, _, anchor = url.partition("#")
    assert urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc
    assert base == RUNBOOK_BASE
    assert anchor == str(rule["alert"]).lower()
    assert anchor in _runbook_anchors(), f"RUNBOOK.md has no section ## {rule['alert']}"


def test_runbook_sections_match_the_alerts() -> None:
    """The runbook has one section per alert, and none for an alert that does not exist."""
    headings = set(re.findall(r"^## (RagEval\w+)$", RUNBOOK.read_text(encoding="utf-8"), re.M))
    assert headings == set(ALERT_NAMES)


def test_runbook_carries_the_decision_table() -> None:
    """The runbook carries the table from what moved to where to look."""
    text = RUNBOOK.read_text(encoding="utf-8")
    for row in (
        "| recall down, MRR down | parsing, chunking, retrieval",
        "| recall flat, MRR down | fusion or rerank",
        "| retrieval flat, accuracy down | prompt, model, context assembly",
        "| accuracy flat, citation precision down | citation protocol",
        "| quality up, P95 or cost doubled | a product trade-off",
    ):
        assert row in text
    for command in ("evaluator run", "evaluator gate", "run_id", "case_id"):
        assert command in text


def test_rules_read_only_contract_metrics() -> None:
    """The rules read only the exporter's contract metrics and their own recorded series."""
    recorded = {rule["record"] for rule in recording_rules()}
    for rule in recording_rules() + ALERTS:
        name = rule.get("alert") or rule.get("record")
        exprs = [rule["expr"], *rule.get("annotations", {}).values()]
        problems = [p for expr in exprs for p in contract_problems(str(expr), recorded)]
        assert not problems, f"{name}: {problems}"


def test_recorded_names_follow_the_colon_convention() -> None:
    """Recorded series are named level:metric:operation."""
    for rule in recording_rules():
        assert re.fullmatch(r"rag_eval:[a-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]


def test_quality_is_aggregated_as_sums_not_mean_of_means() -> None:
    """The recorded quality ratio divides summed totals, never averages the shards' ratios."""
    (ratio,) = [r for r in recording_rules() if r["record"] == "rag_eval:quality:ratio"]
    expr = " ".join(ratio["expr"].split())
    assert "sum by (target, dataset, metric) (rag_eval_quality_numerator)" in expr
    assert "sum by (target, dataset, metric) (rag_eval_quality_denominator)" in expr
    assert "avg" not in expr


_HAND_WRITTEN = [p for p in RULE_FILES if p != SLO_RULES]


@pytest.mark.parametrize(
    "rule",
    recording_rules(_HAND_WRITTEN) + alerting_rules(_HAND_WRITTEN),
    ids=lambda r: r.get("alert") or r.get("record"),
)
def test_counter_windows_span_several_runs(rule: dict[str, str]) -> None:
    """Counter windows span at least an hour (several runs): one run cannot fire an alert.
    (The SLOs' generated windows hold two runs of their jobs: tests/deploy/test_slo_rules.py.)"""
    for function, window in _RANGE.findall(rule["expr"]):
        assert _seconds(window) >= 3600, f"{function}(...[{window}]) moves once per run"


def test_drift_alerts_read_the_exact_test_and_a_minimum_sample() -> None:
    """The drop alerts follow the daemon's paired test, not a fixed distance from the past;
    the test itself needs several runs, and the alert outlives it by an hour."""
    drops = [rule for rule in ALERTS if rule["alert"].endswith("Drop")]
    assert len(drops) == 4
    for rule in drops:
        assert "rag_eval_drift_significant{check=" in rule["expr"]
        assert "rag_eval:scored_cases:sum >= 30" in rule["expr"]
        assert "avg7d" not in rule["expr"] and "0.05" not in rule["expr"]
        assert _seconds(rule["keep_firing_for"]) >= 3600


def test_availability_alerts_select_the_scrape_job() -> None:
    """The availability alerts select the scrape job the Prometheus config defines."""
    config = load_yaml(PROMETHEUS_YML)
    jobs = {job["job_name"] for job in config["scrape_configs"]}
    assert SCRAPE_JOB in jobs
    selected = {m for rule in ALERTS for m in re.findall(r'job="([^"]+)"', rule["expr"])}
    assert selected == {SCRAPE_JOB}


def test_prometheus_config_loads_rules_and_alertmanager() -> None:
    """The Prometheus config loads the rules folder and sends to the Alertmanager."""
    config = load_yaml(PROMETHEUS_YML)
    assert config["rule_files"] == ["rules/*.yml"]
    (alertmanager,) = config["alerting"]["alertmanagers"]
    assert alertmanager["static_configs"][0]["targets"] == ["alertmanager:9093"]

"""Static checks of the Grafana dashboard and its provisioning (deploy/grafana/).

The conventions are grafana/dashboard-linter's, re-implemented: one `datasource` variable
used by every panel, a title, description and unit on every panel. Every query, variables
substituted, must parse (promtool, as recording rules) and read only contract metrics.
"""

from __future__ import annotations

import importlib.util
import json
import re
from typing import Any

import pytest

from tests.deploy.dashboard_queries import (
    DEFAULT_SUBSTITUTIONS,
    dashboard_queries,
    iter_panels,
    substitute,
)
from tests.deploy.deploy_support import (
    CONVERSATION_RATIOS,
    DASHBOARD,
    DEPLOY,
    GAUGED_RATIOS,
    contract_problems,
    load_yaml,
    recording_rules,
    run_promtool,
)

DS = {"type": "prometheus", "uid": "${datasource}"}
_WINDOW = re.compile(r"\[([^\]]+)\]")


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _panels() -> list[dict[str, Any]]:
    return [p for p in iter_panels(_dashboard()) if p["type"] != "row"]


def _exprs(panel: dict[str, Any]) -> list[str]:
    return [t["expr"] for t in panel["targets"]]


def _variables() -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in _dashboard()["templating"]["list"]}


def _panel(title: str) -> dict[str, Any]:
    (panel,) = [p for p in _panels() if p["title"] == title]
    return panel


PANEL_TITLES = [p["title"] for p in _panels()]


def test_dashboard_identity() -> None:
    """The dashboard's uid and title are fixed, and it has no id (provisioning updates it)."""
    dashboard = _dashboard()
    assert dashboard["uid"] == "rag-evaluator"
    assert dashboard["id"] is None
    assert dashboard["title"] == "RAG evaluator"
    assert isinstance(dashboard["schemaVersion"], int)
    assert dashboard["tags"]


def test_panel_titles_and_ids_are_unique() -> None:
    """No two panels share a title or an id."""
    assert len(PANEL_TITLES) == len(set(PANEL_TITLES))
    ids = [p["id"] for p in iter_panels(_dashboard())]
    assert len(ids) == len(set(ids))


def test_one_datasource_variable() -> None:
    """One datasource variable, of Prometheus."""
    variables = _variables()
    datasources = [v for v in variables.values() if v["type"] == "datasource"]
    assert [v["name"] for v in datasources] == ["datasource"]
    assert datasources[0]["query"] == "prometheus"
    assert datasources[0]["label"] == "Data Source"


@pytest.mark.parametrize("name", ["target", "dataset"])
def test_query_variables_list_jobs(name: str) -> None:
    """The target and dataset variables are multi-value queries of the job info series."""
    variable = _variables()[name]
    assert variable["type"] == "query"
    assert variable["datasource"] == DS
    assert variable["multi"] is True
    assert variable["includeAll"] is True
    assert variable["allValue"] == ".*"
    query = variable["query"]["query"]
    assert re.fullmatch(rf"label_values\(rag_eval_job_info(\{{.*\}})?, {name}\)", query), query
    assert variable["definition"] == query


def test_dataset_choices_follow_the_target() -> None:
    """The dataset choices are those of the chosen targets."""
    assert 'target=~"$target"' in _variables()["dataset"]["query"]["query"]


@pytest.mark.parametrize("title", PANEL_TITLES)
def test_panel_has_title_description_unit_and_datasource(title: str) -> None:
    """Every panel has a title, a description, a unit and the datasource variable."""
    panel = _panel(title)
    assert panel["description"].strip()
    assert panel["fieldConfig"]["defaults"]["unit"]
    assert panel["datasource"] == DS
    assert panel["targets"], "a panel without a query"
    for target in panel["targets"]:
        assert target["datasource"] == DS
        assert target["expr"].strip()


@pytest.mark.parametrize("title", PANEL_TITLES)
def test_panel_unit_matches_what_it_shows(title: str) -> None:
    """Seconds in s, 0..1 ratios in percentunit."""
    panel = _panel(title)
    unit = panel["fieldConfig"]["defaults"]["unit"]
    exprs = " ".join(_exprs(panel))
    if re.search(r"quality_(numerator|denominator)|baseline_ratio|error_ratio", exprs):
        assert unit == "percentunit"
    elif "/ max by (target, dataset) (rag_eval_run_interval_seconds" in exprs:
        assert unit == "none"  # a number of intervals
    elif re.search(r"_seconds\b|_seconds_bucket|time\(\)", exprs):
        assert unit == "s"


@pytest.mark.parametrize("title", PANEL_TITLES)
def test_panel_queries_filter_on_the_variables(title: str) -> None:
    """Every panel query selects on the target and dataset variables."""
    for expr in _exprs(_panel(title)):
        for selector in re.findall(r"rag_eval_\w+\{([^}]*)\}", expr):
            assert 'target=~"$target"' in selector and 'dataset=~"$dataset"' in selector, expr
        assert not re.search(r"\brag_eval_\w+(?!\w|\{)", expr), f"unfiltered selector: {expr}"


@pytest.mark.parametrize("title", PANEL_TITLES)
def test_rate_windows_are_fixed_and_span_several_runs(title: str) -> None:
    """Counters move once per run: no $__rate_interval, [1h] or longer."""
    for expr in _exprs(_panel(title)):
        assert "$__rate_interval" not in expr and "$__interval" not in expr
        for window in _WINDOW.findall(expr):
            assert window in ("1h", "2h", "6h", "1d"), f"[{window}] in {expr}"


@pytest.mark.parametrize("metric", [*GAUGED_RATIOS, *CONVERSATION_RATIOS])
def test_each_quality_metric_has_a_panel_with_its_baseline(metric: str) -> None:
    """Each quality metric has one panel that shows it beside its baseline (its turns by
    position are drawn apart, in the conversation row)."""
    panels = [
        p
        for p in _panels()
        if any(f'metric="{metric}"' in e and "by_position" not in e for e in _exprs(p))
    ]
    assert len(panels) == 1, f"{metric}: {[p['title'] for p in panels]}"
    exprs = _exprs(panels[0])
    assert any(
        "rag_eval_quality_numerator" in e and "rag_eval_quality_denominator" in e for e in exprs
    ), "the ratio must be sum(numerator) / sum(denominator), right across shards"
    assert any("rag_eval_baseline_ratio" in e for e in exprs), "no baseline overlay"
    assert panels[0]["fieldConfig"]["defaults"]["max"] == 1


@pytest.mark.parametrize("metric", ["answer_accuracy", "recall_at_k"])
def test_follow_ups_are_drawn_beside_first_turns(metric: str) -> None:
    """The conversation row draws a ratio by turn position, one series per position, and
    names the alert that reads it."""
    panels = [
        p
        for p in _panels()
        if any("rag_eval_quality_by_position" in e and f'metric="{metric}"' in e for e in _exprs(p))
    ]
    assert 1 == len(panels)
    (target,) = panels[0]["targets"]
    assert "max by (target, dataset, position)" in target["expr"]
    assert "{{position}}" in target["legendFormat"]
    assert "RagEvalFollowUpsLoseContext" in panels[0]["description"]


def test_latency_panels_come_from_the_histograms() -> None:
    """Latency panels are quantiles of the histograms, summed by le (not averages of quantiles)."""
    case = " ".join(_exprs(_panel("Case latency P50 / P95")))
    assert "histogram_quantile(0.95, sum by (target, dataset, le) (rate(" in case
    assert "histogram_quantile(0.5, sum by (target, dataset, le) (rate(" in case
    assert "rag_eval_case_latency_seconds_bucket" in case
    stage = " ".join(_exprs(_panel("P95 by stage")))
    assert "sum by (target, dataset, stage, le)" in stage
    assert "rag_eval_stage_latency_seconds_bucket" in stage


@pytest.mark.parametrize(
    ("title", "needle"),
    [
        (
            "Case errors by kind",
            "sum by (target, dataset, kind) (increase(rag_eval_case_errors_total",
        ),
        ("Runs by outcome", "sum by (target, dataset, outcome) (increase(rag_eval_runs_total"),
        ("Gate status", "rag_eval_gate_passing"),
        ("Gate rules failing", "rag_eval_gate_rule_failing"),
        ("Time since last complete run", "time() - max by (target, dataset) (rag_eval_last_"),
        ("Error ratio, last run", "rag_eval_error_ratio"),
        ("Evaluation jobs", "rag_eval_job_info"),
        ("SLO budget remaining", 'rag_eval:slo_error_budget_remaining:ratio{slo=~"$slo"}'),
        ("SLO burn rate by window", "max by (slo, window) (rag_eval:slo_burn_rate:ratio{"),
        (
            "SLO events",
            "sum by (target, dataset, slo, outcome) (increase(rag_eval_slo_events_total",
        ),
        (
            "Time to first token P50 / P95",
            "histogram_quantile(0.95, sum by (target, dataset, le) (rate(rag_eval_ttft_seconds_",
        ),
        ("Time to first token P50 / P95", "rag_eval_ttft_p95_seconds"),
        ("Tokens per run", "rag_eval_run_input_tokens"),
        ("Tokens per run", "rag_eval_run_output_tokens"),
        ("Cost per run and per case", "rag_eval_run_cost"),
        ("Cost per run and per case", "rag_eval_case_cost_mean"),
    ],
)
def test_required_panel_exists(title: str, needle: str) -> None:
    """The panels an operator needs exist and read the series they are about."""
    assert any(needle in e for p in _panels() if p["title"] == title for e in _exprs(p)), title


def test_alert_descriptions_name_existing_panels() -> None:
    """Alert texts point on-call at panels by title: those must exist."""
    alerts = (DEPLOY / "prometheus" / "rules" / "alerts.yml").read_text(encoding="utf-8")
    for title in re.findall(r'dashboard "([^"]+)"', alerts):
        assert title in PANEL_TITLES


def test_panels_do_not_overlap() -> None:
    """Panels fit the 24-column grid and no two overlap."""
    cells: dict[tuple[int, int], str] = {}
    for panel in iter_panels(_dashboard()):
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def test_queries_read_only_contract_metrics() -> None:
    """Every query reads only metric names the exporter's contract has, or the series the
    shipped rules record (the SLO row reads the generated SLO rules')."""
    recorded = {rule["record"] for rule in recording_rules()}
    for title, expr in dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS):
        problems = contract_problems(expr, recorded)
        assert not problems, (title, problems)


def test_helper_returns_every_panel_query_and_variable_substituted() -> None:
    """The query helper yields every panel query and variable, variables substituted."""
    queries = dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS)
    panel_exprs = sum(len(p["targets"]) for p in _panels())
    assert len(queries) == panel_exprs + 3
    assert ("variable target", "count by (target) (rag_eval_job_info)") in queries
    assert (
        "variable dataset",
        'count by (dataset) (rag_eval_job_info{target=~".*"})',
    ) in queries
    for title, expr in queries:
        assert "$" not in expr and "[[" not in expr, (title, expr)


def test_helper_substitutes_fixture_values_and_refuses_unknown_variables() -> None:
    """The helper substitutes given values and refuses a variable it does not know."""
    values = {**DEFAULT_SUBSTITUTIONS, "target": "reference", "dataset": "rag_cases"}
    queries = dict(dashboard_queries(DASHBOARD, values))
    assert 'target=~"reference", dataset=~"rag_cases"' in queries["Error ratio, last run"]
    assert substitute("x{a=~'${target:regex}'}[[dataset]]$1", values) == (
        "x{a=~'reference'}rag_cases$1"
    )
    with pytest.raises(KeyError, match="job"):
        substitute('up{job=~"$job"}', values)


@pytest.mark.e2e
@pytest.mark.prometheus
def test_every_query_parses(promtool: str, tmp_path: Any) -> None:
    """promtool parses each query as a recording rule: a PromQL check without a server."""
    queries = dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS)
    rules = {
        "groups": [
            {
                "name": "dashboard-queries",
                "rules": [
                    {"record": f"dashboard:query_{i}:check", "expr": expr}
                    for i, (_, expr) in enumerate(queries)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(json.dumps(rules), encoding="utf-8")
    result = run_promtool(promtool, "check", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(queries)} rules found" in result.stdout


def test_provisioned_datasource_is_the_compose_prometheus() -> None:
    """The provisioned datasource is the compose Prometheus, by the uid the dashboard uses."""
    provisioning = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")
    assert provisioning["apiVersion"] == 1
    (datasource,) = provisioning["datasources"]
    assert datasource["type"] == "prometheus"
    assert datasource["url"] == "http://prometheus:9090"
    scrape = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")["global"]["scrape_interval"]
    assert datasource["jsonData"]["timeInterval"] == scrape


def test_dashboard_provider_loads_the_dashboards_folder() -> None:
    """The dashboard provider loads the shipped dashboards folder."""
    provisioning = load_yaml(
        DEPLOY / "grafana" / "provisioning" / "dashboards" / "rag-evaluator.yml"
    )
    assert provisioning["apiVersion"] == 1
    (provider,) = provisioning["providers"]
    assert provider["type"] == "file"
    compose = load_yaml(DEPLOY / "docker-compose.yml")
    mounts = compose["services"]["grafana"]["volumes"]
    assert f"./grafana/dashboards:{provider['options']['path']}:ro" in mounts


def test_runbook_names_existing_panels() -> None:
    """RUNBOOK.md writes panel titles in italics: on-call must find each on the dashboard."""
    text = (DEPLOY / "RUNBOOK.md").read_text(encoding="utf-8")
    referenced = set(re.findall(r"(?<![*\w])\*([^*\n]+)\*(?![*\w])", text))
    assert referenced, "the runbook names no panel"
    assert referenced <= set(PANEL_TITLES), referenced - set(PANEL_TITLES)


def _runbook_base() -> str:
    path = DEPLOY / "k8s" / "generate_prometheusrule.py"
    spec = importlib.util.spec_from_file_location("generate_prometheusrule", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.DEFAULT_RUNBOOK_BASE)


@pytest.mark.parametrize("title", ["Gate status", "Gate rules failing"])
def test_gate_panels_say_no_baseline_is_configured(title: str) -> None:
    """Without a baseline these series do not exist: "No data" said nothing about why."""
    assert "No baseline configured" in _panel(title)["fieldConfig"]["defaults"]["noValue"]


@pytest.mark.parametrize(
    ("title", "red_from"),
    [
        ("Time since last complete run", 2700),  # 3 x the production interval of 15 min
        ("Run intervals since last complete run", 3),  # RagEvalResultsStale
        ("Error ratio, last run", 0.05),  # RagEvalErrorRatioHigh
        ("Gate status", None),  # 0 = failing
    ],
)
def test_status_thresholds_turn_red_where_the_alerts_fire(title: str, red_from: float) -> None:
    """Status panels turn red at the thresholds where the matching alerts fire."""
    panel = _panel(title)
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    reds = [s["value"] for s in steps if s["color"] == "red"]
    assert reds == [red_from], steps
    assert panel["options"]["colorMode"] == "background"


def test_scored_cases_turn_red_below_the_drift_floor() -> None:
    """The scored-cases panel turns red below 30 scored cases."""
    steps = _panel("Scored cases, last run")["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps == [{"color": "red", "value": None}, {"color": "green", "value": 30}]


@pytest.mark.parametrize(
    "title",
    [
        "Runs by outcome",
        "Case errors by kind",
        "Retries",
        "Dataset reload and report write errors",
        "SLO events",
    ],
)
def test_counts_are_whole_numbers(title: str) -> None:
    """increase() extrapolates to the window's edges: 1.0417 runs. Rounded, no decimals."""
    panel = _panel(title)
    for expr in _exprs(panel):
        assert expr.startswith("round(") and "increase(" in expr, expr
    assert panel["fieldConfig"]["defaults"]["decimals"] == 0


def test_drift_panels_show_what_the_drop_alerts_read() -> None:
    """The drift panels read the series the drop alerts fire on."""
    verdict = " ".join(_exprs(_panel("Drift verdict by check")))
    assert "rag_eval_drift_significant{" in verdict
    alerts = (DEPLOY / "prometheus" / "rules" / "alerts.yml").read_text(encoding="utf-8")
    assert alerts.count("rag_eval_drift_significant{check=") == 4
    shift = _panel("Drift shift by check")
    assert "rag_eval_drift_shift{" in " ".join(_exprs(shift))
    # the reference the alerts compare with (the window before the latest runs) is the zero
    # line, drawn as a dashed threshold
    defaults = shift["fieldConfig"]["defaults"]
    assert defaults["custom"]["thresholdsStyle"]["mode"] == "dashed"
    assert [s["value"] for s in defaults["thresholds"]["steps"]] == [None, 0]


def test_dashboard_links_to_runbook_alerts_and_the_latest_report() -> None:
    """The dashboard links to the runbook, the alerts and the latest report."""
    dashboard = _dashboard()
    urls = {link["title"]: link["url"] for link in dashboard["links"]}
    assert urls["Runbook"] == _runbook_base()
    assert urls["Alerts"].startswith("/alerting/list")
    assert urls["Latest report"] == "${evaluator_url}/reports/latest"
    assert _variables()["evaluator_url"]["type"] == "constant"
    for panel in _panels():
        for link in panel.get("links", []):
            base, _, anchor = link["url"].partition("#")
            assert base == _runbook_base() and anchor.startswith("rageval"), link


# --- the LLM judge (docs/judge.md) ----------------------------------------------------------


def test_the_judge_contract_is_what_the_daemon_registers() -> None:
    """The judge's names and enumerated label values the dashboard may read are the ones the
    daemon's judge series declare (evaluator/daemon/judge_series.py), its error kinds, checks
    and judged metrics."""
    from evaluator.daemon.judge_series import JUDGE_OUTCOMES as DECLARED_OUTCOMES
    from evaluator.daemon.judge_series import JudgeFamilies
    from evaluator.judge.canary_verdicts import CANARY_CLASSES
    from evaluator.judge.checks import judged_metrics
    from evaluator.judge.errors import JUDGE_ERROR_KINDS
    from tests.deploy.deploy_support import (
        CONTRACT,
        JUDGE_CHECKS,
        JUDGE_OUTCOMES,
        JUDGED_RATIOS,
    )

    registered = {
        f"{family.name}_total" if family.kind == "counter" else family.name
        for family in JudgeFamilies().all()
    }
    judge_names = {n for n in CONTRACT if n.startswith(("rag_eval_judge_", "rag_eval_judged_"))}
    assert registered == judge_names
    assert ("ok", *JUDGE_ERROR_KINDS) == JUDGE_OUTCOMES == DECLARED_OUTCOMES
    assert CANARY_CLASSES == CONTRACT["rag_eval_judge_canary_accepted_total"]["class"]
    assert {m.check for m in judged_metrics()} == set(JUDGE_CHECKS)
    assert tuple(m.gauge.removeprefix("rag_eval_") for m in judged_metrics()) == JUDGED_RATIOS


def test_each_judged_metric_sits_beside_its_deterministic_one() -> None:
    """Every judged gauge has one panel, which also shows the deterministic metric the
    judged one sits beside (the registry's ``beside``), dashed."""
    from evaluator.judge.checks import judged_metrics

    for metric in judged_metrics():
        panels = [p for p in _panels() if any(f"{metric.gauge}{{" in e for e in _exprs(p))]
        assert 1 == len(panels), metric.gauge
        (panel,) = panels
        if metric.beside is not None:
            assert any(f"rag_eval_{metric.beside}{{" in e for e in _exprs(panel)), metric
        assert "percentunit" == panel["fieldConfig"]["defaults"]["unit"]
        dashed = panel["fieldConfig"]["overrides"][0]["matcher"]["options"]
        assert any(
            re.match(dashed, t["legendFormat"])
            for t in panel["targets"]
            if "judged" not in t["expr"]
        ), "the deterministic series is drawn dashed"


@pytest.mark.parametrize(
    ("title", "needle"),
    [
        ("Judge call latency P50 / P95", "rate(rag_eval_judge_call_seconds_bucket{"),
        ("Judge calls by outcome", "sum by (target, dataset, outcome) (increase(rag_eval_judge_"),
        ("Judge tokens", "sum by (target, dataset, direction) (increase(rag_eval_judge_tokens"),
        ("Judge cost", "increase(rag_eval_judge_cost_total{"),
        ("Judge cache hit ratio", "rag_eval_judge_cache_hit_ratio{"),
        ("Judge compromised", "rag_eval_judge_compromised{"),
        ("Judge lenient", "rag_eval_judge_lenient{"),
        ("Judge canaries accepted by class", "rag_eval_judge_canary_accepted_total{"),
        ("Judge calibrated by check", "rag_eval_judge_calibrated{"),
        ("Judge agreement with human labels", "rag_eval_judge_agreement_floor{"),
        ("Judge agreement with human labels", "rag_eval_judge_agreement{"),
        ("Judge kappa with human labels", "rag_eval_judge_kappa{"),
        ("Judge verdicts left uncertain by check", "rag_eval_judge_uncertain_ratio{"),
        ("Judge vote agreement (Krippendorff's alpha) by check", "rag_eval_judge_vote_alpha{"),
    ],
)
def test_the_judges_health_has_its_panels(title: str, needle: str) -> None:
    """The judge's own health: latency, calls by outcome (its errors by kind), tokens, cost,
    cache hits, compromised and lenient state, canaries accepted by class, calibrated
    state, agreement beside its floor, kappa, and its votes' uncertain share and alpha."""
    assert any(needle in e for e in _exprs(_panel(title))), title


def test_the_judge_drift_panel_links_its_alert() -> None:
    """The judge agreement panel links the runbook section of its drift alert."""
    (link,) = _panel("Judge agreement with human labels")["links"]
    assert link["url"] == f"{_runbook_base()}#ragevaljudgedrift"


# --- links to the evaluator's pages ---------------------------------------------------------

STATUS_PAGE = "${evaluator_url}/"
#: the job's case table, from a series' labels (the daemon's ``/case-table`` route)
CASE_TABLE = (
    "${evaluator_url}/case-table?target=${__field.labels.target:percentencode}"
    "&dataset=${__field.labels.dataset:percentencode}"
)


def test_the_dashboard_links_to_the_status_page() -> None:
    """The dashboard links to the status page."""
    urls = {link["title"]: link["url"] for link in _dashboard()["links"]}
    assert STATUS_PAGE == urls["Status page"]


@pytest.mark.parametrize("title", PANEL_TITLES)
def test_every_panel_links_the_status_page_and_its_jobs_case_table(title: str) -> None:
    """Each series (a job: its target and dataset labels) opens the status page and that
    job's case table; the jobs table does it from its columns."""
    panel = _panel(title)
    links = {link["title"]: link["url"] for link in panel["fieldConfig"]["defaults"]["links"]}
    assert STATUS_PAGE == links.pop("Status page")
    ((name, url),) = links.items()
    if all("rag_eval:slo_" in e for e in _exprs(panel)):
        # an SLO's recorded series add up its jobs: no job to open, its alert's section
        assert re.fullmatch(r"Runbook: RagEvalSLO(Fast|Slow)Burn", name), name
        assert url.endswith("#" + name.removeprefix("Runbook: ").lower()), url
        return
    if panel["type"] == "table":
        assert CASE_TABLE.replace("__field.labels", "__data.fields") == url
        assert "Case table of ${__data.fields.target} / ${__data.fields.dataset}" == name
    else:
        assert CASE_TABLE == url
        assert "Case table of ${__field.labels.target} / ${__field.labels.dataset}" == name
        # every query keeps the labels the link reads
        assert all("by (target, dataset" in e for e in _exprs(panel)), title


def test_the_case_table_link_is_the_daemons_route() -> None:
    """The link's path and parameters are the ones the daemon's pages build."""
    from evaluator.daemon import pages

    cases_href = getattr(pages, "cases_href", None)
    if cases_href is None:
        pytest.skip("the daemon has no case table route in this tree")
    built = cases_href("TARGET", "DATASET")
    expected = CASE_TABLE.replace("${evaluator_url}", "")
    for name in ("target", "dataset"):
        expected = expected.replace(f"${{__field.labels.{name}:percentencode}}", name.upper())
    assert expected == built

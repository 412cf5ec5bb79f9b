"""`evaluator slo rules`: the generated recording rules and burn-rate alerts, for several
job intervals, SLO windows and objectives, checked by promtool and unit-tested with it
(a fast burn pages, a slow burn opens a ticket, a healthy service fires nothing); and the
bundle's own generated deploy/prometheus/rules/slo.yml, current with its configuration.

The promtool scenarios are generated from the plan (:func:`plan_burn_alerts`) but their
expected alerts are written out here from the arithmetic: a job adding 1,000 events a run
at a constant error ratio r has a burn rate of r / budget over every window, so exactly
the window pairs whose burn rate is below that fire, each with that value.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluator.cli import main
from evaluator.config import load_settings
from evaluator.slo.burn import BurnPlan, PlannedAlert, Severity, plan_burn_alerts
from evaluator.slo.duration import format_duration, parse_duration
from tests.deploy.deploy_support import DEPLOY, SLO_RULES, load_yaml, run_promtool

GOLDEN = DEPLOY.parent / "evals" / "rag_cases.jsonl"
CONFIGMAP = DEPLOY / "k8s" / "base" / "configmap.yaml"
COMPOSE = DEPLOY / "compose" / "evaluator.toml"
#: events a scripted run adds to an SLO's counters
PER_RUN = 1000
RUNBOOK = "http://127.0.0.1:9464/runbook"

#: (job interval in seconds, SLO window, objective): a month at a minute and at the
#: production 15 minutes, the demo's day at 30 s (burn rates adapted), an hourly job over 30
#: days (windows widened to two hours), a week at 5 minutes (windows scaled, rates adapted),
#: a daily job over 28 days (the 1h page left out)
CASES = [
    (60, "28d", 0.99),
    (900, "28d", 0.999),
    (30, "1d", 0.7),
    (3600, "30d", 0.95),
    (300, "7d", 0.9),
    (86400, "28d", 0.99),
]


def _config(folder: Path, interval: int, window: str, objective: float) -> Path:
    path = folder / "evaluator.toml"
    path.write_text(
        f"""
[[targets]]
name = "rag"
url = "http://127.0.0.1:9/rag"

[[jobs]]
target = "rag"
dataset = "{GOLDEN}"
interval_seconds = {interval}

[[slos]]
name = "answers"
job = "rag"
sli = "answer_correct"
objective = {objective}
window = "{window}"
""",
        "utf-8",
    )
    return path


def _generate(folder: Path, *flags: str, interval: int = 60, window: str = "28d",
              objective: float = 0.99) -> Path:  # fmt: skip
    """``evaluator slo rules`` of one SLO, through the real entry point, into a file."""
    config = _config(folder, interval, window, objective)
    out = folder / "slo.yml"
    assert 0 == main(["slo", "rules", "--config", str(config), "--output", str(out), *flags])
    return out


def _go_g(value: float) -> str:
    """Go's %.4g, as Prometheus's humanize writes a value from 1 to 1,000."""
    return f"{value:.4g}"


def _expected(alert: PlannedAlert, objective: float, window: str, burn: float) -> dict[str, Any]:
    budget = 1 - objective
    name = "RagEvalSLOFastBurn" if alert.severity == "page" else "RagEvalSLOSlowBurn"
    speed = "fast" if alert.severity == "page" else "slowly"
    factor = f"{alert.factor:.10g}"
    short = (
        f", and above {factor}x over the last {alert.short}"
        if alert.short != alert.long
        else " (two runs of the job)"
    )
    return {
        "exp_labels": {
            "severity": "critical" if alert.severity == "page" else "warning",
            "slo": "answers",
            "long_window": alert.long,
            "short_window": alert.short,
        },
        "exp_annotations": {
            "summary": f"SLO answers burns its error budget {speed}: {_go_g(burn)}x over "
            f"{alert.long}",
            "description": f"The error ratio of SLO answers (answer_correct, objective "
            f"{objective:.10g} over {window}, an error budget of {budget:.10g}) has been "
            f"{_go_g(burn)} times its budget over the last {alert.long}{short}. Budget "
            f"left over the last {window}: {_go_g((1 - burn) * 100)}%.",
            "runbook_url": f"{RUNBOOK}#{name.lower()}",
        },
    }


def _scenario(name: str, plan: BurnPlan, window: str, bad: int) -> dict[str, Any]:
    """A job running every interval, ``bad`` of each run's events bad from the start; the
    alerts expected once the longest window has filled."""
    interval = int(plan.run_interval_seconds)
    step = _evaluation_interval(plan)
    at = -(-(max(a.long_seconds for a in plan.alerts) + 2 * interval) // step) * step
    runs = at // interval + 2
    labels = 'job="rag-evaluator",target="rag",dataset="golden",slo="answers"'
    burn = (bad / PER_RUN) / plan.budget
    tests = []
    alertnames: dict[Severity, str] = {"page": "RagEvalSLOFastBurn", "ticket": "RagEvalSLOSlowBurn"}
    for severity, alertname in alertnames.items():
        firing = [a for a in plan.alerts_of(severity) if a.factor < burn]
        tests.append(
            {
                "eval_time": format_duration(at),
                "alertname": alertname,
                "exp_alerts": [_expected(a, plan.objective, window, burn) for a in firing],
            }
        )
    return {
        "name": name,
        "interval": format_duration(interval),
        "input_series": [
            {
                "series": f'rag_eval_slo_events_total{{{labels},outcome="good"}}',
                "values": f"0+{PER_RUN - bad}x{runs}",
            },
            {
                "series": f'rag_eval_slo_events_total{{{labels},outcome="bad"}}',
                "values": f"0+{bad}x{runs}",
            },
        ],
        "alert_rule_test": tests,
    }


def _evaluation_interval(plan: BurnPlan) -> int:
    """How often promtool evaluates the rules: every run, but at least every 15 minutes (a
    28-day ratio over three days of minutes is slow to recompute every minute)."""
    return max(int(plan.run_interval_seconds), 900)


def _bad_events(plan: BurnPlan) -> dict[str, int]:
    """Bad events per run of each scenario: healthy (half the budget), a slow burn (between
    the tickets' and the pages' rates) and a fast one (between the fastest page's rate and
    every event bad)."""
    budget = plan.budget
    pages = [a.factor for a in plan.alerts_of("page")]
    tickets = [a.factor for a in plan.alerts_of("ticket")]
    slow = (max(tickets) + min(pages)) / 2 * budget
    fast = (max(pages) * budget + 1) / 2
    return {
        "healthy": round(PER_RUN * budget / 2),
        "slow": round(PER_RUN * slow),
        "fast": round(PER_RUN * fast),
    }


@pytest.mark.e2e
@pytest.mark.prometheus
@pytest.mark.parametrize(("interval", "window", "objective"), CASES)
def test_generated_rules_pass_promtool_and_fire_as_the_plan_says(
    promtool: str, tmp_path: Path, interval: int, window: str, objective: float
) -> None:
    """The rules pass promtool's check with every lint fatal; a healthy job fires nothing,
    a slow burn fires tickets and no page, a fast burn pages."""
    rules = _generate(tmp_path, interval=interval, window=window, objective=objective)
    checked = run_promtool(promtool, "check", "rules", "--lint=all", "--lint-fatal", rules)
    assert 0 == checked.returncode, checked.stdout + checked.stderr
    plan = plan_burn_alerts(objective, parse_duration(window), interval)
    bad = _bad_events(plan)
    scenarios = [_scenario(name, plan, window, n) for name, n in bad.items()]
    # not vacuous: healthy fires nothing, slow no page but a ticket, fast a page
    healthy, slow, fast = ({t["alertname"]: t["exp_alerts"] for t in s["alert_rule_test"]}
                           for s in scenarios)  # fmt: skip
    assert ([], []) == (healthy["RagEvalSLOFastBurn"], healthy["RagEvalSLOSlowBurn"])
    assert [] == slow["RagEvalSLOFastBurn"] and slow["RagEvalSLOSlowBurn"]
    assert fast["RagEvalSLOFastBurn"]
    tests = tmp_path / "slo-test.yml"
    tests.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules.name],
                "evaluation_interval": format_duration(_evaluation_interval(plan)),
                "tests": scenarios,
            },
            sort_keys=False,
        ),
        "utf-8",
    )
    result = run_promtool(promtool, "test", "rules", tests)
    assert 0 == result.returncode, result.stdout + result.stderr


def test_windows_hold_two_runs_and_every_change_is_a_comment(tmp_path: Path) -> None:
    """An hourly job: every window of the rules holds two runs (2h at least), and each
    widened window is said in a comment above the alert it changed."""
    text = _generate(tmp_path, interval=3600, window="30d", objective=0.95).read_text("utf-8")
    windows = {parse_duration(w) for w in re.findall(r"\[(\d\w*)\]", text)}
    assert min(windows) == 7200
    assert (
        "      # 2h/2h: long window 1h widened to 2h: two runs of the job (every 1h)\n"
        "      # 2h/2h: short window 5m widened to 2h: two runs of the job (every 1h)\n"
        "      # 2h/2h: the short window is the long one: two runs are all it can hold\n"
        "      - alert: RagEvalSLOFastBurn\n"
    ) in text


def test_adapted_rates_and_left_out_pairs_are_said_in_the_file(tmp_path: Path) -> None:
    """An objective whose budget 14.4x cannot reach, and a daily job whose 1h page would
    need more than the whole budget: both in the file's comments, with the reason."""
    adapted = _generate(tmp_path, interval=30, window="1d", objective=0.7).read_text("utf-8")
    assert "# a budget of 0.3 cannot burn faster than 3.33x (every event bad): 14.4 and 6 x" in (
        adapted
    )
    daily = _generate(tmp_path, interval=86400, window="28d", objective=0.99).read_text("utf-8")
    assert (
        "# left out: page 2d/2d at 14.4x: its long window spends 1.03 x the whole budget"
        in (" ".join(daily.split()).replace(" # ", "\n# ").replace("  # ", "\n# "))
        or "left out: page 2d/2d at 14.4x" in daily
    )


def test_a_prometheusrule_carries_the_same_groups(tmp_path: Path) -> None:
    """--format prometheusrule: the groups of the rules file, in a PrometheusRule named by
    --name, with the runbook links on --runbook-base."""
    rules = load_yaml(_generate(tmp_path))
    base = "https://wiki.example.org/rag/RUNBOOK.md"
    manifest = _generate(tmp_path, "--format", "prometheusrule", "--runbook-base", base,
                         "--name", "rag-slos")  # fmt: skip
    resource = load_yaml(manifest)
    assert ("PrometheusRule", "rag-slos") == (resource["kind"], resource["metadata"]["name"])
    moved = json.loads(json.dumps(rules["groups"]).replace(RUNBOOK, base))
    assert moved == resource["spec"]["groups"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--runbook-base", "deploy/RUNBOOK.md"], "--runbook-base must be an absolute"),
        (["--name", "Rag_SLOs"], "--name 'Rag_SLOs': lower-case letters"),
    ],
)
def test_bad_flags_exit_1_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """A relative runbook base or a name Kubernetes refuses: exit 1, nothing written."""
    config = _config(tmp_path, 60, "28d", 0.99)
    out = tmp_path / "slo.yml"
    assert 1 == main(["slo", "rules", "--config", str(config), "--output", str(out), *flags])
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_no_slo_configured_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A configuration without [[slos]] has nothing to write rules for."""
    config = tmp_path / "evaluator.toml"
    config.write_text(_config(tmp_path, 60, "28d", 0.99).read_text().split("[[slos]]")[0])
    assert 1 == main(["slo", "rules", "--config", str(config)])
    assert "no [[slos]] configured" in capsys.readouterr().err


def test_a_window_that_cannot_hold_enough_runs_stops_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A week of a daily job cannot page: the configuration does not load, naming the
    window and what would do."""
    config = _config(tmp_path, 86400, "7d", 0.99)
    assert 1 == main(["slo", "rules", "--config", str(config)])
    err = capsys.readouterr().err
    assert "slos.0.window: 7d cannot hold enough runs of the job (every 1d) to page" in err
    assert "a window of at least 12 runs (12d) would do" in err


def test_the_notes_go_to_stderr_and_the_rules_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --output the rules are printed; each adaptation is a note on stderr."""
    config = _config(tmp_path, 900, "28d", 0.99)
    assert 0 == main(["slo", "rules", "--config", str(config)])
    out, err = capsys.readouterr()
    assert out.startswith("# GENERATED by `evaluator slo rules`")
    assert "groups:\n  # SLO answers:" in out
    assert (
        "note  slo answers: page 1h/30m: short window 5m widened to 30m: two runs of the job "
        "(every 15m)\n" == err
    )


def _configmap_slos() -> tuple[list[dict[str, Any]], float]:
    config = tomllib.loads(load_yaml(CONFIGMAP)["data"]["evaluator.toml"])
    (job,) = config["jobs"]
    return config["slos"], job["interval_seconds"] + job.get("jitter_seconds", 0)


def test_compose_has_the_configmaps_slos_and_runs_at_least_as_often() -> None:
    """deploy/prometheus/rules/slo.yml is generated from the ConfigMap: the compose stack
    loads it too, so its SLOs are the same and its job runs at least as often (the windows
    then hold two of its runs as well)."""
    slos, gap = _configmap_slos()
    compose = load_settings(COMPOSE)
    keep = ("name", "sli", "objective", "window")
    assert [{k: s[k] for k in keep} for s in slos] == [
        {k: getattr(s, k) for k in keep} for s in compose.slos
    ]
    (job,) = compose.jobs
    assert job.longest_gap_seconds <= gap


def test_the_bundles_windows_hold_two_runs_of_the_configmaps_job() -> None:
    """Every window of the committed SLO rules holds two runs at the ConfigMap's interval."""
    _, gap = _configmap_slos()
    text = SLO_RULES.read_text("utf-8")
    windows = {parse_duration(w) for w in re.findall(r"\[(\d\w*)\]", text)}
    assert min(windows) >= 2 * gap


@pytest.mark.e2e
def test_the_committed_slo_rules_are_generated_from_the_configmap() -> None:
    """deploy/prometheus/rules/slo.yml is what `evaluator slo rules` makes of the ConfigMap's
    configuration (python deploy/k8s/generate_prometheusrule.py regenerates it)."""
    import importlib.util

    path = DEPLOY / "k8s" / "generate_prometheusrule.py"
    spec = importlib.util.spec_from_file_location("generate_prometheusrule", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert SLO_RULES.read_text("utf-8") == module.render_slo_rules()

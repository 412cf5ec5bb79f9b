"""The status page's state: one definition, held to the shipped alerts' rules and scenarios."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluator.pages.health import (
    DRIFT_MIN_SCORED,
    ERROR_RATIO_ALERT,
    DriftSignal,
    JobSignals,
    State,
    job_health,
)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
DRIFT_ALERTS = {
    "RagEvalRecallDrop": "hit",
    "RagEvalMRRDrop": "mrr",
    "RagEvalAnswerAccuracyDrop": "answer",
    "RagEvalCitationPrecisionDrop": "citation_precision",
}
RED_ALERTS = {*DRIFT_ALERTS, "RagEvalGateFailing", "RagEvalErrorRatioHigh"}


def _alerts() -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load((DEPLOY / "rules" / "alerts.yml").read_text())["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def test_green_only_when_nothing_changed() -> None:
    """A complete run with nothing to report is green."""
    assert State.GREEN == job_health(JobSignals(outcome="complete", scored_cases=100)).state


def test_a_significant_drift_is_red_with_the_move_in_words() -> None:
    """A significant drift is red, its headline giving the move in words."""
    health = job_health(
        JobSignals(
            outcome="complete",
            scored_cases=100,
            drift=[DriftSignal("mrr", True, -0.38, before=0.90, after=0.52)],
            drift_current_runs=3,
        )
    )
    assert State.RED == health.state
    assert "MRR 0.90 → 0.52 in the latest run, significant over the last 3 runs" == health.headline


def test_drift_below_the_alerts_floor_of_scored_cases_is_not_red() -> None:
    """A drift over fewer scored cases than the alerts' floor is not red."""
    signals = JobSignals(
        outcome="complete", scored_cases=DRIFT_MIN_SCORED - 1, drift=[DriftSignal("hit", True, -1)]
    )
    assert State.GREEN == job_health(signals).state


def test_a_failing_gate_and_a_high_error_ratio_are_red() -> None:
    """A failing gate and an error ratio above the alert's threshold are red, a lower error
    ratio green."""
    gate = job_health(JobSignals("complete", 100, gate_passing=False, gate_failing=("mrr",)))
    assert (State.RED, "gate against the baseline fails: mrr") == (gate.state, gate.headline)
    errors = job_health(JobSignals("complete", 100, error_ratio=0.2))
    assert State.RED == errors.state and errors.headline.startswith("20.0% of the last run")
    assert State.GREEN == job_health(JobSignals("complete", 100, error_ratio=0.05)).state


def test_a_failing_gate_says_where_to_look() -> None:
    """The gate's decision table is the failing gate's reason's second half."""
    signals = JobSignals(
        "complete",
        100,
        gate_passing=False,
        gate_failing=("mrr.max_drop",),
        gate_diagnosis=("recall +0.000, MRR -0.380: look at fusion or rerank",),
    )
    assert (
        "gate against the baseline fails: mrr.max_drop; where to look: recall +0.000, "
        "MRR -0.380: look at fusion or rerank"
    ) == job_health(signals).headline


@pytest.mark.parametrize(
    ("signals", "reason"),
    [
        (JobSignals("complete", 100, newly_failing=25), "25 cases newly failing"),
        (JobSignals("incomplete", 100), "last run incomplete"),
        (JobSignals(None), "no run yet"),
        (JobSignals("complete", 100, judge_problem="uncalibrated"), "judge: uncalibrated"),
    ],
)
def test_amber_conditions(signals: JobSignals, reason: str) -> None:
    """Each amber condition makes the job amber with its reason as the headline."""
    health = job_health(signals)
    assert (State.AMBER, reason) == (health.state, health.headline)


def test_red_lists_the_amber_reasons_after_its_own() -> None:
    """A red job lists the amber reasons after its own."""
    health = job_health(JobSignals("incomplete", 100, error_ratio=0.5, newly_failing=1))
    assert State.RED == health.state
    assert ("1 case newly failing", "last run incomplete") == health.reasons[1:]


def test_the_thresholds_are_the_shipped_alerts_thresholds() -> None:
    """The page's red thresholds are the thresholds of the shipped alert rules."""
    alerts = _alerts()
    assert (
        f"rag_eval_error_ratio > {ERROR_RATIO_ALERT:g}"
        == alerts["RagEvalErrorRatioHigh"]["expr"].strip()
    )
    gate_expr = alerts["RagEvalGateFailing"]["expr"].strip()
    assert 'rag_eval_gate_passing{job="rag-evaluator"} == 0' == gate_expr
    for alert, check in DRIFT_ALERTS.items():
        expr = " ".join(alerts[alert]["expr"].split())
        assert f'rag_eval_drift_significant{{check="{check}"}}) == 1' in expr
        assert f"rag_eval:scored_cases:sum >= {DRIFT_MIN_SCORED}" in expr


# --- the promtool scenarios, replayed through the page's definition -----------------------

_TOKEN = re.compile(r"^(?P<a>-?[\d.]+|_)(?:(?P<op>[+-])(?P<b>[\d.]+))?(?:x(?P<n>\d+))?$")


def _expand(values: str) -> list[float | None]:
    """promtool's series notation: ``a``, ``axn`` (n+1 times), ``a+bxn``, ``_`` (missing)."""
    out: list[float | None] = []
    for token in values.split():
        m = _TOKEN.match(token)
        assert m is not None, token
        if m["a"] == "_":
            out += [None] * (int(m["n"] or 0) + 1)
            continue
        a, n = float(m["a"]), int(m["n"] or 0)
        step = float(m["b"] or 0) * (-1 if m["op"] == "-" else 1)
        out += [a + step * i for i in range(n + 1)] if m["op"] else [a] * (n + 1)
    return out


def _minutes(t: str) -> int:
    h = re.search(r"(\d+)h", t)
    m = re.search(r"(\d+)m", t)
    return (int(h[1]) * 60 if h else 0) + (int(m[1]) if m else 0)


def _series(test: dict[str, Any]) -> list[tuple[str, dict[str, str], list[float | None]]]:
    out = []
    for s in test["input_series"]:
        name, _, labels = s["series"].partition("{")
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        out.append((name, pairs, _expand(str(s["values"]))))
    return out


def _at(values: list[float | None], minute: int) -> float | None:
    return values[minute] if minute < len(values) else None


def _signals(test: dict[str, Any], target: str, dataset: str, minute: int) -> JobSignals:
    """The page's inputs at ``minute`` as the scenario's gauges hold them."""
    gate: bool | None = None
    error_ratio: float | None = None
    scored = 0
    drift = []
    for name, labels, values in _series(test):
        if (labels.get("target"), labels.get("dataset")) != (target, dataset):
            continue
        value = _at(values, minute)
        if value is None:
            continue
        if name == "rag_eval_gate_passing":
            gate = value == 1
        elif name == "rag_eval_error_ratio":
            error_ratio = value
        elif name == "rag_eval_last_run_scored_cases":
            scored += int(value)
        elif name == "rag_eval_drift_significant":
            drift.append(DriftSignal(labels["check"], value == 1, None))
    return JobSignals("complete", scored, error_ratio, gate, drift=drift)


def _scenarios() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for path in sorted((DEPLOY / "tests").glob("*.yml")):
        for test in yaml.safe_load(path.read_text())["tests"]:
            if test.get("interval", "1m") != "1m":
                continue
            for check in test.get("alert_rule_test", ()):
                if check["alertname"] in RED_ALERTS:
                    out.append((f"{path.stem}: {test['name']} @ {check['eval_time']}", test, check))
    return out


SCENARIOS = _scenarios()


def test_the_scenarios_cover_every_red_alert() -> None:
    """The page's scenarios cover every alert that makes a job red."""
    assert RED_ALERTS == {check["alertname"] for _, _, check in SCENARIOS if check["exp_alerts"]}


@pytest.mark.parametrize(
    ("test", "check"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
def test_a_firing_alert_held_its_condition_which_the_page_shows_red(
    test: dict[str, Any], check: dict[str, Any]
) -> None:
    """Where promtool expects the alert, the page was red at some minute of the alert's
    ``for:`` / ``keep_firing_for:`` span (the page shows the condition, the alert delays it);
    where an alert without delay stays quiet, the page is not red."""
    rule = _alerts()[check["alertname"]]
    held = _minutes(str(rule.get("for", "0m"))) + _minutes(str(rule.get("keep_firing_for", "0m")))
    minute = _minutes(check["eval_time"])
    for expected in check["exp_alerts"]:
        labels = expected["exp_labels"]
        span = range(max(minute - held - 5, 0), minute + 1)
        assert any(
            job_health(_signals(test, labels["target"], labels["dataset"], t)).state is State.RED
            for t in span
        ), labels
    if not check["exp_alerts"] and not rule.get("for") and not rule.get("keep_firing_for"):
        # no delay at all: a quiet alert means a page that is not red for that reason
        for _, labels, _ in _series(test):
            if "target" in labels:
                s = _signals(test, labels["target"], labels["dataset"], minute)
                assert State.RED is not job_health(s).state


# --- on the page -----------------------------------------------------------------------------


def test_the_status_page_shows_the_state_its_reasons_and_the_changed_cases_linked() -> None:
    """The status page shows the job's state, its reasons and its changed cases linked, bounded
    and escaped."""
    from evaluator.models import CaseRecord
    from evaluator.pages.render import PageRenderer
    from evaluator.pages.status import CHANGED_SHOWN, JobPage, job_view
    from tests.pages.test_views import RECORD, _report

    record: CaseRecord = RECORD
    newly = [f"case-<{i}>" for i in range(CHANGED_SHOWN + 5)]
    signals = JobSignals(
        "incomplete",
        100,
        drift=[DriftSignal("mrr", True, -0.38, before=0.9, after=0.52)],
        drift_current_runs=3,
        newly_failing=len(newly),
    )
    view = job_view(
        JobPage(
            "t",
            "golden",
            _report(record),
            "incomplete",
            990.0,
            signals=signals,
            newly_failing=newly,
            flaky=["f-1"],
        ),
        case_href=lambda t, d, c: f"/case?id={c}",
        report_href="/r",
        anchor="job-0",
        now=1000.0,
    )
    html = PageRenderer().status([view])

    assert '<section class="job" data-state="red"' in html
    assert (
        '<p class="reason">MRR 0.90 → 0.52 in the latest run, significant over the last 3 runs</p>'
    ) in html
    assert "<li>25 cases newly failing</li>" in html and "<li>last run incomplete</li>" in html
    assert "Newly failing (25)" in html and "and 5 more" in html
    assert '<a class="id" href="/case?id=case-&lt;0&gt;">case-&lt;0&gt;</a>' in html
    assert "Flaky (1)" in html and "Recovered" not in html
    assert "Drift: the last 3 complete runs against the 0 before them" in html
    assert (
        '<tr class="worse"><td>mrr</td><td>mrr</td><td class="num">0.9000</td>'
        '<td class="num">0.5200</td><td class="num">-0.380</td><td>significant</td></tr>'
    ) in html


def test_after_an_incomplete_run_the_page_says_metrics_shows_the_last_complete_one() -> None:
    """After an incomplete run the status page says so and shows the metrics of the last
    complete run."""
    from evaluator.pages.render import PageRenderer
    from evaluator.pages.status import JobPage, job_view
    from evaluator.pages.trend import RunPoint
    from tests.pages.test_views import RECORD, _report

    report = _report(RECORD)
    runs = [
        RunPoint("r2", 990.0, "incomplete", {"mrr": 0.1}),
        RunPoint("r1", 900.0, "complete", {"mrr": 0.75, "recall_at_k": 1.0}),
    ]
    view = job_view(
        JobPage("t", "golden", report, "incomplete", 990.0, runs=runs),
        case_href=lambda t, d, c: f"/case?id={c}",
        report_href="/r",
        anchor="job-0",
        now=1000.0,
    )
    html = PageRenderer().status([view])

    assert view.exported is not None and "2 min ago" == view.exported.age
    mrr = report.summary.get("mrr")
    assert ("mrr", f"{mrr:.4f}", "0.7500") in view.exported.rows
    assert "Not what /metrics shows:</b> the last run was incomplete" in html
    complete = job_view(
        JobPage("t", "golden", report, "complete", 990.0, runs=runs),
        case_href=lambda t, d, c: "",
        report_href="/r",
        anchor="job-0",
    )
    assert complete.exported is None

"""`evaluator serve` as an SRE deploys it: a subprocess scraped by a real Prometheus.

One stack per module: a scripted RAG endpoint on loopback, two daemons (``main`` runs at
start; ``idle`` has its first run an hour away) and a Prometheus scraping both every second.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from evaluator.daemon.exporter import OUTCOMES
from evaluator.daemon.report_store import job_folder_name
from evaluator.errors import ERROR_KINDS
from tests.support.contract import QUALITY_GAUGES
from tests.support.loopback import LoopbackServer
from tests.support.mixed_golden import MIXED_CASES, MIXED_REPLIES
from tests.support.prometheus import (
    DaemonProcess,
    PrometheusServer,
    check_metrics,
    require_binary,
)

pytestmark = [pytest.mark.e2e, pytest.mark.prometheus]

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


#: every metric name of docs/daemon.md's table, as it appears in a text-format `# TYPE` line
DESIGN_METRICS = (
    *QUALITY_GAUGES,
    "rag_eval_error_ratio",
    "rag_eval_case_latency_seconds",
    "rag_eval_stage_latency_seconds",
    "rag_eval_runs_total",
    "rag_eval_case_errors_total",
    "rag_eval_last_run_timestamp_seconds",
    "rag_eval_last_complete_run_timestamp_seconds",
    "rag_eval_run_duration_seconds",
    "rag_eval_gate_passing",
    "rag_eval_job_info",
)


CASES = MIXED_CASES
# some right, some wrong, two failures: 2/12 errors stays within the 0.25 limit set below
SCRIPT = MIXED_REPLIES


@dataclass
class Stack:
    """The running processes and where the main daemon writes its reports."""

    server: LoopbackServer
    main: DaemonProcess
    idle: DaemonProcess
    prom: PrometheusServer
    idle_metrics_at_start: str
    latest_path: Path

    @property
    def target(self) -> str:
        """The loopback target's address as Prometheus scrapes it."""
        return f"127.0.0.1:{self.server.port}"

    def latest(self) -> dict[str, Any]:
        """The daemon's latest report."""
        data: dict[str, Any] = json.loads(self.latest_path.read_text("utf-8"))
        return data


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Prometheus scraping the daemon, which runs a golden set against a loopback target, for
    the module's tests."""
    require_binary("prometheus")
    require_binary("promtool")
    root = tmp_path_factory.mktemp("e2e")
    golden = root / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CASES) + "\n", "utf-8")
    with LoopbackServer(SCRIPT) as server:
        (root / "idle.toml").write_text(
            f"""
reports_dir = "{root / "idle-reports"}"

[[targets]]
name = "loopback"
url = "{server.url}"

[[jobs]]
target = "loopback"
dataset = "{golden}"
dataset_label = "idle"
interval_seconds = 3600
run_at_start = false
""",
            "utf-8",
        )
        main = DaemonProcess(
            [
                "--dataset", str(golden), "--target-url", server.url, "--interval", "3600",
                "--k", "3", "--concurrency", "4", "--reports-dir", str(root / "reports"),
            ],
            workdir=root,
            env={"EVALUATOR_ERROR_RATIO_LIMIT": "0.25"},
            name="main",
        )  # fmt: skip
        idle = DaemonProcess(["--config", str(root / "idle.toml")], workdir=root, name="idle")
        with main, idle:
            idle.wait_ready()
            idle_metrics = idle.get("/metrics").text
            main.wait_ready()
            with PrometheusServer([main.address, idle.address], workdir=root / "prom") as prom:
                prom.wait_for('up{job="evaluator"} == 1', lambda r: 2 == len(r))
                main.wait_for_log(lambda e: e.get("event") == "run", timeout=30)
                folder = job_folder_name(f"127.0.0.1:{server.port}/golden")
                yield Stack(
                    server=server,
                    main=main,
                    idle=idle,
                    prom=prom,
                    idle_metrics_at_start=idle_metrics,
                    latest_path=root / "reports" / folder / "latest.json",
                )
            for daemon in (main, idle):
                result = daemon.stop()
                assert 0 == result.returncode, result.stderr


def _value(result: list[dict[str, Any]]) -> float:
    assert 1 == len(result), result
    return float(result[0]["value"][1])


class TestQualityGauges:
    """Prometheus holds exactly the quality numbers of the report the run wrote to disk."""

    def test_run_was_complete_with_some_failures(self, stack: Stack) -> None:
        """The run scored ten cases, two failed below the error limit: outcome complete."""
        run = stack.main.wait_for_log(lambda e: e.get("event") == "run")
        report = stack.latest()
        assert ("complete", report["run_id"]) == (run["outcome"], run["run_id"])
        assert (12, 2) == (report["case_count"], report["error_count"])
        assert [c["id"] for c in CASES] == [c["id"] for c in report["cases"]]

    def test_each_quality_gauge_equals_the_report(self, stack: Stack) -> None:
        """Each quality gauge, read through the HTTP query API, equals the report's value."""
        summary = stack.latest()["summary"]
        for gauge, key in QUALITY_GAUGES.items():
            expected = summary[key]
            assert isinstance(expected, float), (key, expected)
            result = stack.prom.wait_for(f'{gauge}{{dataset="golden"}}', lambda r: 1 == len(r))
            labels = result[0]["metric"]
            assert (stack.target, "golden") == (labels["target"], labels["dataset"])
            assert expected == _value(result), gauge
        # the script makes the numbers non-trivial, so equality means something
        assert all(0 < summary[k] < 1 for k in QUALITY_GAUGES.values() if k != "p95_seconds")

    def test_run_counters_and_error_ratio(self, stack: Stack) -> None:
        """Error ratio, run outcomes, errors by kind and case count agree with the report."""
        report = stack.latest()
        prom = stack.prom
        ratio = prom.wait_for('rag_eval_error_ratio{dataset="golden"}')
        assert report["summary"]["error_rate"] == _value(ratio)
        runs = prom.wait_for('rag_eval_runs_total{dataset="golden"}', lambda r: 4 == len(r))
        assert {"complete": 1.0, "incomplete": 0.0, "failed": 0.0, "skipped": 0.0} == {
            r["metric"]["outcome"]: float(r["value"][1]) for r in runs
        }
        errors = prom.query('rag_eval_case_errors_total{dataset="golden"}')
        expected = dict.fromkeys(ERROR_KINDS, 0.0) | {"http_status": 1.0, "bad_response": 1.0}
        assert expected == {r["metric"]["kind"]: float(r["value"][1]) for r in errors}
        count = prom.query('rag_eval_case_latency_seconds_count{dataset="golden"}')
        assert 12.0 == _value(count)
        info = prom.query('rag_eval_job_info{dataset="golden"}')
        assert 1.0 == _value(info)
        assert (report["dataset_hash"], report["config_hash"], "3") == (
            info[0]["metric"]["dataset_hash"],
            info[0]["metric"]["config_hash"],
            info[0]["metric"]["k"],
        )
        stamp = prom.query('rag_eval_last_complete_run_timestamp_seconds{dataset="golden"}')
        assert abs(time.time() - _value(stamp)) < 120


class TestExposition:
    """The scrape passes promtool's lint and carries exemplars when asked for OpenMetrics."""

    def test_promtool_check_metrics_reports_nothing(self, stack: Stack) -> None:
        """`promtool check metrics` on live text scrapes exits 0 and prints nothing."""
        for daemon in (stack.main, stack.idle):
            response = daemon.get("/metrics")
            assert response.headers["content-type"].startswith("text/plain")
            assert "rag_eval_runs_total" in response.text
            result = check_metrics(response.text)
            assert (0, "", "") == (result.returncode, result.stdout, result.stderr)

    def test_openmetrics_scrape_has_run_and_case_exemplars(self, stack: Stack) -> None:
        """Each histogram exemplar names the run, a case and the trace id its request
        carried (traceparent), and holds that case's latency."""
        report = stack.latest()
        cases = {c["id"]: c for c in report["cases"]}
        response = stack.main.get("/metrics", headers={"Accept": OPENMETRICS})
        assert response.headers["content-type"].startswith("application/openmetrics-text")
        seen: dict[str, int] = {}
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                if sample.exemplar is None:
                    continue
                assert family.name in (
                    "rag_eval_case_latency_seconds",
                    "rag_eval_stage_latency_seconds",
                )
                assert {"run_id", "case_id", "trace_id"} == set(sample.exemplar.labels)
                assert report["run_id"] == sample.exemplar.labels["run_id"]
                case = cases[sample.exemplar.labels["case_id"]]
                assert case["trace_id"] == sample.exemplar.labels["trace_id"]
                observed = (
                    case["latency_seconds"]
                    if family.name == "rag_eval_case_latency_seconds"
                    else case["stage_seconds"][sample.labels["stage"]]
                )
                assert observed == sample.exemplar.value
                seen[family.name] = seen.get(family.name, 0) + 1
        assert {"rag_eval_case_latency_seconds", "rag_eval_stage_latency_seconds"} == set(seen)
        assert " # {" not in stack.main.get("/metrics").text  # none in the text format


class TestEndpoints:
    """Health, readiness and the latest report answer over HTTP."""

    def test_health_and_readiness(self, stack: Stack) -> None:
        """/healthz and /readyz answer 200 with a status."""
        for daemon in (stack.main, stack.idle):
            health, ready = daemon.get("/healthz"), daemon.get("/readyz")
            assert (200, {"status": "ok"}) == (health.status_code, health.json())
            assert (200, {"status": "ready"}) == (ready.status_code, ready.json())

    def test_latest_report(self, stack: Stack) -> None:
        """/reports/latest serves the report on disk; by labels too; 404 for an unknown job."""
        on_disk = stack.latest()
        plain = stack.main.get("/reports/latest")
        # the served report carries the history lists beside it (docs/history.md)
        served = plain.json()
        assert "flaky" in served.pop("history", {"flaky": []})
        assert (200, on_disk) == (plain.status_code, served)
        chosen = stack.main.get(
            "/reports/latest", params={"target": stack.target, "dataset": "golden"}
        )
        served = chosen.json()
        served.pop("history", None)
        assert (200, on_disk) == (chosen.status_code, served)
        missing = stack.main.get("/reports/latest", params={"dataset": "nope"})
        assert 404 == missing.status_code
        not_yet = stack.idle.get("/reports/latest")
        assert (404, "no run has finished yet") == (not_yet.status_code, not_yet.json()["error"])


class TestSeriesFromStart:
    """A configured job exports its series before its first run: dashboards and absent() work."""

    def test_every_design_metric_name_is_exposed(self, stack: Stack) -> None:
        """Every metric family of docs/daemon.md is declared in the first scrape of an idle
        daemon."""
        assert [] == [e for e in stack.idle.logs() if e.get("event") == "run"]
        text = stack.idle_metrics_at_start
        missing = [m for m in DESIGN_METRICS if f"# TYPE {m} " not in text]
        assert [] == missing

    def test_counters_at_zero_and_job_info(self, stack: Stack) -> None:
        """job_info, runs by every outcome and errors by every kind exist at 0 in Prometheus."""
        prom = stack.prom
        runs = prom.wait_for('rag_eval_runs_total{dataset="idle"}', lambda r: 4 == len(r))
        assert dict.fromkeys(OUTCOMES, 0.0) == {
            r["metric"]["outcome"]: float(r["value"][1]) for r in runs
        }
        errors = prom.query('rag_eval_case_errors_total{dataset="idle"}')
        assert dict.fromkeys(ERROR_KINDS, 0.0) == {
            r["metric"]["kind"]: float(r["value"][1]) for r in errors
        }
        info = prom.query('rag_eval_job_info{dataset="idle"}')
        assert 1.0 == _value(info)
        labels = info[0]["metric"]
        assert ("loopback", "5") == (labels["target"], labels["k"])
        assert labels["version"] and labels["config_hash"] and labels["dataset_hash"]
        assert 0.0 == _value(prom.query('rag_eval_case_latency_seconds_count{dataset="idle"}'))
        assert 3600.0 == _value(prom.query('rag_eval_run_interval_seconds{dataset="idle"}'))
        for name in ("rag_eval_dataset_reload_errors_total", "rag_eval_report_write_errors_total"):
            assert 0.0 == _value(prom.query(f'{name}{{dataset="idle"}}')), name

    def test_no_quality_value_before_a_complete_run(self, stack: Stack) -> None:
        """Quality gauges are absent (not a fake 0) until the job's first complete run."""
        for gauge in (*QUALITY_GAUGES, "rag_eval_last_complete_run_timestamp_seconds"):
            assert [] == stack.prom.query(f'{gauge}{{dataset="idle"}}'), gauge

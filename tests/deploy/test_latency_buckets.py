"""Latency histograms resolve a fast service: 0.5 ms to 60 s, and the dashboard agrees.

The live test runs the bundled reference RAG service (stages of a few microseconds to a few
milliseconds), ``evaluator serve`` against it with the default buckets, and a real Prometheus
with the deploy rule files. The dashboard's "P95 by stage" and case-latency P95 queries must
land within one bucket of the daemon's own nearest-rank P95s over the same runs' reports: in
the bucket holding the report's value or a neighbour, and within a factor of 2.5 squared
(one 1-2.5-5 step either way); below the first bound, at most that bound. With the old
first bucket of 25 ms every stage read 23.75 ms.
"""

from __future__ import annotations

import bisect
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evaluator.config import DEFAULT_BUCKETS
from evaluator.summary import nearest_rank
from tests.deploy.dashboard_queries import DEFAULT_SUBSTITUTIONS, dashboard_queries
from tests.deploy.deploy_support import DASHBOARD, REPO, RULE_FILES, SCRAPE_JOB
from tests.support.ports import free_port
from tests.support.prometheus import DaemonProcess, PrometheusServer, require_binary

#: one 1-2.5-5 step either way
_ONE_BUCKET = 2.5 * 2.5
#: long enough for the scrape after a run to land before the next run starts
INTERVAL_SECONDS = 8


def test_default_buckets_span_half_a_millisecond_to_a_minute() -> None:
    """The default buckets span under a millisecond to a minute, each at most 2.5 times the last."""
    assert 0.0002 <= DEFAULT_BUCKETS[0] <= 0.001
    assert DEFAULT_BUCKETS[-1] >= 60
    assert all(b / a <= 2.5 for a, b in itertools.pairwise(DEFAULT_BUCKETS))
    # the extra series are bounded: one per bucket and per (target, dataset[, stage])
    assert len(DEFAULT_BUCKETS) <= 16


def _bucket(value: float) -> int:
    """Index of the bucket holding ``value`` (le bounds; len(...) for +Inf)."""
    return bisect.bisect_left(DEFAULT_BUCKETS, value)


def _within_one_bucket(estimate: float, actual: float) -> bool:
    floor = DEFAULT_BUCKETS[0]
    if actual <= floor:  # below the first bound a histogram can only say "at most that"
        return estimate <= floor
    return abs(_bucket(estimate) - _bucket(actual)) <= 1 and (
        actual / _ONE_BUCKET <= estimate <= actual * _ONE_BUCKET
    )


def test_within_one_bucket_rejects_the_old_floor() -> None:
    """23.75 ms read off a first bucket of 25 ms is not within one bucket of 0.5 ms."""
    assert not _within_one_bucket(0.02375, 0.0005)
    assert _within_one_bucket(0.0009, 0.0006)
    assert _within_one_bucket(0.000475, 0.00003)


@pytest.fixture(scope="module")
def reference_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference service as its own process on a free port."""
    port = free_port()
    log = tmp_path_factory.mktemp("reference") / "reference.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "evaluator.reference",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _runs_p95(reports_dir: Path, runs: int) -> tuple[float, dict[str, float]]:
    """Nearest-rank P95 of case latency and of each stage over the first ``runs`` reports:
    the cases the histograms (and so the dashboard) have seen."""
    files = sorted(p for p in reports_dir.rglob("*.json") if p.name != "latest.json")
    assert len(files) >= runs, files
    cases = [c for f in files[:runs] for c in json.loads(f.read_text("utf-8"))["cases"]]
    stages: dict[str, list[float]] = {}
    for case in cases:
        for stage, seconds in (case.get("stage_seconds") or {}).items():
            stages.setdefault(stage, []).append(seconds)
    latency = nearest_rank([c["latency_seconds"] for c in cases], 95)
    assert latency is not None
    return latency, {s: v for s, vs in stages.items() if (v := nearest_rank(vs, 95)) is not None}


def _value(prom: PrometheusServer, expr: str) -> float:
    result = prom.query(expr)
    return float(result[0]["value"][1]) if result else 0.0


@pytest.mark.e2e
@pytest.mark.prometheus
def test_dashboard_p95_by_stage_is_within_one_bucket_of_the_report(
    reference_service: str, tmp_path: Path
) -> None:
    """A real Prometheus scraping a real run: the dashboard's P95 by stage is within one bucket of
    the report's."""
    require_binary("prometheus")
    config = tmp_path / "evaluator.toml"
    # no run at start: Prometheus scrapes the fresh daemon before its first run, so the
    # histograms' increase over the window covers every run the reports hold
    config.write_text(
        f"""
reports_dir = "{tmp_path / "reports"}"
[[targets]]
name = "reference"
url = "{reference_service}/rag"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
interval_seconds = {INTERVAL_SECONDS}
run_at_start = false
""",
        "utf-8",
    )
    golden = (REPO / "evals" / "rag_cases.jsonl").read_text("utf-8")
    cases = sum(1 for line in golden.splitlines() if line.strip())
    address = f"127.0.0.1:{free_port()}"
    # Prometheus first, then the daemon on the address it scrapes: the first sample of the
    # histograms is their zero, so their increase covers every run the reports hold
    with (
        PrometheusServer(
            [address], workdir=tmp_path / "prom", job_name=SCRAPE_JOB, rule_files=RULE_FILES
        ) as prom,
        DaemonProcess(["--config", str(config), "--listen", address], workdir=tmp_path) as d,
    ):
        d.wait_ready()
        prom.wait_for(
            "rag_eval_case_latency_seconds_count == 0",
            lambda r: len(r) == 1,
            timeout=INTERVAL_SECONDS - 1,
        )
        queries = dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS)
        (stage_expr,) = [e for title, e in queries if title == "P95 by stage"]
        (case_expr,) = [
            e
            for title, e in queries
            if title == "Case latency P50 / P95" and "histogram_quantile(0.95" in e
        ]
        deadline = time.monotonic() + 6 * INTERVAL_SECONDS + 90
        while True:
            # between runs: the histograms hold exactly the cases of `runs` complete runs
            runs = _value(prom, 'sum(rag_eval_runs_total{outcome="complete"})')
            observed = _value(prom, "sum(rag_eval_case_latency_seconds_count)")
            if runs >= 2 and observed == runs * cases:
                by_stage = {
                    r["metric"]["stage"]: float(r["value"][1]) for r in prom.query(stage_expr)
                }
                (case_p95,) = [float(r["value"][1]) for r in prom.query(case_expr)]
                if _value(prom, "sum(rag_eval_case_latency_seconds_count)") == observed:
                    break
            assert time.monotonic() < deadline, (runs, observed)
            time.sleep(0.5)
        assert d.stop().returncode == 0
    latency_p95, stage_p95 = _runs_p95(tmp_path / "reports", int(runs))
    assert len(stage_p95) >= 3 and set(by_stage) == set(stage_p95), (by_stage, stage_p95)
    far = {
        stage: (by_stage[stage], actual)
        for stage, actual in stage_p95.items()
        if not _within_one_bucket(by_stage[stage], actual)
    }
    assert not far, f"dashboard vs report P95 (s), more than one bucket apart: {far}"
    assert _within_one_bucket(case_p95, latency_p95), (case_p95, latency_p95)

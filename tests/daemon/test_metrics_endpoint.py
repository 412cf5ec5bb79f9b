"""/metrics: one exposition of evaluation and process metrics, re-encoded only where changed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from evaluator.daemon import server
from evaluator.daemon.exporter import Metrics
from evaluator.daemon.exposition import TEXT
from tests.daemon.test_daemon import (
    Endpoint,
    _settings,
    endpoint,
    script,
)
from tests.daemon.test_exposition import A, _fresh, _metrics, _record
from tests.support.inprocess import run_bounded, running

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

__all__ = ["endpoint", "script"]  # fixtures, imported so pytest finds them here

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


class TestMetricsEndpoint:
    def test_reencoded_only_after_a_change(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """A scrape leaves nothing to encode; a change makes its own cell stale, and the next
        scrape serves it: evaluation metrics as prometheus_client encodes them from scratch,
        then the process metrics, encoded fresh."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as daemon:
                url = f"http://127.0.0.1:{daemon.http.port}/metrics"
                labels = daemon.jobs[0].labels
                async with httpx.AsyncClient() as client:
                    first = (await client.get(url)).text
                    assert not any(f.stale(TEXT) for f in daemon.metrics.exposition.families)
                    daemon.metrics.retried(labels)
                    stale = [f.name for f in daemon.metrics.exposition.families if f.stale(TEXT)]
                    assert ["rag_eval_case_retries"] == stale
                    second = (await client.get(url)).text
                fresh = generate_latest(daemon.registry).decode()
                assert second.startswith(fresh)
                assert second[len(fresh) :].startswith("# HELP process_")
                target, dataset = labels
                retries = f'rag_eval_case_retries_total{{dataset="{dataset}",target="{target}"}}'
                assert f"{retries} 0.0" in first
                assert f"{retries} 1.0" in second
                for text in (first, second):
                    assert "process_resident_memory_bytes" in text
                    assert "rag_eval_job_info" in text

        run_bounded(body)

    def test_openmetrics_has_one_eof(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """Both registries in one OpenMetrics exposition, ending in a single # EOF."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as daemon:
                url = f"http://127.0.0.1:{daemon.http.port}/metrics"
                async with httpx.AsyncClient() as client:
                    response = await client.get(url, headers={"Accept": OPENMETRICS})
                text = response.text
                assert response.headers["content-type"].startswith("application/openmetrics")
                assert 1 == text.count("# EOF")
                assert text.endswith("# EOF\n")
                assert "process_resident_memory_bytes" in text
                assert "rag_eval_runs_total" in text

        run_bounded(body)


def _scrape_over_http(metrics: Metrics, method: str = "GET") -> bytes:
    """/metrics of the daemon's web app over real HTTP on loopback (text format): the body,
    checked against the Content-Length."""
    from aiohttp.test_utils import TestClient, TestServer

    from evaluator.daemon.server import HttpEndpoints

    http = HttpEndpoints(
        metrics,
        runtime=CollectorRegistry(),
        healthy=lambda: True,
        ready=lambda: True,
        latest_reports=dict,
    )

    async def scrape() -> bytes:
        async with TestClient(TestServer(http.app())) as client:
            response = await client.request(method, "/metrics")
            assert 200 == response.status
            body = await response.read()
            if method == "GET":
                assert response.content_length == len(body)
            return body

    return asyncio.run(scrape())


def test_a_scrape_lets_the_loop_run_after_its_last_slice() -> None:
    """The /metrics handler frees the event loop after its last slice too, before the body is
    assembled: a case that finishes meanwhile is in the body, not held behind it."""
    registry, metrics = _metrics(A)
    metrics.exposition_body(openmetrics=False)  # nothing stale: the first slice is the last
    refresh = metrics.refresh

    def refresh_then_a_case_finishes(*, openmetrics: bool, budget_seconds: float) -> bool:
        done = refresh(openmetrics=openmetrics, budget_seconds=budget_seconds)
        later = (A, _record(latency=0.5), "run-1")
        asyncio.get_running_loop().call_soon(metrics.case_finished, *later)
        return done

    metrics.refresh = refresh_then_a_case_finishes  # type: ignore[method-assign]
    served = _scrape_over_http(metrics)
    assert _fresh(registry, False) == served


def test_a_body_larger_than_a_piece_is_served_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body sent in many pieces arrives as one exposition: every byte, in order."""
    monkeypatch.setattr(server, "_PIECE_BYTES", 4096)
    jobs = [(f"target-{n}", "golden") for n in range(4)]
    registry, metrics = _metrics(*jobs)
    for labels in jobs:
        metrics.case_finished(labels, _record(), "run-1")
    served = _scrape_over_http(metrics)
    assert len(served) > 4 * server._PIECE_BYTES
    assert _fresh(registry, False) == served


def test_a_head_of_metrics_answers_without_a_body() -> None:
    """HEAD /metrics answers 200 with no body (the streamed body is left out)."""
    _, metrics = _metrics(A)
    assert b"" == _scrape_over_http(metrics, "HEAD")

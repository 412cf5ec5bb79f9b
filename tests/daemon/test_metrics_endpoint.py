"""/metrics: one exposition of evaluation and process metrics, re-encoded only where changed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client import generate_latest

from evaluator.daemon.exposition import TEXT
from tests.daemon.test_daemon import (
    Endpoint,
    _settings,
    endpoint,
    script,
)
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

"""/metrics: one exposition of evaluation and process metrics, re-encoded only on change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry

from evaluator.daemon import Daemon
from tests.daemon.test_daemon import (
    Endpoint,
    _settings,
    endpoint,
    script,
)
from tests.support.inprocess import run_bounded, running

__all__ = ["endpoint", "script"]  # fixtures, imported so pytest finds them here

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def _encodings(daemon: Daemon) -> list[str]:
    """Which registries each scrape encoded: patched to count calls."""
    calls: list[str] = []
    original = daemon.http._encoded

    async def counting(encoder: Callable[[CollectorRegistry], bytes], kind: str) -> bytes:
        before = dict(daemon.http._cache)
        body = await original(encoder, kind)
        calls.append("cached" if before.get(kind, (None, b""))[1] is body else "encoded")
        return body

    daemon.http._encoded = counting  # type: ignore[method-assign]
    return calls


class TestMetricsEndpoint:
    def test_reencoded_only_after_a_change(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """Two scrapes with nothing in between share one encoding; a change forces a new one."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as daemon:
                calls = _encodings(daemon)
                url = f"http://127.0.0.1:{daemon.http.port}/metrics"
                async with httpx.AsyncClient() as client:
                    first = (await client.get(url)).text
                    second = (await client.get(url)).text
                    daemon.metrics.retried(daemon.jobs[0].labels)
                    third = (await client.get(url)).text
                assert ["encoded", "cached", "encoded"] == calls
                assert first.replace("process_", "") != third.replace("process_", "")
                assert "rag_eval_case_retries_total" in second
                for text in (first, second, third):
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

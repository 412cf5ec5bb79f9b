"""The daemon's own HTTP surface is closed by default: a real daemon on loopback, requests
sent with raw sockets so the Host header is exactly what a browser under DNS rebinding, a
kubelet probe or Prometheus would send."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from evaluator.config import HttpTargetConfig, JobConfig, ServerConfig, Settings
from evaluator.daemon import Daemon
from evaluator.daemon.access import host_pattern
from evaluator.errors import ConfigError
from evaluator.redaction import redactor
from tests.support.inprocess import running, until
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import GOOD_BODY

pytestmark = pytest.mark.e2e

TOKEN = "ui-token-5f4e3d2c1b0a"
PATHS = [
    "/",
    "/cases",
    "/reports/latest",
    "/case?target=loop&dataset=golden&id=c1",
    "/case-table?target=loop&dataset=golden",
]
OPEN = ["/metrics", "/healthz", "/readyz"]


def _settings(tmp_path: Path, url: str, server: ServerConfig) -> Settings:
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "c1", "question": "q", "relevant_ids": ["d1"]}\n', "utf-8")
    return Settings(
        targets=[HttpTargetConfig(name="loop", url=url)],
        jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=3600)],
        reports_dir=tmp_path / "reports",
        listen="127.0.0.1:0",
        server=server,
    )


async def _get(port: int, path: str, host: str | None, auth: str | None = None) -> int:
    # without a Host header: HTTP/1.0 (HTTP/1.1 requires one), as old clients send it
    version = "1.1" if host is not None else "1.0"
    lines = [f"GET {path} HTTP/{version}", "Connection: close"]
    if host is not None:
        lines.append(f"Host: {host}")
    if auth is not None:
        lines.append(f"Authorization: {auth}")
    async with asyncio.timeout(5):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = int((await reader.readline()).split()[1])
        await reader.read()
        writer.close()
    return status


def _statuses(
    tmp_path: Path,
    server: ServerConfig,
    requests: Sequence[tuple[str, str | None, str | None]],
) -> list[int]:
    found: list[int] = []
    with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as target:
        settings = _settings(tmp_path, target.url, server)

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].state.outcome is not None)
                for path, host, auth in requests:
                    found.append(await _get(daemon.http.port, path, host, auth))

        asyncio.run(asyncio.wait_for(body(), 30))
    return found


class TestHostAllowList:
    def test_rebound_name_is_refused_everywhere(self, tmp_path: Path) -> None:
        """``Host: attacker.example`` (a rebound DNS name) gets 403 on every path."""
        requests = [(p, "attacker.example:9464", None) for p in PATHS + OPEN]
        assert [403] * len(requests) == _statuses(tmp_path, ServerConfig(), requests)

    def test_probes_scrapes_and_local_names_are_served(self, tmp_path: Path) -> None:
        """Pod IPs (kubelet, Prometheus), IPv6 literals, localhost, the k8s and compose
        service names, and no Host at all are served."""
        hosts = [
            "10.42.0.17:9464",
            "[fd00::17]:9464",
            "127.0.0.1",
            "localhost:9464",
            "rag-evaluator:9464",
            "rag-evaluator-2.rag-evaluator-shards.eval.svc.cluster.local:9464",
            "rag-evaluator.eval.svc",
            "evaluator:9464",
            None,
        ]
        requests = [(p, h, None) for h in hosts for p in ["/healthz", "/metrics", "/"]]
        assert [200] * len(requests) == _statuses(tmp_path, ServerConfig(), requests)

    def test_patterns_stay_within_labels(self) -> None:
        """An allowed-host wildcard matches within DNS labels only."""
        assert host_pattern("rag-evaluator-*").fullmatch("rag-evaluator-0")
        assert not host_pattern("rag-evaluator-*").fullmatch("rag-evaluator-0.attacker.com")
        assert host_pattern("*.svc").fullmatch("a.b.svc")
        assert not host_pattern("*.svc").fullmatch("svc")


class TestToken:
    def test_pages_need_the_token_probes_and_metrics_do_not(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With a UI token the pages need it, as bearer or basic credentials, while probes and
        /metrics stay open."""
        monkeypatch.setenv("EVALUATOR_UI_TOKEN", TOKEN)
        basic = "Basic " + base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
        requests = (
            [(p, "127.0.0.1", None) for p in PATHS]
            + [(p, "127.0.0.1", "Bearer wrong") for p in PATHS]
            + [(p, "127.0.0.1", f"Bearer {TOKEN}") for p in PATHS[:3]]
            + [(p, "127.0.0.1", basic) for p in PATHS[:3]]
            + [(p, "10.0.0.9", None) for p in OPEN]
        )
        statuses = _statuses(tmp_path, ServerConfig(token="${EVALUATOR_UI_TOKEN}"), requests)
        n = len(PATHS)
        assert [401] * (2 * n) == statuses[: 2 * n]
        assert [200] * 6 == statuses[2 * n : 2 * n + 6]
        assert [200] * len(OPEN) == statuses[2 * n + 6 :]
        assert TOKEN not in redactor().redact_text(f"token={TOKEN}")

    def test_unset_token_variable_stops_the_start(self, tmp_path: Path) -> None:
        """A UI token naming an unset variable stops the start naming ``server.token``."""
        settings = _settings(tmp_path, "http://127.0.0.1:9/", ServerConfig(token="${NOPE_UNSET}"))

        async def body() -> None:
            with pytest.raises(ConfigError, match=r"server\.token: .*NOPE_UNSET"):
                await Daemon(settings).start()

        asyncio.run(body())

    def test_bad_allowed_host_is_refused_naming_it(self) -> None:
        """A malformed allowed host is refused naming ``allowed_hosts``."""
        with pytest.raises(ValueError, match="allowed_hosts"):
            Settings.model_validate({"server": {"allowed_hosts": ["a b"]}})
        assert json.dumps(ServerConfig().allowed_hosts)

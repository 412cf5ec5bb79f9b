"""``evaluator demo`` with its ports taken: a taken RAG port stops it before the banner, with
the reason and the flag to change, instead of running against whatever answers there; a
taken Prometheus port leaves Prometheus out with the reason in the banner. Each port is taken
by a loopback HTTP server that answers 200 to every path (``/healthz``, ``/-/ready``), as
another service would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web

from evaluator.commands.demo_stack import DemoOptions, _start_prometheus
from tests.support.loopback import ThreadedApp
from tests.support.ports import free_port
from tests.support.prometheus import require_binary

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


class AnswersEverything(ThreadedApp):
    """Another service on the port: 200 to every GET."""

    def __init__(self) -> None:
        self.port = 0
        self._init_thread()

    async def _ok(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _routes(self, app: web.Application) -> None:
        app.router.add_get("/{tail:.*}", self._ok)


def test_a_taken_rag_port_stops_the_demo_before_its_banner(tmp_path: Path) -> None:
    """The RAG port answered by another service: exit 1, no banner, and the error names the
    address and the flag to change."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    with AnswersEverything() as other:
        done = subprocess.run(
            [
                sys.executable, "-m", "evaluator", "demo", "--no-prometheus",
                "--rag-port", str(other.port), "--listen", f"127.0.0.1:{free_port()}",
                "--reports-dir", str(tmp_path / "reports"), "--interval", "3600",
            ],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert 1 == done.returncode, done.stdout + done.stderr
    assert "evaluator demo is running" not in done.stdout
    assert (
        f"evaluator: error: --rag-port {other.port}: 127.0.0.1:{other.port} is taken by "
        f"another process; pass --rag-port with a free port"
    ) in done.stderr


@pytest.mark.prometheus
def test_a_taken_prometheus_port_leaves_prometheus_out_with_the_reason(tmp_path: Path) -> None:
    """Prometheus's port answered by another service: the demo's Prometheus is not started,
    and the banner's reason names the address and the flags."""
    require_binary("prometheus")
    children: list[subprocess.Popen[bytes]] = []
    try:
        with AnswersEverything() as other:
            ui = _start_prometheus(DemoOptions(prometheus_port=other.port), tmp_path, children)
    finally:
        for child in children:  # what the demo would stop on its way out
            child.kill()
            child.wait(10)
    assert ([], None) == (children, ui.url)
    assert (
        f"not started: 127.0.0.1:{other.port} is taken by another process; pass "
        f"--prometheus-port with a free port, or --no-prometheus"
    ) == ui.reason

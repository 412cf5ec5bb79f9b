"""A real OTLP receiver: Arize Phoenix (``phoenix serve``) on loopback takes the evaluator's
case spans, sent to its base URL as a user would configure it, gzip-compressed.

Phoenix is kept out of the test extras: it installs in about 100 s, but brings some 100
packages, and one of them (arize-phoenix-client) registers a pytest plugin whose imports
raise DeprecationWarning, which ``filterwarnings = error`` turns into a failure of the
whole suite. Install it in a venv of its own (``python -m venv /opt/phoenix &&
/opt/phoenix/bin/pip install arize-phoenix``) and set ``EVALUATOR_PHOENIX`` to its
``bin/phoenix``; the command is also looked for beside the interpreter and on PATH.
Without it the test is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.run import otlp
from tests.support.loopback import LoopbackServer, Reply
from tests.support.ports import free_port
from tests.targets.helpers import GOOD_BODY, dataset, run_config

pytestmark = pytest.mark.e2e

_BESIDE = Path(sys.executable).with_name("phoenix")
PHOENIX = (
    str(_BESIDE)
    if _BESIDE.is_file()
    else os.environ.get("EVALUATOR_PHOENIX") or shutil.which("phoenix")
)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture
def phoenix(tmp_path: Path) -> Any:
    """A local Arize Phoenix's OTLP endpoint (skipped when Phoenix is not installed)."""
    if PHOENIX is None:
        pytest.skip("Arize Phoenix is not installed (set EVALUATOR_PHOENIX or put it on PATH)")
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
    }
    log = (tmp_path / "phoenix.log").open("wb")
    process = subprocess.Popen([PHOENIX, "serve"], env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90  # its database migrations take a while on start
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"phoenix did not start: {(tmp_path / 'phoenix.log').read_text()}")
                time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        process.wait(20)
        log.close()


@pytest.mark.timeout(180)
def test_phoenix_receives_the_case_spans(phoenix: str) -> None:
    """Arize Phoenix receives the case spans of a run, gzip-compressed."""
    reply = Reply(body={**GOOD_BODY, "timings": {"retrieve": 0.01, "model": 0.02}})
    spans = otlp.install(
        enabled=True, endpoint=phoenix, service_name="rag-eval-phoenix", compression="gzip"
    )
    assert spans is not None
    try:
        with LoopbackServer(lambda _r: reply) as server:
            target = HttpTargetConfig(name="rag", url=server.url)
            report, _ = run_config(target, dataset(["a", "b"]))
    finally:
        otlp.shutdown()
    assert (0, 6) == (spans.exporter.failed_spans, spans.exporter.exported_spans)
    deadline = time.monotonic() + 30  # Phoenix writes what it received in the background
    while True:
        found = _get(f"{phoenix}/v1/projects/default/spans?limit=100")["data"]
        cases = [s for s in found if s["name"] == otlp.CASE_SPAN]
        if len(cases) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {c.trace_id for c in report.cases} == {s["context"]["trace_id"] for s in cases}
    stages = [s for s in found if s["name"].startswith("rag_eval.stage ")]
    assert 4 == len(stages)
    assert {s["context"]["span_id"] for s in cases} == {s["parent_id"] for s in stages}

"""Start-up to ready: ``evaluator serve`` as a whole process until ``/readyz`` answers 200.

The daemon runs the bundled golden set (``evals/rag_cases.jsonl``) against the benchmark
endpoint in its own process, listening on a free loopback port that this process polls
every 10 ms from the moment it spawns the daemon. One untimed warm-up start (byte-code
compilation, file cache), then the median of ``REPEATS``. For a breakdown, the same is
timed for a bare interpreter (``python -c pass``) and for importing the daemon's modules.
No goal: the figure is reported.

``python -m tests.benchmarks.run --only startup``
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.support import REPO, endpoint, figure, median

REPEATS = 3
TIMEOUT = 30.0
POLL = 0.01
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
DATASET = REPO / "evals" / "rag_cases.jsonl"


def _free_port() -> int:
    from tests.support.ports import free_port

    return free_port()


def _ready(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _start_to_ready(url: str, workdir: Path) -> float:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    command = [
        EVALUATOR, "serve", "--dataset", str(DATASET), "--target-url", url,
        "--listen", f"127.0.0.1:{port}", "--interval", "3600", "--reports-dir", str(workdir),
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        while not _ready(port):
            if proc.poll() is not None:
                stderr = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"evaluator serve exited {proc.returncode}: {stderr}")
            if time.perf_counter() - started > TIMEOUT:
                raise RuntimeError(f"/readyz not 200 within {TIMEOUT:g} s")
            time.sleep(POLL)
        return time.perf_counter() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _process_seconds(code: str) -> float:
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
        timings.append(time.perf_counter() - started)
    return median(timings)


def run() -> dict[str, Any]:
    """``evaluator serve``'s start-up to ready, beside the interpreter's and the imports' own,
    its figures by name."""
    with tempfile.TemporaryDirectory() as tmp, endpoint(0.0) as url:
        cold = _start_to_ready(url, Path(tmp))
        runs = [_start_to_ready(url, Path(tmp)) for _ in range(REPEATS)]
    interpreter = _process_seconds("pass")
    imports = _process_seconds(
        "import evaluator.cli, evaluator.commands.serve, evaluator.daemon, evaluator.targets"
    )
    value = median(runs)
    return {
        "evaluator serve: start-up to /readyz 200": figure(
            value,
            "s",
            meaning=(
                "whole process: interpreter, imports, config, golden set (137 cases), bind, "
                f"scheduler; median of {REPEATS} after a warm-up start. For scale, measured "
                f"apart: a bare interpreter {interpreter:.2f} s, one that imports the daemon's "
                f"modules {imports:.2f} s"
            ),
            runs=runs,
        ),
        "_details": {
            "first_start_seconds": round(cold, 3),
            "python_c_pass_seconds": round(interpreter, 3),
            "python_import_daemon_seconds": round(imports, 3),
        },
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

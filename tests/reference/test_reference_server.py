"""``python -m evaluator.reference``: arguments, a real process on loopback stopped with
SIGINT, and the rule that nothing else in evaluator imports the reference package."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from evaluator.reference.failures import ENV_VAR
from evaluator.reference.server import main
from tests.support.ports import free_port


@pytest.mark.parametrize(
    "argv",
    [
        ["--failure-mode", "slow_modle"],
        ["--port", "eighty"],
        ["--error-share", "1.5"],
        ["--slow-model-seconds", "-1"],
        ["--no-such-flag"],
    ],
)
def test_bad_arguments_exit_1(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A usage error exits 1 (2 is reserved for a failed gate) and says what is wrong."""
    with pytest.raises(SystemExit) as caught:
        main(argv)

    assert 1 == caught.value.code
    assert "error:" in capsys.readouterr().err


def test_unknown_mode_in_environment_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment variable is validated like the flag."""
    monkeypatch.setenv(ENV_VAR, "faster")

    with pytest.raises(SystemExit) as caught:
        main([])

    assert 1 == caught.value.code


@pytest.mark.e2e
def test_runs_as_a_process_and_stops_on_sigint() -> None:
    """Started with a failure mode from the flag and one from the environment, it serves
    /healthz and /rag, and exits 0 on Ctrl-C."""
    port = free_port()
    env = {**os.environ, ENV_VAR: "citations_degraded"}
    command = [sys.executable, "-m", "evaluator.reference", "--port", str(port)]
    command += ["--failure-mode", "slow_model", "--slow-model-seconds", "0", "--no-access-log"]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                health = httpx.get(f"{url}/healthz", timeout=1).json()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("the reference service did not come up")
                time.sleep(0.1)
        body = httpx.post(f"{url}/rag", json={"question": "积分的有效期是多久？"}).json()
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)

    assert ["citations_degraded", "slow_model"] == health["failure_modes"]
    assert [0] == body["citations"]
    assert 0 == process.returncode
    assert "/admin/failure-modes" in stderr


@pytest.mark.e2e
def test_nothing_else_imports_the_reference_package() -> None:
    """The daemon's own install stays lean: importing every other evaluator module pulls in
    neither evaluator.reference nor its optional dependencies."""
    code = """
import importlib, pathlib, sys
import evaluator
root = pathlib.Path(evaluator.__file__).parent
for path in sorted(root.rglob("*.py")):
    parts = ("evaluator", *path.relative_to(root).with_suffix("").parts)
    if parts[1] in ("reference", "__main__"):
        continue
    importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
leaked = sorted(m for m in ("evaluator.reference", "bm25s", "uvicorn", "starlette")
                if m in sys.modules)
print(",".join(leaked))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )

    assert "" == result.stdout.strip()

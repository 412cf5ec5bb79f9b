"""The kept encoding (evaluator/daemon/exposition.py) equals prometheus_client's own encoders
byte for byte under every prometheus_client the package allows, not only the one installed.

The encoder is hand-written because prometheus_client cannot keep the 5 ms scrape rule
(docs/architecture.md, "Why /metrics keeps its own encoding"); the price is this test. The
lowest and the highest version ``pyproject.toml`` allows are installed into a temporary
directory (``pip install --target``, from the package index) and tests/daemon/test_exposition.py
runs in a subprocess with that directory first on ``sys.path``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# installs from the package index and runs pytest in a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e


def _allowed() -> str:
    """prometheus_client's requirement in pyproject.toml, e.g. ``>=0.21,<1``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    (spec,) = [
        d.removeprefix("prometheus-client")
        for d in config["project"]["dependencies"]
        if re.match(r"prometheus[-_]client\b", d)
    ]
    return spec.strip()


def _lowest(spec: str) -> str:
    (floor,) = re.findall(r">=\s*([\w.]+)", spec)
    return f"=={floor}.0" if floor.count(".") == 1 else f"=={floor}"


@pytest.mark.parametrize("which", ["lowest", "highest"])
def test_served_bytes_equal_prometheus_clients_under_every_allowed_version(
    which: str, tmp_path: Path
) -> None:
    """The served exposition equals prometheus_client's byte for byte under the lowest and
    highest versions allowed."""
    spec = _allowed()
    requirement = "prometheus-client" + (_lowest(spec) if which == "lowest" else spec)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    installed = subprocess.run(
        [*pip, "--no-deps", "--target", str(site), requirement],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    (dist,) = site.glob("prometheus_client-*.dist-info")
    version = dist.name.removeprefix("prometheus_client-").removesuffix(".dist-info")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    # the subprocess must import the version just installed, not the one of the venv
    probe = "import prometheus_client, sys; print(prometheus_client.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    pytest_args = ["-q", "-x", "-p", "no:cacheprovider", "tests/daemon/test_exposition.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"prometheus_client {version}:\n{result.stdout[-4000:]}"
    assert re.search(r"\d+ passed", result.stdout), result.stdout[-2000:]

"""``evaluator demo`` outside the source tree: the golden set ships in the package.

The wheel is built from the working tree's files (as ``make install`` builds it), unpacked
into a folder of its own, and run from an empty directory, so nothing of the source tree
can stand in for what the wheel lacks.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from evaluator.commands.demo_stack import (
    SOURCE_CONVERSATIONS,
    SOURCE_GOLDEN_SET,
    SOURCE_RULES,
    default_conversations,
    default_golden_set,
    default_rules_dir,
)
from tests.support.ports import free_port
from tests.support.prometheus import require_binary

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PACKAGED = REPO / "evaluator" / "commands" / "data" / "rag_cases.jsonl"
PACKAGED_RULES = REPO / "evaluator" / "commands" / "data" / "rules"


def test_the_packaged_golden_set_is_the_source_trees() -> None:
    """The golden set packaged for the demo is a copy of the source tree's."""
    assert (REPO / SOURCE_GOLDEN_SET).read_bytes() == PACKAGED.read_bytes(), (
        "evaluator/commands/data/rag_cases.jsonl must be a copy of evals/rag_cases.jsonl: "
        "cp evals/rag_cases.jsonl evaluator/commands/data/"
    )


def test_the_packaged_conversations_are_the_source_trees() -> None:
    """The conversations packaged for the demo's second job are a copy of the source tree's,
    the source tree's used there."""
    packaged = REPO / "evaluator" / "commands" / "data" / "conversations.jsonl"
    assert (REPO / SOURCE_CONVERSATIONS).read_bytes() == packaged.read_bytes(), (
        "evaluator/commands/data/conversations.jsonl must be a copy of "
        "evals/conversations.jsonl: cp evals/conversations.jsonl evaluator/commands/data/"
    )
    assert SOURCE_CONVERSATIONS == default_conversations(REPO)


def test_the_packaged_rules_are_the_source_trees() -> None:
    """The Prometheus rules packaged for the demo are a copy of deploy/prometheus/rules."""
    source = {p.name: p.read_bytes() for p in (REPO / SOURCE_RULES).glob("*.yml")}
    packaged = {p.name: p.read_bytes() for p in PACKAGED_RULES.glob("*.yml")}
    assert source == packaged, (
        "evaluator/commands/data/rules must be a copy of deploy/prometheus/rules: "
        "rm evaluator/commands/data/rules/*.yml; cp deploy/prometheus/rules/*.yml "
        "evaluator/commands/data/rules/"
    )
    assert SOURCE_RULES == default_rules_dir(REPO)


def test_the_default_golden_set_is_the_source_trees_there_and_the_package_elsewhere(
    tmp_path: Path,
) -> None:
    """The demo uses the source tree's golden set in the repository and the packaged copy
    anywhere else."""
    assert SOURCE_GOLDEN_SET == default_golden_set(REPO)
    elsewhere = default_golden_set(tmp_path)
    assert elsewhere.is_file() and elsewhere.read_bytes() == PACKAGED.read_bytes()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package as the wheel installs it, in a folder of its own (deps from this venv)."""
    root = tmp_path_factory.mktemp("installed")
    tree = root / "tree"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, check=True, timeout=60,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root), str(tree)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if built.returncode != 0 and "--no-index" in built.stderr + built.stdout:
        pytest.skip(f"no build backend to build the wheel with: {built.stderr[-500:]}")
    assert 0 == built.returncode, built.stderr
    (wheel,) = root.glob("evaluator-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert "evaluator/commands/data/rag_cases.jsonl" in names
        assert "evaluator/commands/data/rules/alerts.yml" in names
        assert "evaluator/reference/data/corpus.jsonl" in names
        archive.extractall(root / "site")
    return root / "site"


def _env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    env["PYTHONPATH"] = str(site)  # before this venv's editable install on sys.path
    return env


def test_demo_help_from_another_directory(installed: Path, tmp_path: Path) -> None:
    """The installed package's ``evaluator demo --help`` works from outside the repository."""
    where = subprocess.run(
        [sys.executable, "-c", "import evaluator; print(evaluator.__file__)"],
        cwd=tmp_path, env=_env(installed), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert where.stdout.strip().startswith(str(installed))
    done = subprocess.run(
        [sys.executable, "-m", "evaluator", "demo", "--help"],
        cwd=tmp_path, env=_env(installed), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    assert "--dataset" in done.stdout


def test_a_short_demo_run_from_another_directory(installed: Path, tmp_path: Path) -> None:
    """A run of the packaged golden set against the packaged reference service, Ctrl-C."""
    reports = tmp_path / "reports"
    command = [
        sys.executable, "-m", "evaluator", "demo", "--no-prometheus",
        "--rag-port", str(free_port()), "--listen", f"127.0.0.1:{free_port()}",
        "--reports-dir", str(reports), "--interval", "3600",
    ]  # fmt: skip
    err, out = tmp_path / "stderr.txt", tmp_path / "stdout.txt"
    with err.open("wb") as stderr, out.open("wb") as stdout:
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=_env(installed), stdout=stdout, stderr=stderr,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not list(reports.rglob("2*.json")):
            assert proc.poll() is None, err.read_text("utf-8", "replace")[-3000:]
            assert time.monotonic() < deadline, "no report within 90 s"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(30)
    banner = out.read_text("utf-8", "replace")
    assert "golden set" in banner and "commands/data/rag_cases.jsonl" in banner
    assert 0 == code, err.read_text("utf-8", "replace")[-3000:]


@pytest.mark.prometheus
def test_the_installed_demo_runs_prometheus_with_the_alert_rules(
    installed: Path, tmp_path: Path
) -> None:
    """From outside the source tree, the demo's Prometheus loads the packaged rules: its
    alerts (RagEvalGateFailing among them) are there, not none."""
    require_binary("prometheus")
    prom = free_port()
    command = [
        sys.executable, "-m", "evaluator", "demo", "--prometheus-port", str(prom),
        "--rag-port", str(free_port()), "--listen", f"127.0.0.1:{free_port()}",
        "--reports-dir", str(tmp_path / "reports"), "--interval", "3600",
    ]  # fmt: skip
    err, out = tmp_path / "stderr.txt", tmp_path / "stdout.txt"
    with err.open("wb") as stderr, out.open("wb") as stdout:
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=_env(installed), stdout=stdout, stderr=stderr,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while "evaluator demo is running" not in out.read_text("utf-8", "replace"):
            assert proc.poll() is None, err.read_text("utf-8", "replace")[-3000:]
            assert time.monotonic() < deadline, "no banner within 90 s"
            time.sleep(0.2)
        with httpx.Client(base_url=f"http://127.0.0.1:{prom}", timeout=10) as client:
            groups = client.get("/api/v1/rules").json()["data"]["groups"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(30)
    alerts = {r["name"] for g in groups for r in g["rules"] if r["type"] == "alerting"}
    assert "RagEvalGateFailing" in alerts
    assert 0 == code, err.read_text("utf-8", "replace")[-3000:]

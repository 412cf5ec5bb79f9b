"""`evaluator gate` of two saved reports with nothing configured loads no settings (no
pydantic): they would be the defaults, and it judges exactly as with them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.config import load_settings
from evaluator.config.sources import nothing_configured
from tests.benchmarks.support import REPO
from tests.gate.factories import record, report, write


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("EVALUATOR_")}
    return {**env, "PYTHONPATH": str(REPO)}


def test_nothing_configured_means_the_default_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no config file, no --config and no EVALUATOR_ variable (any case), nothing is configured
    and the gate takes the default settings."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.upper().startswith("EVALUATOR_"):
            monkeypatch.delenv(name)
    assert nothing_configured(None)
    assert load_settings(None).gates_file is None  # what the gate takes then

    monkeypatch.setenv("evaluator_gates_file", "x.toml")  # any case counts
    assert not nothing_configured(None)
    monkeypatch.delenv("evaluator_gates_file")
    assert not nothing_configured("evaluator.toml")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "evaluator.toml").write_text("", encoding="utf-8")
    assert not nothing_configured(None)


@pytest.mark.e2e
def test_a_saved_gate_with_nothing_configured_does_not_load_settings(tmp_path: Path) -> None:
    """`gate` over two saved reports with nothing configured never imports pydantic or the
    settings modules (the config package's face and `sources` are all it reads), and judges as
    with the defaults."""
    b = write(tmp_path / "b.json", report([record("a"), record("b")]))
    c = write(tmp_path / "c.json", report([record("a"), record("b", rr=0.5)], run_id="2"))
    code = (
        "import sys\n"
        "from evaluator.cli import main\n"
        f"code = main(['gate', '--baseline', {str(b)!r}, '--candidate', {str(c)!r}])\n"
        "heavy = ('pydantic', 'pydantic_settings', 'evaluator.config.settings',"
        " 'evaluator.config.load', 'evaluator.config.target')\n"
        "print(code, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=_clean_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "2 []"
    assert "gate FAILED" in done.stdout  # mrr dropped 0.25: judged as with the defaults

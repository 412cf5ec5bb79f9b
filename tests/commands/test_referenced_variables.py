"""Variables a configuration file references (``${NAME}``) are not settings overrides, and
``evaluator check`` fails exactly when ``evaluator serve`` would: the ``[server]`` block as
docs/daemon.md shows it, on a real daemon, and an unset variable of every kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from evaluator.cli import main
from tests.support.prometheus import DaemonProcess

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ui-s3cret-value"


def _server_block() -> str:
    """The ``[server]`` TOML block of docs/daemon.md."""
    text = (REPO / "docs" / "daemon.md").read_text("utf-8")
    return next(b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "[server]" in b)


def _config(tmp_path: Path, extra: str = "") -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "c1", "question": "q", "relevant_ids": ["a"]}) + "\n")
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp_path / "reports"}"\nlog_format = "json"\n\n'
        f'[[targets]]\nname = "rag"\nurl = "http://127.0.0.1:9/rag"\n\n'
        f'[[jobs]]\ntarget = "rag"\ndataset = "{golden}"\ninterval_seconds = 3600\n'
        f"run_at_start = false\n\n{_server_block()}\n{extra}",
        encoding="utf-8",
    )
    return config


@pytest.mark.e2e
def test_the_documented_ui_token_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With EVALUATOR_UI_TOKEN set, `check` passes and `serve` starts: its pages answer 401
    without the token and 200 with it (the variable used to stop every command as an
    unknown settings override)."""
    config = _config(tmp_path)
    monkeypatch.setenv("EVALUATOR_UI_TOKEN", TOKEN)
    assert 0 == main(["check", "--config", str(config)]), capsys.readouterr()
    daemon = DaemonProcess(
        ["--config", str(config)], workdir=tmp_path / "d", env={"EVALUATOR_UI_TOKEN": TOKEN}
    ).start()
    try:
        daemon.wait_ready()
        bare = httpx.get(f"{daemon.url}/", timeout=10)
        bearer = httpx.get(f"{daemon.url}/", headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        result = daemon.stop()
    assert (401, 200) == (bare.status_code, bearer.status_code)
    assert 0 == result.returncode, result.stderr


def test_a_misspelt_override_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An EVALUATOR_ variable the file does not reference and no setting has is an error."""
    monkeypatch.setenv("EVALUATOR_UI_TOKEN", TOKEN)
    monkeypatch.setenv("EVALUATOR_REPORT_DIR", "x")
    assert 1 == main(["check", "--config", str(_config(tmp_path))])
    assert "unknown environment variable EVALUATOR_REPORT_DIR" in capsys.readouterr().err


@pytest.mark.e2e
def test_check_fails_exactly_when_serve_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unset variables referenced by [server] token, [otlp] headers and [judge] headers:
    `check` lists each as a problem naming its setting, and `serve` refuses to start naming
    the first of them."""
    extra = (
        '[otlp]\nenabled = true\nendpoint = "http://127.0.0.1:9/v1/traces"\n'
        'headers = { Authorization = "Bearer ${COLLECTOR_TOKEN}" }\n\n'
        '[judge]\nurl = "http://127.0.0.1:9/v1/chat/completions"\nmodel = "m"\n'
        'headers = { Authorization = "Bearer ${JUDGE_API_KEY}" }\n'
    )
    config = _config(tmp_path, extra)
    for name in ("EVALUATOR_UI_TOKEN", "COLLECTOR_TOKEN", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert 1 == main(["check", "--config", str(config)])
    fails = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL")]
    assert [
        "FAIL  server: server.token: environment variable EVALUATOR_UI_TOKEN is not set",
        "FAIL  otlp: otlp.headers.Authorization: environment variable COLLECTOR_TOKEN is not set",
        "FAIL  job rag/golden: judge: judge.headers.Authorization: environment variable "
        "JUDGE_API_KEY is not set (or empty); export it before starting evaluator",
    ] == fails
    daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path / "d").start()
    assert daemon.proc is not None
    assert 1 == daemon.proc.wait(timeout=30)
    assert "server.token: environment variable EVALUATOR_UI_TOKEN is not set" in (
        daemon.stderr_path.read_text("utf-8")
    )

"""``check`` checks everything ``serve`` uses, and ``gate --junit`` writes as reports are
written (issue 38.9): a judge URL with a bad port is a configuration error naming
``judge.url`` (it was an internal error at the first judge call), the judge's headers, the
OTLP headers and the server token are checked for control characters and unset variables,
and the JUnit file is replaced atomically, never written through a symlink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))
GOLDEN = json.dumps({"id": "c0", "question": "q0", "relevant_ids": ["d0"]}) + "\n"


def _config(tmp: Path, extra: str) -> Path:
    (tmp / "golden.jsonl").write_text(GOLDEN, "utf-8")
    config = tmp / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp / "reports"}"\n{extra}\n'
        '[[targets]]\nname = "t"\nurl = "http://127.0.0.1:9/rag"\n'
        '[[jobs]]\ntarget = "t"\ndataset = "golden.jsonl"\n',
        "utf-8",
    )
    return config


def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd,
        env={**full, **env},
    )  # fmt: skip


def _judge(url: str, headers: str = "") -> str:
    return f'[judge]\nurl = "{url}"\nmodel = "m"\n{headers}'


@pytest.mark.parametrize(
    ("command", "url"),
    [
        ("check", "http://127.0.0.1:99999/v1/chat/completions"),
        ("run", "http://127.0.0.1:99999/v1/chat/completions"),
        ("check", "http://[::1/v1/chat/completions"),
        ("check", "http://:8900/v1/chat/completions"),
    ],
    ids=["check-port-out-of-range", "run-port-out-of-range", "check-broken-ipv6", "no-host"],
)
def test_a_broken_judge_url_is_a_configuration_error(
    tmp_path: Path, command: str, url: str
) -> None:
    """A judge URL whose port is out of range (the audit's reproduction, through ``run``:
    an internal error), a broken IPv6 host or no host (the variants): exit 1 naming
    ``judge.url``, never an internal error, whichever command reads it."""
    config = _config(tmp_path, _judge(url))
    args = ["check", "--config", str(config)] if command == "check" else [
        "run", "--config", str(config), "--output", "r.json"]  # fmt: skip
    result = _cli(args, tmp_path)
    assert 1 == result.returncode, result
    assert "judge.url" in result.stderr + result.stdout
    assert "internal error" not in result.stderr


@pytest.mark.parametrize(
    ("section", "where"),
    [
        (_judge("http://127.0.0.1:9/v1", 'headers = { X-Key = "${CHECK_VALUE}" }\n'), "judge"),
        ('[otlp]\nenabled = true\nheaders = { X-Key = "${CHECK_VALUE}" }\n', "otlp"),
        ('[server]\ntoken = "${CHECK_VALUE}"\n', "server"),
    ],
    ids=["judge-headers", "otlp-headers", "server-token"],
)
@pytest.mark.parametrize("value", ["bad\r\nInjected: 1", None], ids=["control", "unset"])
def test_check_refuses_what_serve_would_refuse(
    tmp_path: Path, section: str, where: str, value: str | None
) -> None:
    """A control character in, or an unset variable behind, the judge's headers, the OTLP
    headers or the server token: ``check`` exits 1 naming the section, without echoing it."""
    config = _config(tmp_path, section)
    env = {} if value is None else {"CHECK_VALUE": value}
    result = _cli(["check", "--config", str(config)], tmp_path, **env)
    out = result.stdout + result.stderr
    assert 1 == result.returncode, out
    assert where in out
    assert "Injected" not in out
    assert "internal error" not in out


def _gate_with_junit(tmp: Path, junit: Path) -> subprocess.CompletedProcess[str]:
    answer = {"answer": "fact0", "retrieved": [{"id": "d0"}], "citations": [1]}
    (tmp / "golden.jsonl").write_text(GOLDEN, "utf-8")
    with LoopbackServer(lambda _r: Reply(body=answer)) as target:
        ran = _cli(["run", "--dataset", "golden.jsonl", "--target-url", target.url,
                    "--output", "r.json"], tmp)  # fmt: skip
    assert 0 == ran.returncode, ran.stderr
    return _cli(
        ["gate", "--baseline", "r.json", "--candidate", "r.json", "--junit", str(junit)], tmp
    )


def test_gate_junit_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    """``--junit`` at a symlink to another file (the audit's reproduction, F18): the link is
    replaced by the JUnit file, the file it pointed to is untouched."""
    elsewhere = tmp_path / "precious.txt"
    elsewhere.write_text("keep me\n", "utf-8")
    junit = tmp_path / "gate.xml"
    junit.symlink_to(elsewhere)
    result = _gate_with_junit(tmp_path, junit)
    assert 0 == result.returncode, result.stderr
    assert "keep me\n" == elsewhere.read_text("utf-8")
    assert not junit.is_symlink()
    assert junit.read_text("utf-8").startswith("<?xml")


def test_gate_junit_at_a_fifo_does_not_hang(tmp_path: Path) -> None:
    """The variant: ``--junit`` at a FIFO nobody reads (a plain write waits for a reader
    for ever): the FIFO is replaced and the gate ends."""
    junit = tmp_path / "gate.xml"
    os.mkfifo(junit)
    try:
        result = _gate_with_junit(tmp_path, junit)
    finally:
        if junit.is_fifo():  # a gate stuck on it: let it go
            threading.Thread(target=lambda: junit.read_bytes(), daemon=True).start()
    assert 0 == result.returncode, result.stderr
    assert junit.is_file() and junit.read_text("utf-8").startswith("<?xml")

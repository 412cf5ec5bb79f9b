"""A target URL given whole on the command line keeps its secret-named query values home
(issue 38.6): ``probe --target-url 'http://host/rag?api_key=...&sig=...'`` shows them as
``***``, as does a ``?code=`` key in a configured target's url."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.secret_forms import leaked_forms

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))
KEY = "ak-5ecret/Query+77"
SIG = "sg-5ecret=Query9"
ANSWER = {"answer": "fact0", "retrieved": [{"id": "d0", "text": "fact0"}], "citations": [1]}


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )  # fmt: skip


def test_probe_masks_api_key_and_sig_of_a_target_url(tmp_path: Path) -> None:
    """The audit's reproduction: probe printed the request line with both values."""
    with LoopbackServer(lambda _r: Reply(body=ANSWER)) as target:
        url = f"{target.url}?api_key={KEY}&sig={SIG}&lang=en"
        result = _cli(["probe", "--target-url", url, "--question", "q0"], tmp_path)
        sent = target.request_lines
    assert 0 == result.returncode, result.stderr
    assert f"?api_key={KEY}&sig={SIG}&lang=en" in sent[0]  # the target did get them
    assert "?api_key=***&sig=***&lang=en" in result.stdout
    assert [] == leaked_forms(result.stdout + result.stderr, {"key": KEY, "sig": SIG})


def test_probe_masks_a_function_key_in_a_configured_url(tmp_path: Path) -> None:
    """The variant: an Azure Functions ``?code=`` key in a ``[[targets]]`` url, through
    ``probe --target-config``."""
    with LoopbackServer(lambda _r: Reply(body=ANSWER)) as target:
        (tmp_path / "targets.toml").write_text(
            f'[[targets]]\nname = "fn"\nurl = "{target.url}?code={KEY}"\n', "utf-8"
        )
        result = _cli(["probe", "--target-config", "targets.toml", "--question", "q0"], tmp_path)
    assert 0 == result.returncode, result.stderr
    assert "?code=***" in result.stdout
    assert [] == leaked_forms(result.stdout + result.stderr, {"key": KEY})

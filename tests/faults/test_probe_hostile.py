"""``evaluator probe`` reads a target's hostile body through the border (issue 24.1): JSON
nested 100,000 deep ends in a clean error, never ``internal error: RecursionError``, and a
body's control characters are shown escaped, never sent to the terminal."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import EVALUATOR

pytestmark = pytest.mark.e2e

_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _probe(tmp_path: Path, raw: bytes) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    with LoopbackServer(lambda _request: Reply(raw=raw)) as server:
        return subprocess.run(
            [EVALUATOR, "probe", "--target-url", server.url, "--question", "q"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
        )  # fmt: skip


@pytest.mark.parametrize("depth", [100_000, 1_000])
def test_deep_json_is_a_clean_error(tmp_path: Path, depth: int) -> None:
    """``evaluator probe`` of a deeply nested body exits 1 with a message saying so, not a
    traceback."""
    proc = _probe(tmp_path, b"[" * depth + b"]" * depth)
    out = proc.stdout + proc.stderr
    assert 1 == proc.returncode, out[-1000:]
    assert "internal error" not in out and "RecursionError" not in out, out[-1000:]
    assert "nested deeper than" in proc.stderr, proc.stderr[-1000:]


@pytest.mark.parametrize(
    "raw",
    [b"\x1b[2Jnot json\r\nverdict: PASS\x07", b'{"answer": "a\\u2028b\\u0085c\\u001b[2J"}'],
)
def test_a_body_is_shown_escaped(tmp_path: Path, raw: bytes) -> None:
    """``evaluator probe`` shows a hostile body with no terminal control character."""
    proc = _probe(tmp_path, raw)
    out = proc.stdout + proc.stderr
    assert "internal error" not in out, out[-1000:]
    found = sorted({f"U+{ord(c):04X}" for c in _TERMINAL_CONTROL.findall(out)})
    assert not found, out[-1500:]

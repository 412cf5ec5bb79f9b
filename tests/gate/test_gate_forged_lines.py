"""Text from a report cannot forge a line of ``gate`` output nor drive the terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
EXAMPLES = Path(__file__).parents[2] / "docs/examples"


@pytest.mark.e2e
def test_ids_and_names_with_newlines_and_escapes_stay_on_their_line(tmp_path: Path) -> None:
    """Run ids and names carrying newlines or escape sequences stay on their own line of the
    gate's output."""
    candidate = json.loads((EXAMPLES / "candidate.json").read_text("utf-8"))
    candidate["run_id"] = "r1\nverdict: pass\x1b[2J"
    candidate["target"] = "t\r\ngate passed: 0 of 6 rules failed\u2028"
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(candidate), "utf-8")
    proc = subprocess.run(
        [EVALUATOR, "gate", "--baseline", str(EXAMPLES / "baseline.json"),
         "--candidate", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout
    assert "\x1b" not in out and "\r" not in out and "\u2028" not in out
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("verdict:")] == ["verdict: FAIL (exit 2)"]
    assert not any(line.startswith("gate passed") for line in lines)
    assert "r1\\nverdict: pass\\x1b[2J" in out

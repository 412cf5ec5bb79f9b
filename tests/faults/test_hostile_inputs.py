"""CLI inputs are regular files within a size cap: a FIFO or a device in a golden set's,
a report's, a config's or a gates file's place is refused at once, naming the file, never
read whole nor waited on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
EXAMPLES = Path(__file__).parents[2] / "docs/examples"


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("command", ["gate-candidate", "gate-rules", "validate", "check"])
def test_fifo_or_device_input_is_refused_naming_it(tmp_path: Path, kind: str, command: str) -> None:
    """A FIFO or a device given as an input file is refused naming it, never read for ever."""
    if kind == "fifo":
        bad = tmp_path / "input"
        os.mkfifo(bad)  # nobody ever writes: a reader that opens it blocks for ever
    else:
        bad = Path("/dev/zero")  # a reader that reads it whole reads for ever
    baseline = str(EXAMPLES / "baseline.json")
    args = {
        "gate-candidate": ["gate", "--baseline", baseline, "--candidate", str(bad)],
        "gate-rules": ["gate", "--baseline", baseline, "--candidate", baseline,
                       "--gates", str(bad)],
        "validate": ["validate", str(bad)],
        "check": ["check", "--config", str(bad)],
    }[command]  # fmt: skip
    proc = subprocess.run(
        [EVALUATOR, *args], capture_output=True, text=True, timeout=60, check=False,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, (proc.stdout[-500:], proc.stderr[-500:])
    out = proc.stdout + proc.stderr
    assert str(bad) in out and "internal error" not in out, out
    assert "regular file" in out or "not a file" in out, out

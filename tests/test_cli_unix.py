"""The command line as a Unix tool: a closed pipe, where logs go, ``NO_COLOR``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gate.factories import EXERCISE_BASELINE, EXERCISE_CANDIDATE, summary_report, write

EXE = str(Path(sys.executable).with_name("evaluator"))


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}


def _into_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``evaluator ARGS`` with stdout a pipe whose reading end is already closed, as
    ``evaluator ... | head -0`` leaves it once ``head`` is done."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [EXE, *args],
            cwd=cwd,
            env=_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.e2e
class TestClosedPipe:
    def test_failing_gate_into_a_closed_pipe_exits_2_quietly(self, tmp_path: Path) -> None:
        """A failing gate whose output pipe is closed exits 2 with nothing on stderr."""
        baseline = write(tmp_path / "b.json", summary_report(EXERCISE_BASELINE))
        candidate = write(tmp_path / "c.json", summary_report(EXERCISE_CANDIDATE))
        proc = _into_closed_pipe(
            "gate", "--baseline", str(baseline), "--candidate", str(candidate), cwd=tmp_path
        )
        assert 2 == proc.returncode, proc.stderr
        assert "" == proc.stderr

    def test_passing_gate_into_a_closed_pipe_exits_0_quietly(self, tmp_path: Path) -> None:
        """A passing gate whose output pipe is closed exits 0 with nothing on stderr."""
        baseline = write(tmp_path / "b.json", summary_report(EXERCISE_BASELINE))
        proc = _into_closed_pipe(
            "gate", "--baseline", str(baseline), "--candidate", str(baseline), cwd=tmp_path
        )
        assert 0 == proc.returncode, proc.stderr
        assert "" == proc.stderr

    def test_help_into_a_closed_pipe(self, tmp_path: Path) -> None:
        """``--help`` into a closed pipe exits 0 quietly."""
        proc = _into_closed_pipe("gate", "--help", cwd=tmp_path)
        assert 0 == proc.returncode, proc.stderr
        assert "" == proc.stderr

    def test_validate_into_a_closed_pipe(self, tmp_path: Path) -> None:
        """``evaluator validate`` into a closed pipe keeps its exit code, with no BrokenPipe
        trace."""
        data = Path(__file__).parent / "data"
        ok = _into_closed_pipe("validate", str(data / "valid.jsonl"), cwd=tmp_path)
        bad = _into_closed_pipe("validate", str(data / "invalid.jsonl"), cwd=tmp_path)
        assert (0, "") == (ok.returncode, ok.stderr)
        assert 1 == bad.returncode
        assert "BrokenPipe" not in bad.stderr


class TestHelp:
    def test_every_flag_of_every_command_has_help(self) -> None:
        """``evaluator demo --help`` (and every other command's) explains each flag."""
        import argparse

        from evaluator.cli import build_parser

        parser = build_parser(every=True)
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        missing = [
            f"{name} {'/'.join(action.option_strings)}"
            for name, command in sub.choices.items()
            for action in command._actions
            if action.option_strings and not (action.help and action.help.strip())
        ]
        assert [] == missing

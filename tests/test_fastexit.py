"""The console script's early exit: outputs flushed, atexit honoured, teardown skipped; never
in an embedding process, never while another thread runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaluator import cli, fastexit
from tests.benchmarks.support import REPO, golden_set_bytes

_PRELUDE = """
import atexit, sys, threading, time
from evaluator import fastexit

class Loud:
    def __del__(self):
        print("freed", flush=True)

atexit.register(lambda: print("atexit ran"))
"""


def _python(body: str) -> subprocess.CompletedProcess[str]:
    code = _PRELUDE + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO
    )


def test_leave_flushes_runs_atexit_and_skips_the_teardown() -> None:
    done = _python(
        """
        fastexit.arm()
        fastexit.keep(Loud())
        print("unflushed", end="")
        sys.stderr.write("to stderr")
        fastexit.leave(3)
        print("not reached")
        """
    )
    assert done.returncode == 3
    assert done.stdout == "unflushedatexit ran\n"  # nothing freed one by one, nothing after
    assert done.stderr == "to stderr"


def test_leave_steps_aside_while_another_thread_runs() -> None:
    done = _python(
        """
        fastexit.arm()
        threading.Thread(target=time.sleep, args=(0.3,)).start()
        fastexit.leave(3)
        print("returned")
        """
    )
    assert done.returncode == 0  # the normal exit: it waited for the thread
    assert done.stdout.startswith("returned\n")
    assert "atexit ran" in done.stdout


@pytest.mark.parametrize("hook", ["sys.setprofile", "sys.settrace"])
def test_leave_steps_aside_for_a_profiler_or_tracer(hook: str) -> None:
    done = _python(
        f"""
        fastexit.arm()
        {hook}(lambda *args: None)
        fastexit.leave(3)
        {hook}(None)
        print("returned")
        """
    )
    assert done.returncode == 0
    assert done.stdout.startswith("returned\n")


def test_unarmed_leave_returns_and_keep_holds_nothing() -> None:
    done = _python(
        """
        fastexit.keep(Loud())
        fastexit.leave(3)
        print("returned")
        """
    )
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["freed", "returned", "atexit ran"]


def test_main_called_with_arguments_never_arms(tmp_path: Path) -> None:
    golden = tmp_path / "g.jsonl"
    golden.write_bytes(golden_set_bytes(3))
    assert cli.main(["validate", str(golden)]) == 0
    assert not fastexit.armed()


@pytest.mark.e2e
@pytest.mark.parametrize("entry", ["script", "module"])
def test_a_run_from_the_command_line_writes_everything(tmp_path: Path, entry: str) -> None:
    golden = tmp_path / "g.jsonl"
    golden.write_bytes(golden_set_bytes(200))
    output = tmp_path / "r.json"
    command = [str(Path(sys.executable).with_name("evaluator"))]
    if entry == "module":
        command = [sys.executable, "-m", "evaluator"]
    flags = ["--target", "tests.benchmarks.support:answer", "--output", str(output)]
    done = subprocess.run(
        [*command, "run", "--dataset", str(golden), "--worst", "150", *flags],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f"report: {output}")  # all of it, through a pipe
    assert len(json.loads(output.read_bytes())["cases"]) == 200

"""`evaluator run` of a callable target loads no HTTP stack, no structlog, no scheduler."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.benchmarks.support import REPO

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e


def test_a_callable_run_does_not_import_what_it_never_uses() -> None:
    """Running a callable target imports no HTTP client, scheduler or logging stack: a callable run
    starts light."""
    code = (
        "import sys\n"
        "import evaluator.cli, evaluator.commands.run\n"
        "from evaluator.config import CallableTargetConfig\n"
        "from evaluator.factory import build_target\n"
        "build_target(CallableTargetConfig(callable='tests.benchmarks.support:answer'))\n"
        "heavy = ('aiohttp', 'yarl', 'structlog', 'rich', 'apscheduler',\n"
        "         'evaluator.targets.http', 'evaluator.logs')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

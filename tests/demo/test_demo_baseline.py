"""`make demo` records its first complete run as the baseline: a failure mode switched on
turns the status page red within two runs, with the reason in words.

The demo runs as a subprocess from the source tree on free loopback ports (the fixtures of
test_demo_command.py); "within two runs" is counted in runs (``rag_eval_runs_total``), not
seconds: once two runs have finished since the switch, the page must be red.
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path

import httpx
import pytest

from evaluator.commands.demo_stack import BASELINE_FILE, DEMO_GATES
from evaluator.gate.rules import read_gates
from evaluator.report import read_report
from tests.demo.test_demo_command import GOLDEN_SET, Demo, _golden_set_size, run_demo

pytestmark = pytest.mark.e2e


def _runs(demo: Demo) -> int:
    """Runs the daemon finished, whatever their outcome."""
    return round(sum(v for _, v in demo.samples().get("rag_eval_runs_total", [])))


def _until_runs(demo: Demo, count: int, timeout: float = 120.0) -> None:
    """Wait until ``count`` runs have finished (bounded; the interval is 5 s)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.TransportError):
            if _runs(demo) >= count:
                return
        assert demo.proc.poll() is None, demo.diagnostics()
        assert time.monotonic() < deadline, f"fewer than {count} runs\n{demo.diagnostics()}"
        time.sleep(0.2)


def _page(demo: Demo) -> tuple[str, str]:
    """The job's state and its whole section's text (tags stripped)."""
    html = demo.get("/").text
    state = re.search(r'<section class="job" data-state="(\w+)"', html)
    assert state is not None, html[:2000]
    return state[1], re.sub(r"<[^>]+>", " ", html)


def test_the_first_complete_run_is_the_baseline_and_a_failure_mode_turns_red(
    tmp_path: Path,
) -> None:
    """The demo saves its first complete run as the baseline, gates later runs against it, and a
    failure mode of the reference service turns the job red."""
    # the golden set's job alone: the conversations' baseline is tests/demo/test_demo_command's
    with run_demo(tmp_path, "--no-conversations", prometheus=False) as demo:
        reports = demo.stdout_path.parent / "reports"
        baseline = reports / BASELINE_FILE
        assert f"baseline               {baseline}, the first complete run" in demo.banner()
        report = read_report(baseline)
        assert (_golden_set_size(), 0) == (report.case_count, report.error_count)
        assert GOLDEN_SET.stem == report.dataset

        # the daemon's first run is gated against it, by the demo's rules, and passes
        demo.wait_for_complete_run()
        (passing,) = demo.samples()["rag_eval_gate_passing"]
        assert 1.0 == passing[1]
        state, text = _page(demo)
        assert "red" != state and "gate against the baseline fails" not in text
        # no change: green, or amber for the demo judge alone (the README says so)
        reason = re.search(r'<p class="reason">([^<]*)</p>', demo.get("/").text)
        assert reason is not None
        assert state == "green" or reason[1].startswith("judge: uncalibrated"), reason[1]
        assert '<ul class="reasons">' not in demo.get("/").text

        base = f"http://127.0.0.1:{demo.rag_port}"
        flipped = httpx.put(
            f"{base}/admin/failure-modes", json={"modes": ["rerank_degraded"]}, timeout=10
        )
        assert 200 == flipped.status_code
        # counted after the switch: a run finishing in between may have been healthy all
        # through; the run in flight at the switch counts as one of the two
        before = _runs(demo)
        _until_runs(demo, before + 2)
        state, text = _page(demo)

        assert "red" == state, text[:3000]
        # one of the demo's gate rules says which: rerank moves MRR
        assert "mrr.max_drop" in {r.key for r in read_gates(DEMO_GATES).rules}
        assert re.search(r"gate against the baseline fails: [\w., ]*mrr\.max_drop", text), text
        assert "Change began at run" in text
        code, _ = demo.ctrl_c()
        assert 0 == code

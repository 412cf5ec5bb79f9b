"""Incidents dated right, on a real ``evaluator serve`` against a scripted service.

An earlier incident (runs 5-6) happened to fix a case that fails otherwise; it ends at run 7,
and a new incident breaks another case from run 9. The case the first incident fixed is not
"newly failing" when that incident ends, and the status page dates the change to run 9, the
first run of the current change, not to run 7, where the earlier incident was fixed.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

STABLE = [f"stable{i}" for i in range(8)]
CASES = [*STABLE, "healer", "victim"]
#: the runs of the earlier incident, which made ``healer`` pass
INCIDENT = (5, 6)
#: ``victim`` fails from this run on
BREAK_AT = 9


class Script:
    """One request per case and run (no retries): the run number is the case's count.

    The first request of runs 11 and 12 waits for the test's word (:attr:`held`), so the
    daemon stays at run 10, then 11, for as long as the test looks at it, however slow the
    machine (the service answers on one event loop: the whole run waits)."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.held = {run: threading.Event() for run in (11, 12)}

    def release(self) -> None:
        """Let every held run go (the test is done looking, or failed)."""
        for event in self.held.values():
            event.set()

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The scripted answer to a case by its name: the healer right only during the incident,
        the victim wrong from a run on, the others right."""
        case = str(request["question"])
        with self.lock:
            self.seen[case] += 1
            run = self.seen[case]
        if run in self.held:
            self.held[run].wait(timeout=60)
        good = {"answer": f"the fact of {case}", "retrieved": [{"id": f"doc-{case}"}]}
        bad = {"answer": "no idea", "retrieved": [{"id": "elsewhere"}]}
        if case == "healer":
            return Reply(good if run in INCIDENT else bad)
        if case == "victim":
            return Reply(bad if run >= BREAK_AT else good)
        return Reply(good)


def _config(root: Path, url: str) -> Path:
    golden = root / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps(
                {
                    "id": c,
                    "question": c,
                    "relevant_ids": [f"doc-{c}"],
                    "expected_facts": [f"fact of {c}"],
                }
            )
            + "\n"
            for c in CASES
        ),
        "utf-8",
    )
    path = root / "evaluator.toml"
    path.write_text(
        f"""
reports_dir = "{root / "reports"}"
log_format = "json"

[history]
window = 6
recent = 2

[[targets]]
name = "loop"
url = "{url}"
retry = {{ retries = 0 }}

[[jobs]]
target = "loop"
dataset = "{golden}"
dataset_label = "golden"
interval_seconds = 1.0
""",
        "utf-8",
    )
    return path


def _run_ids(daemon: DaemonProcess) -> list[str]:
    return [e["run_id"] for e in daemon.logs() if e.get("event") == "run"]


def _victim_failures(cases: dict[str, Any]) -> int:
    """How many runs of the history's window ``victim`` failed in (0 before any history)."""
    for case in cases.get("cases", []):
        if case["id"] == "victim":
            return sum(1 for v in case["verdicts"] if v is False)
    return 0


def _settled_at(daemon: DaemonProcess, run: int, deadline: float) -> tuple[dict[str, Any], str]:
    """The job's ``/cases`` and status page once its history holds run ``run`` (the next run
    is held back by the script, so nothing moves while the test reads)."""
    while time.monotonic() < deadline:
        if len(_run_ids(daemon)) >= run:
            cases = daemon.get("/cases").json()
            # victim fails from BREAK_AT on: its failures in the window say which run it holds
            if _victim_failures(cases) == run - BREAK_AT + 1:
                return cases, daemon.get("/").text
        time.sleep(0.1)
    raise AssertionError(f"the daemon's history never held run {run}")


def test_an_earlier_incident_neither_makes_cases_newly_failing_nor_dates_the_new_one(
    tmp_path: Path,
) -> None:
    """At runs 10 and 11, ``healer`` (fixed only by the earlier incident) is not newly
    failing, ``victim`` is, and the page says the change began at run 9."""
    seen: list[tuple[int, dict[str, Any], str]] = []
    script = Script()
    with LoopbackServer(script) as server:
        daemon = DaemonProcess(["--config", str(_config(tmp_path, server.url))], workdir=tmp_path)
        daemon.start()
        try:
            daemon.wait_ready()
            deadline = time.monotonic() + 120
            for run in (10, 11):
                cases, page = _settled_at(daemon, run, deadline)
                seen.append((run, cases, page))
                script.held[run + 1].set()
            runs = _run_ids(daemon)
        finally:
            script.release()
            result = daemon.stop()
    assert 0 == result.returncode, result.stderr
    assert [10, 11] == [n for n, _, _ in seen]
    for n, cases, page in seen:
        assert (n, ["victim"]) == (n, cases["newly_failing"])
        began = re.search(r'Change began at run <a class="id" href="[^"]*">([0-9a-f]+)</a>', page)
        assert began is not None
        assert (n, runs[BREAK_AT - 1]) == (n, began.group(1))

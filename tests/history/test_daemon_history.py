"""A real ``evaluator serve`` against a scripted endpoint: classes, gauges, /cases, drift.

The endpoint holds six stable cases, one that flips every run, one that always fails and
one that breaks at its tenth run. After the window fills every case is classed right, the
gauges and /cases agree, and only the break raises the significant-shift signal. A restart
keeps the history; a store file overwritten with garbage is moved aside and replaced while
the daemon keeps running.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

STABLE = [f"stable{i}" for i in range(6)]
CASES = [*STABLE, "flip", "dead", "broken"]
#: the broken case answers wrong and retrieves nothing from its tenth run on
BREAK_AT = 10
LABELS = {"target": "loop", "dataset": "golden"}


class Script:
    """Counts the requests per question: one request per case and run (no retries)."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The scripted answer to a case by its name: always wrong, flipping every run, wrong
        from a run on, or right."""
        case = str(request["question"])
        with self.lock:
            self.seen[case] += 1
            run = self.seen[case]  # 1-based
        good = {"answer": f"the fact of {case}", "retrieved": [{"id": f"doc-{case}"}]}
        bad = {"answer": "no idea", "retrieved": [{"id": "elsewhere"}]}
        if case == "dead":
            return Reply(bad)
        if case == "flip":
            return Reply(good if run % 2 else bad)
        if case == "broken":
            return Reply(bad if run >= BREAK_AT else good)
        return Reply(good)


def _golden(path: Path) -> Path:
    lines = [
        {"id": c, "question": c, "relevant_ids": [f"doc-{c}"], "expected_facts": [f"fact of {c}"]}
        for c in CASES
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return path


def _config(root: Path, url: str) -> Path:
    path = root / "evaluator.toml"
    path.write_text(
        f"""
reports_dir = "{root / "reports"}"
log_format = "json"

[history]
window = 10
recent = 3

[[targets]]
name = "loop"
url = "{url}"
retry = {{ retries = 0 }}

[[jobs]]
target = "loop"
dataset = "{_golden(root / "golden.jsonl")}"
dataset_label = "golden"
interval_seconds = 0.4
""",
        "utf-8",
    )
    return path


def _gauges(daemon: DaemonProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(daemon.get("/metrics").text):
        for s in family.samples:
            labels = {k: v for k, v in s.labels.items() if k not in LABELS}
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def _runs(daemon: DaemonProcess) -> int:
    return sum(1 for e in daemon.logs() if e.get("event") == "run")


def _wait(condition: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_scripted_history_end_to_end(tmp_path: Path) -> None:
    """A real daemon over a scripted service: the history store, /cases and `evaluator history`
    follow the cases through passing, breaking and recovering."""
    script = Script()
    with LoopbackServer(script) as server:
        config = _config(tmp_path, server.url)
        daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path / "first").start()
        try:
            daemon.wait_ready()
            seen_significant: list[tuple[int, dict[str, Any]]] = []
            classed: dict[str, Any] | None = None
            # watch every state from the first run until the break is a few runs old
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                response = daemon.get("/cases")
                if response.status_code == 200:
                    data = response.json()
                    drift = data["drift"]
                    runs = script.seen["broken"]
                    if drift is not None and drift["significant"]:
                        seen_significant.append((runs, drift))
                    window_full = data["runs_in_window"] == 10
                    broken_failing = data["counts"]["newly_failing"] == 1
                    if window_full and broken_failing and classed is None:
                        classed = data
                        metrics = _gauges(daemon)
                if classed is not None and script.seen["broken"] >= BREAK_AT + 4:
                    break
                time.sleep(0.05)
            assert classed is not None, "the window never filled"
            classes = {c["id"]: c["class"] for c in classed["cases"]}
            assert classes == {
                **dict.fromkeys(STABLE, "stable_pass"),
                "flip": "flaky",
                "dead": "stable_fail",
                "broken": "newly_failing",
            }
            assert (classed["flaky"], classed["newly_failing"]) == (["flip"], ["broken"])
            assert classed["stable_fail"] == ["dead"]
            flip = next(c for c in classed["cases"] if c["id"] == "flip")
            assert flip["flips"] == 9 and flip["pass_rate"] == 0.5
            # gauges: counts per class, no case id anywhere in them
            for name, count in classed["counts"].items():
                assert metrics[("rag_eval_stability_cases", (("class", name),))] == count
            assert metrics[("rag_eval_history_window_runs", ())] == 10
            # the signal: raised, only ever for the broken case, never before it broke
            assert seen_significant, "the break never raised the significant-shift signal"
            for runs_of_broken, drift in seen_significant:
                assert runs_of_broken >= BREAK_AT + 2  # three failed runs make it significant
                for check in ("answer", "hit"):
                    assert drift["checks"][check]["dropped"] in ([], ["broken"])
                assert drift["checks"]["answer"]["dropped"] == ["broken"]
            warnings = [e for e in daemon.logs() if e.get("event") == "drift_significant"]
            assert warnings and all(
                set(e["checks"]["answer"]["dropped"]) == {"broken"} for e in warnings
            )
            text = daemon.get("/metrics").text
            assert "broken" not in text and "flip" not in text.replace("flips", "")
            # the 14th request is seen before its run is logged: wait for its log line
            before = _wait(lambda: (n := _runs(daemon)) >= BREAK_AT + 4 and n, 30, "the 14th run")
        finally:
            result = daemon.stop()
        assert result.returncode == 0, result.stderr

        # a restart keeps the history: /cases answers from the store before any new run
        second = DaemonProcess(["--config", str(config)], workdir=tmp_path / "second").start()
        try:
            second.wait_ready()
            restored = second.get("/cases").json()
            assert restored["runs_in_window"] == 10
            assert {c["id"]: c["class"] for c in restored["cases"]}["flip"] == "flaky"
            assert before >= 14
            # the store is overwritten with garbage: reported, moved aside, replaced
            store = tmp_path / "reports" / "history.sqlite3"
            store.write_bytes(b"not a database at all " * 512)
            second.wait_for_log(lambda e: e.get("event") == "history_store_corrupt", 30)
            key = ("rag_eval_history_errors_total", (("kind", "corrupt"),))
            _wait(lambda: _gauges(second)[key] >= 1, 30, "the corrupt store to be counted")
            # the fresh store holds only the runs since: the history started again
            _wait(
                lambda: 1 <= second.get("/cases").json()["runs_in_window"] < 10,
                30,
                "history to restart after the corrupt file",
            )
            assert second.get("/healthz").status_code == 200
            assert list(store.parent.glob("history.sqlite3.corrupt-*"))
        finally:
            result = second.stop()
        assert result.returncode == 0, result.stderr

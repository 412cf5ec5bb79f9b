"""SIGHUP follows Prometheus's convention: reload configuration and golden sets, keep the
old ones on error, log and count each reload, never die (it used to exit 129).

A real ``evaluator serve`` with a config file: the file gains a second job and SIGHUP
brings it in; then a broken file, then a broken golden set, are rejected with the old jobs
running on; a last good file drops the second job again.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e


def _answer(request: dict[str, object]) -> Reply:
    return Reply({"answer": "fact", "retrieved": [{"id": "d0"}], "citations": [1]})


def _write(config: Path, url: str, datasets: list[Path], extra: str = "") -> None:
    jobs = "".join(
        f'[[jobs]]\ntarget = "loop"\ndataset = "{d}"\ninterval_seconds = 0.5\n' for d in datasets
    )
    config.write_text(
        f'reports_dir = "{config.parent / "reports"}"\n'
        f'[[targets]]\nname = "loop"\nurl = "{url}"\n{extra}\n{jobs}',
        "utf-8",
    )


def _samples(daemon: DaemonProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = daemon.get("/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(daemon: DaemonProcess, name: str, **labels: str) -> float | None:
    return _samples(daemon).get((name, tuple(sorted(labels.items()))))


def _until(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def test_sighup_reloads_and_keeps_the_old_config_on_error(tmp_path: Path) -> None:
    """SIGHUP reloads a good configuration and keeps the old one, counted, on a bad one."""
    case = {"id": "c0", "question": "q0", "relevant_ids": ["d0"], "expected_facts": ["fact"]}
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    for path in (first, second):
        path.write_text(json.dumps(case) + "\n", "utf-8")
    config = tmp_path / "evaluator.toml"
    with LoopbackServer(_answer) as server:
        _write(config, server.url, [first])
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            assert 1.0 == _value(daemon, "rag_eval_config_last_reload_successful")
            runs = "rag_eval_runs_total"
            second_job = {"target": "loop", "dataset": "second", "outcome": "complete"}

            # 1. a second job comes in
            _write(config, server.url, [first, second])
            daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            _until(lambda: (_value(daemon, runs, **second_job) or 0) >= 1)
            assert 1.0 == _value(daemon, "rag_eval_config_reload_total", result="success")

            # 2. a broken file: rejected, both jobs run on
            config.write_text("[[targets]\nurl = ", "utf-8")
            daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            _until(lambda: 1.0 == _value(daemon, "rag_eval_config_reload_total", result="failure"))
            assert 0.0 == _value(daemon, "rag_eval_config_last_reload_successful")
            before = _value(daemon, runs, **second_job) or 0
            _until(lambda: (_value(daemon, runs, **second_job) or 0) > before)

            # 3. a good file naming a broken golden set: rejected too
            second.write_text('{"id": "c0"\n', "utf-8")
            _write(config, server.url, [first, second], extra="timeout_seconds = 7")
            daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            _until(lambda: 2.0 == _value(daemon, "rag_eval_config_reload_total", result="failure"))

            # 4. a good file again: the second job is dropped, its series withdrawn
            _write(config, server.url, [first])
            daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            _until(lambda: 2.0 == _value(daemon, "rag_eval_config_reload_total", result="success"))
            assert 1.0 == _value(daemon, "rag_eval_config_last_reload_successful")
            assert _value(daemon, runs, **second_job) is None
            assert daemon.get("/healthz").status_code == 200
            result = daemon.stop()
    assert 0 == result.returncode
    events = [e.get("event") for e in result.logs]
    assert 4 == events.count("config_reload_requested")
    failures = [e for e in result.logs if e.get("event") == "config_reload_failed"]
    assert 2 == len(failures)
    assert "invalid TOML" in failures[0]["error"]
    assert "second.jsonl" in failures[1]["error"]
    assert 2 == events.count("config_reloaded")


def _slo(name: str, objective: str, job: str = "loop") -> str:
    return (
        f'[[slos]]\nname = "{name}"\njob = "{job}"\nsli = "answer_correct"\n'
        f'objective = {objective}\nwindow = "1d"\n'
    )


def _failed_reloads(daemon: DaemonProcess) -> float:
    return _value(daemon, "rag_eval_config_reload_total", result="failure") or 0.0


def test_a_bad_slo_on_reload_keeps_the_running_slos(tmp_path: Path) -> None:
    """SIGHUP with an SLO that names no job, then one whose objective is 1: both rejected
    naming the field, the running SLO counting on; a good file brings a second SLO in, at
    zero, beside the first with its counts."""
    case = {"id": "c0", "question": "q0", "relevant_ids": ["d0"], "expected_facts": ["fact"]}
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(case) + "\n", "utf-8")
    config = tmp_path / "evaluator.toml"
    events = "rag_eval_slo_events_total"
    labels = {"target": "loop", "dataset": "golden", "outcome": "good"}
    with LoopbackServer(_answer) as server:
        _write(config, server.url, [golden], extra=_slo("answers", "0.9"))
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            _until(lambda: (_value(daemon, events, slo="answers", **labels) or 0) >= 1)
            for bad in (_slo("more", "0.9", job="nope"), _slo("more", "1")):
                failures = _value(daemon, "rag_eval_config_reload_total", result="failure") or 0
                _write(config, server.url, [golden], extra=_slo("answers", "0.9") + bad)
                daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
                _until(lambda: _failed_reloads(daemon) == failures + 1)  # noqa: B023
                before = _value(daemon, events, slo="answers", **labels) or 0
                _until(lambda: (_value(daemon, events, slo="answers", **labels) or 0) > before)  # noqa: B023
                assert _value(daemon, events, slo="more", **labels) is None
            _write(config, server.url, [golden], extra=_slo("answers", "0.9") + _slo("more", "0.8"))
            daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            _until(lambda: _value(daemon, "rag_eval_slo_objective", slo="more") == 0.8)
            assert (_value(daemon, events, slo="answers", **labels) or 0) >= 2
            result = daemon.stop()
    assert 0 == result.returncode
    errors = [e["error"] for e in result.logs if e.get("event") == "config_reload_failed"]
    assert 2 == len(errors)
    assert "slos.1.job: no job named 'nope'" in errors[0]
    assert "slos.1.objective: Input should be less than 1" in errors[1]

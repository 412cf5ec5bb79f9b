"""Answers of alternating combining marks stay within the loop-time bound (issue 38.7).

NFKC puts a run of non-starters in canonical order by insertion: 65,536 alternating U+0301
(class 230) and U+0316 (class 220), a legal answer within the scored length, took seconds of
the scoring thread, holding the interpreter (and so the event loop) for each NFKC call:
``/healthz`` answered after 5 s. Normalisation now makes text stream-safe first (UAX #15).

A real ``evaluator serve`` runs a job whose target answers that text (and a variant: runs of
29 marks separated by spaces, which folding joins into one run), and the same job judged: the
judge is sent the answer and quotes it back as its claims, which the report, the pages and the
next run's judged pass read. ``/healthz`` is polled from a process of its own, as the fuzz tier
does.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.invariants import healthz_violations
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"], "expected_facts": ["fact"]}
    for i in range(3)
]
ANSWERS = {
    # the audit's reproduction: one run of 65,536 alternating marks
    "alternating": "e" + "\u0301\u0316" * 32_768,
    # the variant: runs of 29 (each under the bound) that folding joins (it drops spaces)
    "joined-by-folding": ("\u0301\u0316" * 14 + "\u0301 ") * 2_180,
}


#: runs observed while /healthz is polled, and polls at least
RUNS = 3
POLLS = 20


def _config(tmp_path: Path, url: str, judge_url: str | None) -> Path:
    """A job running the three cases every 0.3 s against ``url``, judged at ``judge_url``."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    config = tmp_path / "evaluator.toml"
    judge = "" if judge_url is None else f'[judge]\nurl = "{judge_url}"\nmodel = "m"\n'
    config.write_text(
        f'reports_dir = "{tmp_path / "reports"}"\n{judge}'
        f'[[targets]]\nname = "marks"\nurl = "{url}"\n'
        f'[[jobs]]\ntarget = "marks"\ndataset = "{golden}"\ninterval_seconds = 0.3\n',
        "utf-8",
    )
    return config


def _runs(daemon: DaemonProcess) -> list[dict[str, object]]:
    """The ``run`` events logged so far."""
    return [e for e in daemon.logs() if e["event"] == "run"]


def _polls(path: Path) -> list[tuple[float, float, int]]:
    """The probe's polls so far: ``(at, seconds, status)``."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [(float(a), float(b), int(c)) for a, b, c in (line.split() for line in lines)]


def _observe(daemon: DaemonProcess, polls: Path) -> None:
    """Poll /healthz from a process of its own until :data:`RUNS` runs finished after the
    first poll, and :data:`POLLS` polls were made (a minute at most)."""
    probe = subprocess.Popen(
        [sys.executable, "-m", "tests.support.healthz_probe", f"{daemon.url}/healthz", str(polls)],
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        deadline = time.monotonic() + 60
        while not _polls(polls) and time.monotonic() < deadline:
            time.sleep(0.05)
        before = len(_runs(daemon))
        while time.monotonic() < deadline:
            if len(_runs(daemon)) >= before + RUNS and len(_polls(polls)) >= POLLS:
                break
            time.sleep(0.1)
    finally:
        probe.send_signal(signal.SIGTERM)
        probe.wait(10)


@pytest.mark.parametrize("judged", [False, True], ids=["plain", "judged"])
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_combining_mark_answers_keep_healthz_prompt(
    tmp_path: Path, answer: str, judged: bool
) -> None:
    """Three runs of three such answers each (judged too): every case scored, and /healthz
    within the fuzz tier's bound (no three polls over 250 ms, none over 2 s)."""
    body = {"answer": ANSWERS[answer], "retrieved": [{"id": "d0"}], "citations": [1]}
    polls = tmp_path / "healthz.txt"
    with LoopbackServer(lambda _r: Reply(body=body)) as target, LoopbackJudge() as judge:
        config = _config(tmp_path, target.url, judge.url if judged else None)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready()
            _observe(daemon, polls)
            result = daemon.stop()
    assert 0 == result.returncode
    runs = [e for e in result.logs if e["event"] == "run"]
    assert len(runs) >= RUNS
    assert [0] * len(runs) == [e["error_count"] for e in runs]
    latencies = _polls(polls)
    assert len(latencies) >= POLLS
    assert [] == healthz_violations(latencies)

"""SIGKILL during a report write leaves the previous report readable.

A child process saves a 600-case report (about 0.6 MB) over and over through
:class:`~evaluator.daemon.report_store.ReportStore`, the daemon's own writer, and says on stdout
which run it begins and which it has finished. It is killed at random moments, 20 times;
after each kill every report in the folder must read back whole, and ``latest.json`` must
be the last finished report or the one being written, never anything older or broken.
"""

from __future__ import annotations

import dataclasses
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.daemon.report_store import LATEST, ReportStore
from evaluator.models import Case, CaseRecord, CaseScores
from evaluator.report import RunReport, parse_timestamp, read_report, write_report
from tests.support.records import report

pytestmark = pytest.mark.e2e

KILLS = 20
CASES = 600
KEEP = 5
JOB = "killed/job"

CHILD = """
import dataclasses, sys, uuid
from datetime import UTC, datetime
from pathlib import Path
from evaluator.report import read_report
from evaluator.daemon.report_store import ReportStore
from tests.support.records import replace

seed, root, keep = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
base = read_report(seed)
store = ReportStore(root, "killed/job", keep)
print("ready", flush=True)
while True:
    run_id = uuid.uuid4().hex[:12]
    now = datetime.now(UTC)
    print("begin", run_id, flush=True)
    store.save(replace(base, run_id=run_id, generated_at=now))
    print("done", run_id, flush=True)
"""


def _report(run_id: str, generated_at: str = "2025-01-01T00:00:00.000Z") -> RunReport:
    scores = CaseScores(
        recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, citation_precision=1.0, citation_recall=1.0,
        citation_valid=True, answer_correct=True, fact_recall=1.0, refused=False,
    )  # fmt: skip
    cases = tuple(
        CaseRecord(
            case=Case(
                id=f"c{i}",
                question="退款申请有期限吗？" * 4,
                relevance={f"d{i}": 1},
                expected_facts=(("七天",),),
                unanswerable=False,
                tags=("refund",),
            ),
            outcome=scores,
            ranked_ids=tuple(f"d{j}" for j in range(i, i + 5)),
            answer="退款申请须在七天内提出。" * 8,
            citations=(1,),
            latency_seconds=0.1,
            stage_seconds={"model": 0.1},
        )
        for i in range(CASES)
    )
    return report(cases, run_id=run_id, generated_at=parse_timestamp(generated_at))


@dataclasses.dataclass
class Kill:
    """What one child said before it was killed, and what the folder held afterwards."""

    begun: list[str]
    done: list[str]
    latest: str
    reports: int
    temp_files: int

    @property
    def mid_save(self) -> bool:
        """Killed between announcing a save and finishing it."""
        return len(self.begun) > len(self.done)


def _kill_one(seed: Path, root: Path, delay: float, out: Path) -> tuple[list[str], list[str]]:
    """Start a child, SIGKILL it ``delay`` seconds after it is ready; its begun and done ids."""
    with out.open("wb") as stdout:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(seed), str(root), str(KEEP)],
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
    try:
        deadline = time.monotonic() + 20
        while b"ready" not in out.read_bytes():
            assert child.poll() is None, child.communicate()[1].decode()
            assert time.monotonic() < deadline, "child not ready in 20 s"
            time.sleep(0.005)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        _, stderr = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert -signal.SIGKILL == child.returncode, stderr.decode()
    lines = [line.split() for line in out.read_text("utf-8").splitlines()]
    begun = [w[1] for w in lines if len(w) == 2 and w[0] == "begin"]
    done = [w[1] for w in lines if len(w) == 2 and w[0] == "done"]
    return begun, done


class TestKillDuringWrite:
    """Killed mid-write, again and again: every report on disk stays whole."""

    def test_previous_report_survives_sigkill(self, tmp_path: Path) -> None:
        """20 kills at random moments: latest.json and every report read back whole."""
        rng = random.Random(20250101)
        seed = tmp_path / "seed.json"
        write_report(_report("seed"), seed)
        root = tmp_path / "reports"
        store = ReportStore(root, JOB, KEEP)
        store.save(_report("first"))  # a previous report exists before the first kill
        previous = "first"
        kills: list[Kill] = []
        whole: set[tuple[str, int, int, int]] = set()
        for attempt in range(KILLS):
            begun, done = _kill_one(seed, root, rng.uniform(0.0, 0.3), tmp_path / f"{attempt}.out")
            latest = read_report(store.folder / LATEST)
            # the last finished save, or the one under way if it got as far as latest.json
            allowed = {done[-1] if done else previous}
            if len(begun) > len(done):
                allowed.add(begun[-1])
            assert latest.run_id in allowed, (attempt, begun, done)
            reports = [p for p in store.folder.glob("*.json") if p.name != LATEST]
            for path in reports:
                st = path.stat()  # a file read whole before and untouched since is skipped
                if (path.name, st.st_ino, st.st_size, st.st_mtime_ns) not in whole:
                    assert CASES == read_report(path).case_count, path
                    whole.add((path.name, st.st_ino, st.st_size, st.st_mtime_ns))
            assert CASES == latest.case_count
            temp = [p.name for p in store.folder.iterdir() if p.name.endswith(".tmp")]
            assert all(name.startswith(".") for name in temp), temp
            kills.append(Kill(begun, done, latest.run_id, len(reports), len(temp)))
            previous = latest.run_id
        # the kills did land inside saves, not only between them
        assert any(k.mid_save for k in kills), kills

    def test_stray_temp_files_are_never_reports(self, tmp_path: Path) -> None:
        """Temp files left by a kill are skipped by latest, retention and the kept reports."""
        store = ReportStore(tmp_path, JOB, 2)
        store.folder.mkdir(parents=True)
        # what a kill mid-write leaves: a truncated temp file next to each target
        for name in (LATEST, "20250101T000000000Z-aaaaaaaaaaaa.json"):
            (store.folder / f".{name}.x1y2z3.tmp").write_bytes(b'{"schema_version": 1, "ca')
        for second, run_id in enumerate(("r1", "r2", "r3")):
            store.save(_report(run_id, f"2025-01-02T00:00:0{second}.000Z"))
        temp = sorted(p.name for p in store.folder.iterdir() if p.name.endswith(".tmp"))
        kept = [r.run_id for r in store.kept()]
        assert ["r3", "r2"] == kept  # retention kept 2 reports, not counting temp files
        assert 2 == len(temp)  # and left the temp files alone
        fresh = ReportStore(tmp_path, JOB, 2)
        loaded = fresh.load_latest()
        assert loaded is not None and "r3" == loaded.run_id

    def test_stale_temp_files_removed_at_start(self, tmp_path: Path) -> None:
        """At start-up the only writer of the folder deletes what killed writers left."""
        store = ReportStore(tmp_path, JOB, 2)
        store.save(_report("r1", "2025-01-02T00:00:00.000Z"))
        (store.folder / f".{LATEST}.x1y2z3.tmp").write_bytes(b'{"schema_version": 1, "ca')
        assert 1 == store.remove_stale_temp_files()
        assert [] == [p.name for p in store.folder.iterdir() if p.name.endswith(".tmp")]
        assert ["r1"] == [r.run_id for r in store.kept()]

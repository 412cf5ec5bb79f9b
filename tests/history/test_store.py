"""The SQLite store: writes, reads, retention, schema version, corrupt and locked files."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evaluator.history.outcome import CaseOutcome
from evaluator.history.recorder import HistoryRecorder, HistorySettings
from evaluator.history.store import (
    FILENAME,
    RUN_METRICS,
    SCHEMA_VERSION,
    HistoryStore,
    RunRow,
    StoreCorrupt,
    windows_of,
)
from evaluator.report import RunReport
from tests.gate.factories import record, report
from tests.support.records import replace


def _row(i: int, outcome: str = "complete", at: float | None = None) -> RunRow:
    return RunRow(
        run_id=f"run{i}",
        finished_at=float(1_000_000 + i * 60) if at is None else at,
        outcome=outcome,
        case_count=2,
        scored_count=2,
        error_count=0,
        dataset_hash="d",
        config_hash="c",
        metrics={"recall_at_k": 0.5, "answer_accuracy": 1.0},
    )


def _outcomes(i: int, ok: bool = True) -> dict[str, CaseOutcome]:
    return {
        "a": CaseOutcome(f"run{i}", 0.0, ok, True, 1.0, 1.0),
        "b": CaseOutcome(f"run{i}", 0.0, None, None, None, None, "timeout"),
    }


def _write(store: HistoryStore, i: int, **kw: object) -> None:
    row = _row(i, **kw)  # type: ignore[arg-type]
    store.record(target="t", dataset="d", run=row, outcomes=_outcomes(i), now=row.finished_at)


def test_round_trip_and_a_new_process_reads_it(tmp_path: Path) -> None:
    """Runs and their cases written are read back, also by a read-only store opened anew."""
    store = HistoryStore(tmp_path)
    for i in range(3):
        _write(store, i)
    _write(store, 3, outcome="incomplete")
    again = HistoryStore.open_readonly(tmp_path)
    assert again is not None
    assert again.jobs() == [("t", "d")]
    runs = again.runs("t", "d")
    assert [r.run_id for r in runs] == ["run3", "run2", "run1", "run0"]
    assert runs[0].outcome == "incomplete" and runs[0].metrics["recall_at_k"] == 0.5
    assert runs[0].metrics["mrr"] is None
    history = again.case_history("t", "d", "a", limit=2)
    assert [(o.run_id, o.answer, o.hit) for o in history] == [
        ("run3", True, True),
        ("run2", True, True),
    ]
    failed = again.case_history("t", "d", "b", limit=1)[0]
    assert (failed.answer, failed.error_kind) == (None, "timeout")
    complete = again.complete_runs("t", "d", 10)
    assert len(complete) == 3 and set(complete[0]) == {"a", "b"}  # oldest first, complete only
    assert list(windows_of(again.complete_runs("t", "d", 2))) == ["a", "b"]
    assert again.case_history("t", "d", "nope") == [] and again.runs("x", "y") == []


def test_the_kept_metrics_are_the_registrys_history_entries() -> None:
    """The history keeps exactly the registry's history metrics, and draws only kept ones as
    trends."""
    from evaluator.metrics import METRICS
    from evaluator.pages.trend import TREND_METRICS

    assert RUN_METRICS == tuple(m.name for m in METRICS if m.history)
    assert TREND_METRICS == tuple(m.name for m in METRICS if m.trend)
    assert set(TREND_METRICS) <= set(RUN_METRICS)  # a restart redraws every trend line


def test_a_metric_given_history_later_gets_its_column(tmp_path: Path) -> None:
    """A store made before a metric had ``history`` gains its column when it opens: the
    earlier runs read None for it, later runs keep it, no schema version changes."""
    store = HistoryStore(tmp_path)
    _write(store, 0)
    path = tmp_path / FILENAME
    conn = sqlite3.connect(path)
    with conn:  # the store as an evaluator without p95_seconds in history made it
        conn.execute("ALTER TABLE runs DROP COLUMN p95_seconds")
    conn.close()
    again = HistoryStore(tmp_path)
    row = replace(_row(1), metrics={"recall_at_k": 0.5, "p95_seconds": 1.25})
    again.record(target="t", dataset="d", run=row, outcomes=_outcomes(1), now=row.finished_at)
    runs = again.runs("t", "d")
    assert [(r.run_id, r.metrics["p95_seconds"]) for r in runs] == [("run1", 1.25), ("run0", None)]


def test_store_is_wal_with_a_schema_version(tmp_path: Path) -> None:
    """The store is SQLite in WAL mode with its schema version recorded."""
    _write(HistoryStore(tmp_path), 0)
    conn = sqlite3.connect(tmp_path / "history.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
    conn.close()


def test_retention_by_run_count_and_by_age(tmp_path: Path) -> None:
    """Retention keeps the last runs by count and drops those past the age limit."""
    store = HistoryStore(tmp_path, keep_runs=5, max_age_days=1)
    for i in range(8):
        _write(store, i)
    assert [r.run_id for r in store.runs("t", "d")] == [f"run{i}" for i in (7, 6, 5, 4, 3)]
    # two days later every old run is past the age limit: only the new one stays
    _write(store, 99, at=1_000_000 + 2 * 86400)
    assert [r.run_id for r in store.runs("t", "d")] == ["run99"]
    conn = sqlite3.connect(store.path)
    assert conn.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 2  # outcomes went too
    conn.close()


def test_cases_are_pruned_with_their_runs(tmp_path: Path) -> None:
    """Cases no kept run mentions are pruned with their runs."""
    # a golden set whose ids change every run (generated ids): the case table kept every id
    # ever seen, and each write read it whole (7 ms to 276 ms per write after 400 runs)
    store = HistoryStore(tmp_path, keep_runs=3, max_age_days=1)
    for i in range(20):
        row = _row(i)
        outcomes = {
            f"c{i}-{j}": CaseOutcome(f"run{i}", 0.0, True, True, 1.0, 1.0) for j in range(4)
        }
        store.record(target="t", dataset="d", run=row, outcomes=outcomes, now=row.finished_at)
    conn = sqlite3.connect(store.path)
    kept = {r[0] for r in conn.execute("SELECT case_id FROM cases")}
    conn.close()
    assert kept == {f"c{i}-{j}" for i in (17, 18, 19) for j in range(4)}
    assert [o.run_id for o in store.case_history("t", "d", "c19-0", limit=5)] == ["run19"]


def test_no_file_no_store(tmp_path: Path) -> None:
    """No file: a read-only open gives no store, and creates nothing."""
    assert HistoryStore.open_readonly(tmp_path) is None


def test_garbage_and_foreign_files_are_corrupt(tmp_path: Path) -> None:
    """A file that is not this store (garbage, another SQLite database) is StoreCorrupt."""
    path = tmp_path / "history.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreCorrupt):
        _write(HistoryStore(tmp_path), 0)
    path.unlink()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorrupt, match="not a history store"):
        _write(HistoryStore(tmp_path), 0)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A store of a newer schema version is refused, not rewritten."""
    _write(HistoryStore(tmp_path), 0)
    conn = sqlite3.connect(tmp_path / "history.sqlite3")
    conn.execute("UPDATE meta SET value = '99'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorrupt, match="schema version 99"):
        HistoryStore(tmp_path).runs("t", "d")


def _report(i: int, ok: bool = True) -> RunReport:  # minutes ago: 10 - i
    made = report([record("a", correct=ok), record("b")], run_id=f"run{i}")
    # recent: the recorder prunes by age against the clock
    at = datetime.now(UTC) - timedelta(minutes=10 - i)
    return replace(made, generated_at=at)


def test_recorder_moves_a_corrupt_file_aside_and_starts_afresh(tmp_path: Path) -> None:
    """The daemon's recorder moves a corrupt store aside and starts a new one, keeping the run."""
    recorder = HistoryRecorder(tmp_path, HistorySettings(window=3, recent=1, keep_runs=10))
    try:
        assert recorder.record("t", "d", _report(0), "complete").errors == ()
        (tmp_path / "history.sqlite3").write_bytes(b"\0garbage" * 512)
        result = recorder.record("t", "d", _report(1), "complete")
        assert result.errors == ("corrupt",)
        assert result.history is not None and result.history.runs_in_window == 1
        aside = list(tmp_path.glob("history.sqlite3.corrupt-*"))
        assert len(aside) == 1 and aside[0].read_bytes().startswith(b"\0garbage")
        assert recorder.record("t", "d", _report(2), "complete").errors == ()
    finally:
        recorder.close()


def test_recorder_counts_a_locked_store_and_carries_on(tmp_path: Path) -> None:
    """A locked store is counted as a failed write and the recorder carries on."""
    recorder = HistoryRecorder(tmp_path, HistorySettings(window=3, recent=1, keep_runs=10))
    try:
        recorder.record("t", "d", _report(0), "complete")
        blocker = sqlite3.connect(tmp_path / "history.sqlite3", timeout=0)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            import evaluator.history.store as store_module

            store_module.BUSY_TIMEOUT_MS = 50  # the test need not wait two seconds
            result = recorder.record("t", "d", _report(1), "complete")
        finally:
            store_module.BUSY_TIMEOUT_MS = 2000
            blocker.rollback()
            blocker.close()
        assert "locked" in result.errors
        assert recorder.record("t", "d", _report(2), "complete").errors == ()
    finally:
        recorder.close()


def test_runs_kept_in_memory_match_the_store(tmp_path: Path) -> None:
    """The recorder appends each run to the window in memory: the same as reading it back."""
    from evaluator.history.job import job_history

    settings = HistorySettings(window=4, recent=2, keep_runs=50)
    recorder = HistoryRecorder(tmp_path, settings)
    try:
        for i in range(9):
            result = recorder.record("t", "d", _report(i, ok=i % 3 != 0), "complete")
        recorder.record("t", "d", _report(9), "incomplete")  # not in the window
        result = recorder.record("t", "d", _report(10, ok=False), "complete")
        runs = HistoryStore(tmp_path).complete_runs("t", "d", 6)
        assert result.history == job_history(runs, window=4, recent=2, alpha=0.05)
        assert recorder.load("t", "d").history == result.history
    finally:
        recorder.close()


def _read_only_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    """sqlite3.connect of the store opened read-only (mode=ro): SQLite's own SQLITE_READONLY
    on every write, as a read-only mount gives, whoever runs the tests (root included)."""
    real = sqlite3.connect

    def read_only(path: object, timeout: float = 5.0, **_kwargs: object) -> sqlite3.Connection:
        return real(f"file:{path}?mode=ro", timeout=timeout, uri=True)

    # the store's own module reference (sqlite3 is one module: patched for the block only)
    monkeypatch.setattr(sqlite3, "connect", read_only)


def test_a_read_only_store_is_an_io_error_not_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only history (issue 24.9): counted as ``io``, the file left where it is (it was
    counted ``corrupt`` and moved aside, or found unmovable, a good store lost)."""
    recorder = HistoryRecorder(tmp_path, HistorySettings(window=3, recent=1, keep_runs=10))
    try:
        assert recorder.record("t", "d", _report(0), "complete").errors == ()
        recorder.close()
        # in rollback-journal mode (a store copied or restored by another tool), opening it
        # read-only fails at the store's switch to WAL, before any write of a run
        conn = sqlite3.connect(tmp_path / "history.sqlite3")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
        recorder = HistoryRecorder(tmp_path, HistorySettings(window=3, recent=1, keep_runs=10))
        before = (tmp_path / "history.sqlite3").read_bytes()
        with monkeypatch.context() as patch:
            _read_only_connect(patch)
            result = recorder.record("t", "d", _report(1), "complete")
        assert result.errors and set(result.errors) == {"io"}, result.errors
        assert not list(tmp_path.glob("history.sqlite3.corrupt-*"))
        assert (tmp_path / "history.sqlite3").read_bytes() == before
        assert recorder.record("t", "d", _report(2), "complete").errors == ()
    finally:
        recorder.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes")
def test_a_read_only_folder_is_an_io_error(tmp_path: Path) -> None:
    """The same with the file and its folder really read-only (chmod), when not root."""
    recorder = HistoryRecorder(tmp_path, HistorySettings(window=3, recent=1, keep_runs=10))
    try:
        assert recorder.record("t", "d", _report(0), "complete").errors == ()
        for path in tmp_path.glob("history.sqlite3*"):
            path.chmod(0o444)
        tmp_path.chmod(0o555)
        try:
            result = recorder.record("t", "d", _report(1), "complete")
        finally:
            tmp_path.chmod(0o755)
        assert result.errors == ("io",)
        assert not list(tmp_path.glob("history.sqlite3.corrupt-*"))
    finally:
        recorder.close()


_READ_ONLY_RECORD = """
import sys
from pathlib import Path
from evaluator.history.recorder import HistoryRecorder, HistorySettings
from tests.gate.factories import record, report
folder = Path(sys.argv[1])
recorder = HistoryRecorder(folder, HistorySettings(window=3, recent=1, keep_runs=10))
run = report([record("a", recall=1.0)], run_id="ro-run")
print(",".join(recorder.record("t", "d", run, "complete").errors))
recorder.close()
"""


def _can_mount_read_only(folder: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'mount --bind "{folder}" "{folder}"'],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.e2e
@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_read_only_mount_is_an_io_error(tmp_path: Path, journal: str) -> None:
    """A real read-only mount (EROFS, a private mount namespace: holds as root too): the
    write is counted ``io``, the store left where it is, whichever journal mode it has."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip("needs unshare with a private bind mount")
    folder = tmp_path / "history"
    recorder = HistoryRecorder(folder, HistorySettings(window=3, recent=1, keep_runs=10))
    recorder.record("t", "d", _report(0), "complete")
    recorder.close()
    if journal == "delete":
        conn = sqlite3.connect(folder / "history.sqlite3")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
    before = sorted(p.name for p in folder.iterdir())
    mount = f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}"'
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"', "sh",
         sys.executable, "-c", _READ_ONLY_RECORD, str(folder)],
        capture_output=True, text=True, timeout=60, check=False,
        cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert 0 == proc.returncode, proc.stderr[-2000:]
    errors = proc.stdout.strip().splitlines()[-1].split(",")
    assert set(errors) == {"io"}, proc.stdout + proc.stderr[-1000:]
    assert sorted(p.name for p in folder.iterdir()) == before

"""The history store: per-case outcomes of every run, in SQLite in the reports folder.

One file per daemon (``REPORTS_DIR/history.sqlite3``): a shard has a reports folder of its
own and owns its cases, so its history is local to it. WAL journal (readers, such as
``evaluator history`` or the status page, never block the writer), a schema version in the
``meta`` table, retention by age and by run count per job.

Writes go through :meth:`HistoryStore.record`, which opens a connection, writes one run in
one transaction, prunes and closes: the daemon calls it from a worker thread, never on the
event loop. A connection per write keeps nothing open across runs, so a file replaced or
moved aside between runs is simply opened afresh.

Read API (for the CLI and the status page)::

    store = HistoryStore.open_readonly(Path("reports"))   # None when there is no history
    store.jobs()                                          # [(target, dataset), ...]
    store.runs("reference", "rag_cases", limit=100)       # RunRow, newest first
    store.case_history("reference", "rag_cases", "refund-deadline", limit=20)
    store.complete_runs("reference", "rag_cases", 13)     # [{case_id: CaseOutcome}], oldest first
    store.slo_events("answers", since=time.time() - 86400)  # [(finished_at, good, bad)]
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluator.history.outcome import CaseOutcome
from evaluator.metrics import METRICS

__all__ = [
    "FILENAME",
    "HISTORY_ERROR_KINDS",
    "RUN_METRICS",
    "SCHEMA_VERSION",
    "HistoryStore",
    "RunRow",
    "SloEventsRow",
    "StoreCorrupt",
    "malformed",
    "windows_of",
]

FILENAME = "history.sqlite3"

#: Values of ``rag_eval_history_errors_total{kind}``: corrupt (moved aside), locked, io.
HISTORY_ERROR_KINDS: tuple[str, ...] = ("corrupt", "locked", "io")
SCHEMA_VERSION = 1

#: Summary values kept per run (trend lines, drift windows): the registry's ``history``
#: entries, in its order
RUN_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.history)

#: A writer waits this long for a lock held by a reader before giving up (worker thread only).
BUSY_TIMEOUT_MS = 2000

#: what pruning the case table looks up (also created in stores written before it existed)
_OUTCOMES_BY_CASE = 'CREATE INDEX IF NOT EXISTS outcomes_by_case ON outcomes ("case")'

_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS jobs (
        id INTEGER PRIMARY KEY, target TEXT NOT NULL, dataset TEXT NOT NULL,
        UNIQUE (target, dataset))""",
    # case ids are stored once; outcomes refer to them by integer (a 1,000-case run writes
    # 1,000 small rows, not 1,000 copies of each id)
    """CREATE TABLE IF NOT EXISTS cases (
        id INTEGER PRIMARY KEY, job INTEGER NOT NULL, case_id TEXT NOT NULL,
        UNIQUE (job, case_id))""",
    f"""CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY, job INTEGER NOT NULL, run_id TEXT NOT NULL UNIQUE,
        finished_at REAL NOT NULL, outcome TEXT NOT NULL, case_count INTEGER NOT NULL,
        scored_count INTEGER NOT NULL, error_count INTEGER NOT NULL,
        dataset_hash TEXT NOT NULL, config_hash TEXT NOT NULL,
        {", ".join(f"{m} REAL" for m in RUN_METRICS)})""",
    "CREATE INDEX IF NOT EXISTS runs_by_job ON runs (job, finished_at)",
    # answer and hit: 1, 0 or NULL (not checked); every check NULL for a failed case
    """CREATE TABLE IF NOT EXISTS outcomes (
        run INTEGER NOT NULL, "case" INTEGER NOT NULL, answer INTEGER, hit INTEGER,
        mrr REAL, ndcg_at_k REAL, error_kind TEXT, citation_precision REAL,
        PRIMARY KEY (run, "case")) WITHOUT ROWID""",
    _OUTCOMES_BY_CASE,
)

#: each run's events of each SLO counting its job (the status page's budgets after a
#: restart), kept as long as the SLO's window; created in stores made before it existed too
_SLO_EVENTS = (
    """CREATE TABLE IF NOT EXISTS slo_events (
        slo TEXT NOT NULL, job INTEGER NOT NULL, finished_at REAL NOT NULL,
        good INTEGER NOT NULL, bad INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS slo_events_by_time ON slo_events (slo, finished_at)",
)


#: SQLite's primary result codes saying the file itself is bad (SQLITE_CORRUPT, NOTADB)
_MALFORMED_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def malformed(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file is not a sound SQLite database (then it is moved
    aside), rather than that it cannot be used now (locked, read-only, unreadable: an
    ``io`` or ``locked`` error, the file left alone). The bare DatabaseError class is what
    SQLite raises for a malformed file when no code comes with it."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _MALFORMED_CODES
    return type(exc) is sqlite3.DatabaseError


class StoreCorrupt(Exception):
    """The file is not a history store this version can use (not SQLite, malformed, newer)."""


@dataclass(frozen=True, slots=True)
class SloEventsRow:
    """One run's events of one SLO, and how long the SLO keeps them (its window)."""

    slo: str
    good: int
    bad: int
    window_seconds: int


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as history keeps it."""

    run_id: str
    finished_at: float
    outcome: str
    case_count: int
    scored_count: int
    error_count: int
    dataset_hash: str
    config_hash: str
    metrics: Mapping[str, float | None]


def _bool(value: object) -> bool | None:
    return None if value is None else bool(value)


def _int(value: bool | None) -> int | None:
    return None if value is None else int(value)


class HistoryStore:
    """Per-case outcomes of every run, in ``folder/history.sqlite3``."""

    def __init__(self, folder: Path, *, keep_runs: int = 3000, max_age_days: float = 30.0) -> None:
        self.path = Path(folder) / FILENAME
        self.keep_runs = keep_runs
        self.max_age_days = max_age_days
        self._readonly = False

    @classmethod
    def open_readonly(cls, folder: Path) -> HistoryStore | None:
        """A store for reading only, or None when ``folder`` holds no history."""
        store = cls(folder)
        if not store.path.is_file():
            return None
        store._readonly = True
        return store

    # --- connections ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection for one unit of work; StoreCorrupt when the file is unusable."""
        if self._readonly:
            uri = f"file:{self.path}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            try:
                if not self._readonly:
                    conn.execute("PRAGMA journal_mode=WAL")
                    # WAL + NORMAL: a power loss may drop the last run, never corrupt the file
                    conn.execute("PRAGMA synchronous=NORMAL")
                    self._migrate(conn)
                else:
                    self._check_version(conn)
            except sqlite3.DatabaseError as exc:
                if not malformed(exc):
                    # locked, read-only (a read-only mount: the switch to WAL is a write),
                    # unable to open, I/O: the file may be sound, and must not be moved aside
                    raise
                raise StoreCorrupt(f"{self.path}: {exc}") from exc
            yield conn
        finally:
            conn.close()

    def _check_version(self, conn: sqlite3.Connection) -> int | None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            if tables:
                raise StoreCorrupt(f"{self.path}: an SQLite file, but not a history store")
            return None
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else None
        if version != SCHEMA_VERSION:
            raise StoreCorrupt(
                f"{self.path}: schema version {version} (this evaluator reads {SCHEMA_VERSION})"
            )
        return version

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if self._check_version(conn) == SCHEMA_VERSION:
            conn.execute(_OUTCOMES_BY_CASE)
            for statement in _SLO_EVENTS:
                conn.execute(statement)
            self._add_run_metrics(conn)
            return
        with conn:
            for statement in (*_DDL, *_SLO_EVENTS):
                conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    @staticmethod
    def _add_run_metrics(conn: sqlite3.Connection) -> None:
        """A metric given ``history`` in the registry since the store was made gets its
        column (earlier runs read None for it): no schema version for a new metric."""
        columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        missing = [m for m in RUN_METRICS if m not in columns]
        if missing:
            with conn:
                for name in missing:  # registry names: identifiers, never input
                    conn.execute(f"ALTER TABLE runs ADD COLUMN {name} REAL")

    def move_aside(self) -> Path | None:
        """Rename a corrupt file (and its WAL) out of the way; a fresh store starts next write.

        Returns:
            Where the file went, or None when there was none.
        """
        if not self.path.exists():
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.getpid()}")
        self.path.replace(aside)
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            with contextlib.suppress(FileNotFoundError):
                side.replace(aside.with_name(aside.name + suffix))
        return aside

    # --- writing --------------------------------------------------------------------------

    def record(
        self,
        *,
        target: str,
        dataset: str,
        run: RunRow,
        outcomes: Mapping[str, CaseOutcome],
        now: float | None = None,
        slo_events: Sequence[SloEventsRow] = (),
    ) -> None:
        """Write one run, its case outcomes and its SLO events, then apply retention, in one
        transaction (an SLO's events are kept as long as its window).

        Raises:
            StoreCorrupt: the file is not usable (the caller moves it aside).
            sqlite3.Error: locked or out of disk; nothing of this run was written.
        """
        with self._connect() as conn, conn:
            job = self._job_id(conn, target, dataset)
            cursor = conn.execute(
                f"INSERT OR REPLACE INTO runs (job, run_id, finished_at, outcome, case_count, "
                f"scored_count, error_count, dataset_hash, config_hash, {', '.join(RUN_METRICS)}) "
                f"VALUES ({', '.join('?' * (9 + len(RUN_METRICS)))})",
                (
                    job,
                    run.run_id,
                    run.finished_at,
                    run.outcome,
                    run.case_count,
                    run.scored_count,
                    run.error_count,
                    run.dataset_hash,
                    run.config_hash,
                    *(run.metrics.get(m) for m in RUN_METRICS),
                ),
            )
            run_row = cursor.lastrowid
            case_rows = self._case_ids(conn, job, list(outcomes))
            conn.executemany(
                'INSERT OR REPLACE INTO outcomes (run, "case", answer, hit, mrr, ndcg_at_k, '
                "error_kind, citation_precision) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        run_row,
                        case_rows[cid],
                        _int(o.answer),
                        _int(o.hit),
                        o.mrr,
                        o.ndcg_at_k,
                        o.error_kind,
                        o.citation_precision,
                    )
                    for cid, o in outcomes.items()
                ),
            )
            moment = time.time() if now is None else now
            self._prune(conn, job, moment)
            self._write_slo_events(conn, job, run.finished_at, slo_events, moment)

    def record_slo_events(
        self,
        *,
        target: str,
        dataset: str,
        finished_at: float,
        slo_events: Sequence[SloEventsRow],
        now: float | None = None,
    ) -> None:
        """Write SLO events of a run already recorded (a judged SLO's, counted when the
        judged figures arrive after the run was published), with the same retention.

        Raises:
            StoreCorrupt: the file is not usable (the caller moves it aside).
            sqlite3.Error: locked or out of disk; none of the events was written.
        """
        with self._connect() as conn, conn:
            job = self._job_id(conn, target, dataset)
            moment = time.time() if now is None else now
            self._write_slo_events(conn, job, finished_at, slo_events, moment)

    @staticmethod
    def _write_slo_events(
        conn: sqlite3.Connection,
        job: int,
        finished_at: float,
        rows: Sequence[SloEventsRow],
        now: float,
    ) -> None:
        conn.executemany(
            "INSERT INTO slo_events (slo, job, finished_at, good, bad) VALUES (?, ?, ?, ?, ?)",
            ((r.slo, job, finished_at, r.good, r.bad) for r in rows),
        )
        conn.executemany(
            "DELETE FROM slo_events WHERE slo = ? AND finished_at < ?",
            ((r.slo, now - r.window_seconds) for r in rows),
        )

    def slo_events(self, slo: str, since: float) -> list[tuple[float, int, int]]:
        """(when the run ended, good, bad) of each run of ``slo`` that ended at ``since`` or
        later, oldest first, every job of it."""
        with self._connect() as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if "slo_events" not in tables:  # a read-only store written before SLOs
                return []
            rows = conn.execute(
                "SELECT finished_at, good, bad FROM slo_events WHERE slo = ? AND finished_at >= ?"
                " ORDER BY finished_at",
                (slo, since),
            ).fetchall()
        return [(float(at), int(good), int(bad)) for at, good, bad in rows]

    def _job_id(self, conn: sqlite3.Connection, target: str, dataset: str) -> int:
        conn.execute(
            "INSERT OR IGNORE INTO jobs (target, dataset) VALUES (?, ?)", (target, dataset)
        )
        row = conn.execute(
            "SELECT id FROM jobs WHERE target = ? AND dataset = ?", (target, dataset)
        ).fetchone()
        return int(row[0])

    def _case_ids(
        self, conn: sqlite3.Connection, job: int, case_ids: Sequence[str]
    ) -> dict[str, int]:
        known = dict(conn.execute("SELECT case_id, id FROM cases WHERE job = ?", (job,)).fetchall())
        new = [cid for cid in case_ids if cid not in known]
        if new:
            conn.executemany(
                "INSERT OR IGNORE INTO cases (job, case_id) VALUES (?, ?)", ((job, c) for c in new)
            )
            known = dict(
                conn.execute("SELECT case_id, id FROM cases WHERE job = ?", (job,)).fetchall()
            )
        return {cid: int(known[cid]) for cid in case_ids}

    def _prune(self, conn: sqlite3.Connection, job: int, now: float) -> None:
        cutoff = now - self.max_age_days * 86400
        doomed = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM runs WHERE job = ? AND (finished_at < ? OR id NOT IN "
                "(SELECT id FROM runs WHERE job = ? ORDER BY finished_at DESC, id DESC LIMIT ?))",
                (job, cutoff, job, self.keep_runs),
            )
        ]
        if not doomed:
            return
        conn.executemany("DELETE FROM outcomes WHERE run = ?", ((r,) for r in doomed))
        conn.executemany("DELETE FROM runs WHERE id = ?", ((r,) for r in doomed))
        # and the ids no kept run mentions: a golden set whose ids change every run grew the
        # table (and each write's read of it) without bound
        conn.execute(
            "DELETE FROM cases WHERE job = ? AND NOT EXISTS "
            '(SELECT 1 FROM outcomes WHERE "case" = cases.id)',
            (job,),
        )

    # --- reading --------------------------------------------------------------------------

    def _job(self, conn: sqlite3.Connection, target: str, dataset: str) -> int | None:
        if self._check_version(conn) is None:
            return None
        row = conn.execute(
            "SELECT id FROM jobs WHERE target = ? AND dataset = ?", (target, dataset)
        ).fetchone()
        return None if row is None else int(row[0])

    def jobs(self) -> list[tuple[str, str]]:
        """Every (target, dataset) with history, sorted."""
        with self._connect() as conn:
            if self._check_version(conn) is None:
                return []
            return [
                (str(t), str(d))
                for t, d in conn.execute(
                    "SELECT target, dataset FROM jobs ORDER BY target, dataset"
                )
            ]

    def runs(self, target: str, dataset: str, *, limit: int = 200) -> list[RunRow]:
        """The job's runs, newest first, every outcome (complete, incomplete, failed)."""
        with self._connect() as conn:
            job = self._job(conn, target, dataset)
            if job is None:
                return []
            rows = conn.execute(
                f"SELECT run_id, finished_at, outcome, case_count, scored_count, error_count, "
                f"dataset_hash, config_hash, {', '.join(RUN_METRICS)} FROM runs "
                f"WHERE job = ? ORDER BY finished_at DESC, id DESC LIMIT ?",
                (job, limit),
            ).fetchall()
        return [
            RunRow(
                str(r[0]),
                float(r[1]),
                str(r[2]),
                int(r[3]),
                int(r[4]),
                int(r[5]),
                str(r[6]),
                str(r[7]),
                dict(zip(RUN_METRICS, r[8:], strict=True)),
            )
            for r in rows
        ]

    def case_history(
        self, target: str, dataset: str, case_id: str, *, limit: int = 20
    ) -> list[CaseOutcome]:
        """One case's outcomes in the job's latest runs that included it (complete or not:
        each says its run's outcome), newest first."""
        with self._connect() as conn:
            job = self._job(conn, target, dataset)
            if job is None:
                return []
            row = conn.execute(
                "SELECT id FROM cases WHERE job = ? AND case_id = ?", (job, case_id)
            ).fetchone()
            if row is None:
                return []
            rows = conn.execute(
                "SELECT r.run_id, r.finished_at, o.answer, o.hit, o.mrr, o.ndcg_at_k, "
                "o.error_kind, o.citation_precision, r.outcome "
                'FROM runs r JOIN outcomes o ON o.run = r.id AND o."case" = ? '
                "WHERE r.job = ? ORDER BY r.finished_at DESC, r.id DESC LIMIT ?",
                (row[0], job, limit),
            ).fetchall()
        return [
            CaseOutcome(
                str(r[0]), float(r[1]), _bool(r[2]), _bool(r[3]), r[4], r[5], r[6], r[7], str(r[8])
            )
            for r in rows
        ]

    def complete_runs(self, target: str, dataset: str, count: int) -> list[dict[str, CaseOutcome]]:
        """The job's latest ``count`` complete runs, oldest first: case id -> outcome."""
        with self._connect() as conn:
            job = self._job(conn, target, dataset)
            if job is None:
                return []
            runs = conn.execute(
                "SELECT id, run_id, finished_at FROM runs WHERE job = ? AND outcome = 'complete' "
                "ORDER BY finished_at DESC, id DESC LIMIT ?",
                (job, count),
            ).fetchall()
            names = dict(conn.execute("SELECT id, case_id FROM cases WHERE job = ?", (job,)))
            out: list[dict[str, CaseOutcome]] = []
            for run_row, run_id, finished in reversed(runs):
                outcomes = {
                    str(names[c]): CaseOutcome(
                        str(run_id), float(finished), _bool(a), _bool(h), m, n, e, cp
                    )
                    for c, a, h, m, n, e, cp in conn.execute(
                        'SELECT "case", answer, hit, mrr, ndcg_at_k, error_kind, '
                        "citation_precision FROM outcomes WHERE run = ?",
                        (run_row,),
                    )
                }
                out.append(outcomes)
        return out


def windows_of(runs: Sequence[Mapping[str, CaseOutcome]]) -> dict[str, list[CaseOutcome]]:
    """Per-case outcome lists (oldest first) of ``runs``, for the cases of the newest run:
    a case dropped from the golden set drops out of the stability lists at once."""
    if not runs:
        return {}
    per_case: dict[str, list[CaseOutcome]] = {cid: [] for cid in runs[-1]}
    for run in runs:
        for cid, outcome in run.items():
            if cid in per_case:
                per_case[cid].append(outcome)
    return per_case

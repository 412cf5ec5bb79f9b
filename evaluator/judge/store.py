"""The verdict cache in the history store: a table of its own in ``history.sqlite3``.

The history module owns its tables and schema version; this table is the judge's, created
on first use (``CREATE TABLE IF NOT EXISTS``) and never touched by the history's migrations.
A cache that cannot be read or written (locked, corrupt, a read-only folder) is a miss: the
verdict is asked for again, the run never fails for it.

A judged pass reads through one connection and writes its new verdicts in one transaction
when it ends (:meth:`VerdictStore.flush`): a commit per verdict (a WAL append and a sync
each, with a connection opened and the table checked for every one) cost a first run more
than the verdicts themselves. A verdict put and not yet flushed is read back from memory.

**What the cache promises, and no more.** A row is a verdict one of the last ``keep_passes``
judged passes of this folder asked for or reused (the history's ``keep_runs``), within its
``max_age_days``, under the key of the judge (url and model), prompts, check and data it
judged (:func:`~evaluator.judge.cache.cache_key`). Each pass stamps the rows it used with its
number and prunes the rest. A row outside that promise (stored in the future, by a pass not
yet run, too long ago) is no hit, whoever wrote it; a row within it is read as outside input
(the border's JSON reader, within 64 KiB, then the check's own reading of a verdict), and is
recorded as ``cached`` in the report: canaries and drift checks never read the cache.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from evaluator import border
from evaluator.redaction import redactor

__all__ = ["FILENAME", "MAX_PENDING", "Retention", "VerdictStore"]

#: the history store's file (evaluator.history.store.FILENAME; that layer sits above this one)
FILENAME = "history.sqlite3"
#: a stored verdict longer than this is not kept (verdicts are a few hundred bytes)
_MAX_VERDICT_BYTES = 65_536
#: verdicts held before they are written without waiting for the pass's end (bounds memory:
#: at most this many verdicts of at most _MAX_VERDICT_BYTES each)
MAX_PENDING = 2_000
#: seconds a row's time may lie ahead of this clock (another host's clock), and no more
_CLOCK_SKEW = 60.0

_VERDICTS = """CREATE TABLE IF NOT EXISTS judge_verdicts (
    key TEXT PRIMARY KEY, verdict TEXT NOT NULL, stored_at REAL NOT NULL,
    used_pass INTEGER NOT NULL)"""
_PASSES = """CREATE TABLE IF NOT EXISTS judge_cache_passes (
    id INTEGER PRIMARY KEY CHECK (id = 1), passes INTEGER NOT NULL)"""


class Retention(NamedTuple):
    """How long the cache keeps a verdict: the history's ``keep_runs`` (here judged passes)
    and ``max_age_days``, with the history's defaults."""

    keep_passes: int = 3000
    max_age_days: float = 30.0


class VerdictStore:
    """Cached verdict objects by :func:`~evaluator.judge.cache.cache_key`; one instance per
    judged pass at a time (its number is read on first use and stamped on flush)."""

    def __init__(
        self,
        folder: Path,
        *,
        keep_passes: int = 3000,
        max_age_days: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = folder / FILENAME
        self.keep_passes = keep_passes
        self.max_age_seconds = max_age_days * 86400
        self.clock = clock
        self.errors = 0
        #: transactions committed (a pass commits once, or once per MAX_PENDING verdicts)
        self.commits = 0
        self._pending: dict[str, str] = {}
        #: keys this pass reused from the store (stamped with its number on flush)
        self._reused: set[str] = set()
        self._reader: sqlite3.Connection | None = None
        #: this pass's number (None: not read yet)
        self._pass: int | None = None

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # used by one pass at a time, from whichever thread runs it (the daemon's loop, a
        # command's asyncio.run): not shared between threads at once
        connection = sqlite3.connect(self.path, timeout=2.0, check_same_thread=False)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            columns = {row[1] for row in connection.execute("PRAGMA table_info(judge_verdicts)")}
            if columns and "used_pass" not in columns:
                # a cache of the earlier shape (keys without the judge's url): dropped whole
                connection.execute("DROP TABLE judge_verdicts")
            connection.execute(_VERDICTS)
            connection.execute(_PASSES)
            connection.commit()
        except BaseException:
            connection.close()
            raise
        return connection

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        connection = self._open()
        try:
            with connection:  # one transaction: committed, or rolled back on an error
                yield connection
        finally:
            connection.close()

    def _close_reader(self) -> None:
        if self._reader is not None:
            with contextlib.suppress(sqlite3.Error):
                self._reader.close()
            self._reader = None

    def _this_pass(self, connection: sqlite3.Connection) -> int:
        """This pass's number: one more than the passes the folder recorded."""
        if self._pass is None:
            row = connection.execute("SELECT passes FROM judge_cache_passes").fetchone()
            self._pass = (row[0] if row is not None and isinstance(row[0], int) else 0) + 1
        return self._pass

    def _row(self, key: str) -> str | None:
        """The stored verdict of ``key`` when its row is within the cache's promise."""
        if self._reader is None:
            self._reader = self._open()
        this = self._this_pass(self._reader)
        row = self._reader.execute(
            "SELECT verdict, stored_at, used_pass FROM judge_verdicts WHERE key = ?", (key,)
        ).fetchone()
        if row is None or not self._promised(row[1], row[2], this):
            return None
        return row[0] if isinstance(row[0], str) else None

    def _promised(self, stored_at: object, used_pass: object, this: int) -> bool:
        """Whether a row was stored and last used as the cache keeps rows: in the last
        ``keep_passes`` passes up to this one, within ``max_age_days``, not in the future."""
        now = self.clock()
        return (
            isinstance(stored_at, float | int)
            and now - self.max_age_seconds <= stored_at <= now + _CLOCK_SKEW
            and isinstance(used_pass, int)
            and this - self.keep_passes < used_pass <= this
        )

    def get(self, key: str) -> dict[str, Any] | None:
        text = self._pending.get(key)
        if text is None:
            try:
                text = self._row(key)
            except (sqlite3.Error, OSError):
                self.errors += 1
                self._close_reader()  # the next read tries a fresh connection
                return None
            if text is None:
                return None
            self._reused.add(key)
        if len(text) > _MAX_VERDICT_BYTES:
            return None
        try:
            value = border.loads(text)  # a row is outside input: a planted one included
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        """Keep ``verdict`` for :meth:`flush` (sooner once :data:`MAX_PENDING` are held)."""
        # the store is a file: what goes in leaves the process (a judge echoing its own key
        # into a reason stored it raw)
        text = redactor().redact_text(json.dumps(verdict, ensure_ascii=False))
        if len(text) > _MAX_VERDICT_BYTES:
            return
        self._pending[key] = text
        if len(self._pending) >= MAX_PENDING:
            self._write()

    def flush(self) -> None:
        """The pass ends: :meth:`_write` what it put and reused; the next pass (a daemon's
        job keeps its store) reads its own number."""
        self._write()
        self._pass = None

    def _write(self) -> None:
        """Write the verdicts put since the last write, stamp those reused with this pass's
        number and prune the rows no recent pass used, in one transaction; end the pass's
        reading connection. A failed write is counted and its verdicts dropped (a miss next
        time, as an unwritable cache always is)."""
        self._close_reader()
        if not self._pending and not self._reused:
            return
        now = self.clock()
        pending, reused = self._pending, self._reused
        self._pending, self._reused = {}, set()
        try:
            with self._writing() as db:
                this = self._this_pass(db)
                db.executemany(
                    "INSERT OR REPLACE INTO judge_verdicts (key, verdict, stored_at, used_pass) "
                    "VALUES (?, ?, ?, ?)",
                    [(key, text, now, this) for key, text in pending.items()],
                )
                db.executemany(
                    "UPDATE judge_verdicts SET used_pass = ? WHERE key = ?",
                    [(this, key) for key in reused],
                )
                self._prune(db, this, now)
            self.commits += 1
        except (sqlite3.Error, OSError):
            self.errors += 1

    def _prune(self, db: sqlite3.Connection, this: int, now: float) -> None:
        """Record this pass, and delete every row outside the cache's promise."""
        db.execute(
            "INSERT INTO judge_cache_passes (id, passes) VALUES (1, ?) "
            "ON CONFLICT (id) DO UPDATE SET passes = max(passes, excluded.passes)",
            (this,),
        )
        db.execute(
            "DELETE FROM judge_verdicts WHERE used_pass <= ? OR used_pass > ? "
            "OR stored_at < ? OR stored_at > ?",
            (this - self.keep_passes, this, now - self.max_age_seconds, now + _CLOCK_SKEW),
        )

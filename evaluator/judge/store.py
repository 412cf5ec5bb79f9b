"""The verdict cache in the history store: a table of its own in ``history.sqlite3``.

The history module owns its tables and schema version; this table is the judge's, created
on first use (``CREATE TABLE IF NOT EXISTS``) and never touched by the history's migrations.
A cache that cannot be read or written (locked, corrupt, a read-only folder) is a miss: the
verdict is asked for again, the run never fails for it.

A judged pass reads through one connection and writes its new verdicts in one transaction
when it ends (:meth:`VerdictStore.flush`): a commit per verdict (a WAL append and a sync
each, with a connection opened and the table checked for every one) cost a first run more
than the verdicts themselves. A verdict put and not yet flushed is read back from memory.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluator import border
from evaluator.redaction import redactor

__all__ = ["FILENAME", "MAX_PENDING", "VerdictStore"]

#: the history store's file (evaluator.history.store.FILENAME; that layer sits above this one)
FILENAME = "history.sqlite3"
#: a stored verdict longer than this is not kept (verdicts are a few hundred bytes)
_MAX_VERDICT_BYTES = 65_536
#: verdicts held before they are written without waiting for the pass's end (bounds memory:
#: at most this many verdicts of at most _MAX_VERDICT_BYTES each)
MAX_PENDING = 2_000

_DDL = """CREATE TABLE IF NOT EXISTS judge_verdicts (
    key TEXT PRIMARY KEY, verdict TEXT NOT NULL, stored_at REAL NOT NULL)"""


class VerdictStore:
    """Cached verdict objects by :func:`~evaluator.judge.cache.cache_key`."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILENAME
        self.errors = 0
        #: transactions committed (a pass commits once, or once per MAX_PENDING verdicts)
        self.commits = 0
        self._pending: dict[str, str] = {}
        self._reader: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # used by one pass at a time, from whichever thread runs it (the daemon's loop, a
        # command's asyncio.run): not shared between threads at once
        connection = sqlite3.connect(self.path, timeout=2.0, check_same_thread=False)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(_DDL)
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

    def get(self, key: str) -> dict[str, Any] | None:
        text: object = self._pending.get(key)
        if text is None:
            try:
                if self._reader is None:
                    self._reader = self._open()
                row = self._reader.execute(
                    "SELECT verdict FROM judge_verdicts WHERE key = ?", (key,)
                ).fetchone()
            except (sqlite3.Error, OSError):
                self.errors += 1
                self._close_reader()  # the next read tries a fresh connection
                return None
            if row is None:
                return None
            text = row[0]
        if not isinstance(text, str) or len(text) > _MAX_VERDICT_BYTES:
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
            self.flush()

    def flush(self) -> None:
        """Write the verdicts put since the last flush in one transaction; end the pass's
        reading connection. A failed write is counted and its verdicts dropped (a miss
        next time, as an unwritable cache always is)."""
        self._close_reader()
        if not self._pending:
            return
        rows = [(key, text, time.time()) for key, text in self._pending.items()]
        self._pending.clear()
        try:
            with self._writing() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO judge_verdicts (key, verdict, stored_at) "
                    "VALUES (?, ?, ?)",
                    rows,
                )
            self.commits += 1
        except (sqlite3.Error, OSError):
            self.errors += 1

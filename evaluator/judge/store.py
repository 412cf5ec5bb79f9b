"""The verdict cache in the history store: a table of its own in ``history.sqlite3``.

The history module owns its tables and schema version; this table is the judge's, created
on first use (``CREATE TABLE IF NOT EXISTS``) and never touched by the history's migrations.
A cache that cannot be read or written (locked, corrupt, a read-only folder) is a miss: the
verdict is asked for again, the run never fails for it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["FILENAME", "VerdictStore"]

#: the history store's file (evaluator.history.store.FILENAME; that layer sits above this one)
FILENAME = "history.sqlite3"
#: a stored verdict longer than this is not kept (verdicts are a few hundred bytes)
_MAX_VERDICT_BYTES = 65_536

_DDL = """CREATE TABLE IF NOT EXISTS judge_verdicts (
    key TEXT PRIMARY KEY, verdict TEXT NOT NULL, stored_at REAL NOT NULL)"""


class VerdictStore:
    """Cached verdict objects by :func:`~evaluator.judge.cache.cache_key`."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILENAME
        self.errors = 0

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=2.0)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(_DDL)
            yield connection
            connection.commit()
        finally:
            connection.close()

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._connect() as db:
                row = db.execute(
                    "SELECT verdict FROM judge_verdicts WHERE key = ?", (key,)
                ).fetchone()
        except (sqlite3.Error, OSError):
            self.errors += 1
            return None
        if row is None or not isinstance(row[0], str) or len(row[0]) > _MAX_VERDICT_BYTES:
            return None
        try:
            value = json.loads(row[0])
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        text = json.dumps(verdict, ensure_ascii=False)
        if len(text) > _MAX_VERDICT_BYTES:
            return
        try:
            with self._connect() as db:
                db.execute(
                    "INSERT OR REPLACE INTO judge_verdicts (key, verdict, stored_at) "
                    "VALUES (?, ?, ?)",
                    (key, text, time.time()),
                )
        except (sqlite3.Error, OSError):
            self.errors += 1

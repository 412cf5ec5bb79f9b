"""Reports on disk for the daemon: one folder per job, atomic writes, retention, latest."""

from __future__ import annotations

import contextlib
import errno
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluator.errors import ReportError
from evaluator.report import (
    RunReport,
    encode_json,
    report_from_dict,
    report_to_dict,
    write_bytes_atomic,
)

__all__ = ["ReportStore", "job_folder_name"]

LATEST = "latest.json"


def job_folder_name(job_key: str) -> str:
    """A file-system-safe folder name for a job key such as ``reference/rag_cases``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", job_key).strip("._") or "job"


class ReportStore:
    """Keeps the last ``keep`` reports of one job, plus ``latest.json``, under ``root``.

    The last report is also held in memory (as its JSON dict) so ``/reports/latest`` keeps
    answering when the disk does not.
    """

    def __init__(self, root: Path, job_key: str, keep: int) -> None:
        self.folder = root / job_folder_name(job_key)
        self.keep = keep
        self.latest: dict[str, Any] | None = None
        #: reports deleted beyond ``keep`` because the disk was full
        self.pruned_for_space = 0

    def save(self, report: RunReport) -> Path:
        """Write ``latest.json`` then the numbered report, atomically, pruning first.

        Old reports are pruned *before* writing, down to ``keep - 1``, so a folder filled
        with our own reports frees room for the new one; when the disk is still full, the
        oldest kept reports are deleted one by one until the write fits. ``latest.json`` is
        written first: it is never older than the newest numbered report.

        Raises:
            OSError: the folder is not writable, or the disk is full with nothing of ours
                left to delete; the in-memory latest is updated anyway.
        """
        data = report_to_dict(report)
        self.latest = data
        # milliseconds included: names sort in run order even for runs within one second
        stamp = re.sub(r"[^0-9T]", "", report.generated_at) + "Z"
        path = self.folder / f"{stamp}-{report.run_id}.json"
        content = encode_json(data)  # encoded once, written twice
        self._prune(self.keep - 1)
        self._write_making_room(content, self.folder / LATEST)
        self._write_making_room(content, path)
        return path

    def _write_making_room(self, content: bytes, path: Path) -> None:
        while True:
            try:
                write_bytes_atomic(content, path)
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not self._drop_oldest():
                    raise
                self.pruned_for_space += 1

    def _runs(self) -> list[Path]:
        return sorted(p for p in self.folder.glob("*.json") if p.name != LATEST)

    def _drop_oldest(self) -> bool:
        """Delete the oldest numbered report; False when there is none left."""
        runs = self._runs()
        if not runs:
            return False
        runs[0].unlink(missing_ok=True)
        return True

    def remove_stale_temp_files(self) -> int:
        """Delete temporary files left by a process killed mid-write; one writer per folder,
        so at start-up any found are stale. Returns how many were removed."""
        removed = 0
        for stale in self.folder.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
                removed += 1
        return removed

    def _prune(self, keep: int) -> None:
        if not self.folder.is_dir():
            return
        runs = self._runs()
        for old in runs[: max(len(runs) - keep, 0)]:
            old.unlink(missing_ok=True)

    def kept(self) -> Iterator[RunReport]:
        """The kept reports, newest first; unreadable ones are skipped."""
        runs = sorted((p for p in self.folder.glob("*.json") if p.name != LATEST), reverse=True)
        for path in runs:
            try:
                yield report_from_dict(json.loads(path.read_bytes()), str(path))
            except (OSError, ValueError, RecursionError, ReportError):
                continue

    def load_latest(self) -> RunReport | None:
        """The last report written before a restart, or None when there is none or it is bad."""
        path = self.folder / LATEST
        try:
            data = json.loads(path.read_bytes())
            report = report_from_dict(data, str(path))
        except (OSError, ValueError, RecursionError, ReportError):
            return None
        self.latest = data
        return report

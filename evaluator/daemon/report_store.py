"""Reports on disk for the daemon: one folder per job, atomic writes, retention, latest."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import structlog

from evaluator.errors import ReportError
from evaluator.report import (
    RunReport,
    format_timestamp,
    fsync_folder,
    read_report,
    write_report,
)

__all__ = ["ReportStore", "job_folder_name"]

LATEST = "latest.json"

log = structlog.get_logger("evaluator.daemon")


def job_folder_name(job_key: str) -> str:
    """A file-system-safe folder name for a job key such as ``reference/rag_cases``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", job_key).strip("._") or "job"


class ReportStore:
    """Keeps the last ``keep`` reports of one job, plus ``latest.json``, under ``root``.

    The last report is also held in memory so ``/reports/latest`` keeps answering when the
    disk does not (encoded on request, as the file is).
    """

    def __init__(self, root: Path, job_key: str, keep: int) -> None:
        self.folder = root / job_folder_name(job_key)
        self.keep = keep
        self.latest: RunReport | None = None
        #: reports deleted beyond ``keep`` because the disk was full
        self.pruned_for_space = 0

    def save(self, report: RunReport) -> Path:
        """Write ``latest.json`` then the numbered report, atomically, pruning first.

        A run saved again (with its judge block, once its judge is done) replaces its own
        files. Old reports are pruned *before* writing, down to ``keep - 1``, so a folder filled
        with our own reports frees room for the new one; when the disk is still full, the
        oldest kept reports are deleted one by one until the write fits. ``latest.json`` is
        written first: it is never older than the newest numbered report.

        The report is streamed once, into ``latest.json``; the numbered report is a hard link
        to the same file (a copy where the file system has no links), put in place by an
        atomic rename.

        Raises:
            OSError: the folder is not writable, or the disk is full with nothing of ours
                left to delete; the in-memory latest is updated anyway.
        """
        self.latest = report
        path = self.path_of(report)
        latest = self.folder / LATEST
        # the same run saved again (its judged figures arrived): its file is one of the kept
        self._prune(self.keep if path.exists() else self.keep - 1)
        self._making_room(lambda: write_report(report, latest))
        self._making_room(lambda: self._link(latest, path))
        return path

    def path_of(self, report: RunReport) -> Path:
        """Where ``report``'s numbered file is (or would be) kept."""
        # milliseconds included: names sort in run order even for runs within one second
        stamp = re.sub(r"[^0-9T]", "", format_timestamp(report.generated_at)) + "Z"
        return self.folder / f"{stamp}-{report.run_id}.json"

    def save_earlier(self, report: RunReport) -> bool:
        """Write again the numbered report of a run that is no longer the latest (its judged
        figures arrived after a later run was saved), atomically; ``latest.json`` is left
        alone. False when the run's report is no longer kept (pruned since).

        Raises:
            OSError: the folder is not writable, or the disk is full.
        """
        path = self.path_of(report)
        if not path.exists():
            return False
        write_report(report, path)
        return True

    def _link(self, source: Path, path: Path) -> None:
        """``path`` becomes the same file as ``source``, atomically."""
        tmp = self.folder / f".{path.name}.{uuid.uuid4().hex}.tmp"
        try:
            try:
                os.link(source, tmp)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise
                shutil.copyfile(source, tmp)
                with tmp.open("rb+") as f:
                    os.fsync(f.fileno())
            tmp.replace(path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        fsync_folder(self.folder)

    def _making_room(self, write: Callable[[], None]) -> None:
        while True:
            try:
                write()
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
        for path in reversed(self._runs()):
            try:
                yield read_report(path)
            except ReportError:
                continue

    def load_latest(self) -> RunReport | None:
        """The last report written before a restart, or None when there is none or it is bad."""
        path = self.folder / LATEST
        if not path.exists():
            return None
        try:
            report = read_report(path)
        except ReportError as exc:
            # a corrupt or forged latest.json must not seed the gauges, nor stop the daemon
            log.warning("latest_report_rejected", path=str(path), reason=str(exc))
            return None
        self.latest = report
        return report

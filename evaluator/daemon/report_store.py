"""Reports on disk for the daemon: one folder per job, atomic writes, retention, latest."""

from __future__ import annotations

import contextlib
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

    def save(self, report: RunReport) -> Path:
        """Write the report and ``latest.json`` atomically, then prune old reports.

        Raises:
            OSError: the folder is not writable; the in-memory latest is updated anyway.
        """
        data = report_to_dict(report)
        self.latest = data
        # milliseconds included: names sort in run order even for runs within one second
        stamp = re.sub(r"[^0-9T]", "", report.generated_at) + "Z"
        path = self.folder / f"{stamp}-{report.run_id}.json"
        content = encode_json(data)  # encoded once, written twice
        write_bytes_atomic(content, path)
        write_bytes_atomic(content, self.folder / LATEST)
        self._prune()
        return path

    def remove_stale_temp_files(self) -> int:
        """Delete temporary files left by a process killed mid-write; one writer per folder,
        so at start-up any found are stale. Returns how many were removed."""
        removed = 0
        for stale in self.folder.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
                removed += 1
        return removed

    def _prune(self) -> None:
        runs = sorted(p for p in self.folder.glob("*.json") if p.name != LATEST)
        for old in runs[: max(len(runs) - self.keep, 0)]:
            old.unlink(missing_ok=True)

    def kept(self) -> Iterator[RunReport]:
        """The kept reports, newest first; unreadable ones are skipped."""
        runs = sorted((p for p in self.folder.glob("*.json") if p.name != LATEST), reverse=True)
        for path in runs:
            try:
                yield report_from_dict(json.loads(path.read_bytes()), str(path))
            except (OSError, ValueError, ReportError):
                continue

    def load_latest(self) -> RunReport | None:
        """The last report written before a restart, or None when there is none or it is bad."""
        path = self.folder / LATEST
        try:
            data = json.loads(path.read_bytes())
            report = report_from_dict(data, str(path))
        except (OSError, ValueError, ReportError):
            return None
        self.latest = data
        return report

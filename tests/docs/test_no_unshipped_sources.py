"""Shipped files cite only what ships.

The design notes and the essay this project grew from are not in the repository, so a
pointer to them is a dead end for a reader: every reference must name a page under
``docs/`` (or the README) instead.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

#: built from parts so that this file does not match itself
_UNSHIPPED = re.compile(
    "|".join([r"DESIGN" + r"\.md", r"\bthe (source )?" + r"article\b", r"article" + r"'s\b"]), re.I
)


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    files = [ROOT / name.decode() for name in listed if name]
    return [path for path in files if path.is_file() and b"\0" not in path.read_bytes()[:4096]]


def test_no_shipped_file_cites_an_unshipped_source() -> None:
    """No shipped file cites a source a clone does not ship."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _tracked_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1)
        if _UNSHIPPED.search(line)
    ]
    assert offenders == [], "cite a page under docs/ instead:\n" + "\n".join(offenders)

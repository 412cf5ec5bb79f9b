"""Fixtures for the executable docs: the reference RAG service the examples talk to, and a
fresh copy of the repository for each page to run in."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.reference import ReferenceServer, serve_reference

ROOT = Path(__file__).resolve().parents[2]
#: never copied into an example's working directory: build output and local state
_NOT_SHIPPED = {".git", ".venv", "reports", "bench-results", ".mypy_cache", ".pytest_cache"}


#: the reference service the examples talk to (``address`` is its host:port)
ReferenceService = ReferenceServer


@pytest.fixture(scope="session")
def reference_service() -> Iterator[ReferenceServer]:
    """``python -m evaluator.reference`` with its defaults, on a free loopback port."""
    with serve_reference() as server:
        yield server


def shipped_files() -> list[Path]:
    """The files a fresh clone has (tracked or new and not ignored), relative to the root."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [Path(n) for n in listed.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: everything
        names = [p.relative_to(ROOT) for p in ROOT.rglob("*") if p.is_file()]
    return [n for n in names if n.parts[0] not in _NOT_SHIPPED and (ROOT / n).is_file()]


def copy_checkout(destination: Path) -> Path:
    """A copy of the shipped files at ``destination``, as a reader's fresh clone."""
    for name in shipped_files():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return destination

"""deploy/requirements.lock pins the image's dependencies; these tests keep it current.

The image installs exactly the lock (hash-checked, ``pip check`` after): an incomplete lock
fails the image build in tests/image/. Here, without network: every runtime and ``demo``
dependency of pyproject.toml is locked at a version it accepts, nothing is locked for a
dependency pyproject.toml dropped, and what the locked packages themselves require (read
from the installed distributions of the same version) is locked too. Regenerate: make lock.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.deploy_support import DEPLOY, REPO

LOCK = DEPLOY / "requirements.lock"
# the image's interpreter: Debian bookworm's / python:3.11-slim, on Linux
IMAGE_MARKERS = {
    "python_version": "3.11",
    "python_full_version": "3.11.2",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


@dataclass(frozen=True)
class Locked:
    version: str
    hashes: int
    via: frozenset[str]


def _parse_lock(text: str) -> dict[str, Locked]:
    entries: dict[str, Locked] = {}
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    for block in blocks:
        head = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        assert head, f"not a pinned requirement: {block[:80]!r}"
        via = re.findall(r"#\s+(?:via\s+)?([A-Za-z0-9._-]+)(?: \(pyproject\.toml\))?$", block, re.M)
        entries[canonicalize_name(head[1])] = Locked(
            version=head[2],
            hashes=block.count("--hash=sha256:"),
            via=frozenset(canonicalize_name(v) for v in via if v != "via"),
        )
    return entries


def _direct_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["demo"]]
    return [r for r in map(Requirement, wanted) if _applies(r)]


def _applies(requirement: Requirement, extra: str = "") -> bool:
    marker = requirement.marker
    return marker is None or marker.evaluate({**IMAGE_MARKERS, "extra": extra})


LOCKED = _parse_lock(LOCK.read_text(encoding="utf-8"))
DIRECT = _direct_requirements()


def test_lock_header_names_the_command() -> None:
    """The image lock says how it is made (`make lock`)."""
    assert "#    make lock\n" in LOCK.read_text(encoding="utf-8")


def test_every_entry_is_pinned_with_hashes() -> None:
    """Every locked requirement carries at least one hash."""
    assert LOCKED
    assert all(entry.hashes >= 1 for entry in LOCKED.values())


@pytest.mark.parametrize("requirement", DIRECT, ids=str)
def test_direct_dependency_is_locked_at_an_accepted_version(requirement: Requirement) -> None:
    """Each direct dependency is locked at a version its requirement accepts."""
    entry = LOCKED.get(canonicalize_name(requirement.name))
    assert entry is not None, f"{requirement} is not in {LOCK.name}: run make lock"
    assert requirement.specifier.contains(entry.version, prereleases=True), (
        f"{requirement.name}=={entry.version} does not satisfy {requirement}: run make lock"
    )


def test_nothing_is_locked_for_a_dropped_dependency() -> None:
    """Nothing is locked only for a dependency the package no longer declares."""
    direct = {canonicalize_name(r.name) for r in DIRECT}
    for name, entry in LOCKED.items():
        if "evaluator" in entry.via:
            assert name in direct, f"{name} is locked for evaluator, which no longer needs it"
        parents = entry.via - {"evaluator"}
        assert parents <= LOCKED.keys() or "evaluator" in entry.via, (name, parents)
        assert entry.via, f"{name}: nothing needs it"


def test_what_locked_packages_require_is_locked() -> None:
    """Checked for the packages installed here at their locked version (most of them)."""
    checked = 0
    for name, entry in LOCKED.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if dist.version != entry.version:
            continue
        checked += 1
        for text in dist.requires or []:
            requirement = Requirement(text)
            if not _applies(requirement):
                continue
            locked = LOCKED.get(canonicalize_name(requirement.name))
            assert locked is not None, f"{name} needs {requirement}: run make lock"
            assert requirement.specifier.contains(locked.version, prereleases=True), (
                f"{name} needs {requirement}, locked {locked.version}: run make lock"
            )
    assert checked >= len(LOCKED) // 2, "the venv is far from the lock: compare make venv"

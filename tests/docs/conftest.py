"""Fixtures for the executable docs: the reference RAG service the examples talk to, and a
fresh copy of the repository for each page to run in."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from evaluator.reference.app import create_app
from evaluator.reference.failures import FailureModes

ROOT = Path(__file__).resolve().parents[2]
#: never copied into an example's working directory: build output and local state
_NOT_SHIPPED = {".git", ".venv", "reports", "bench-results", ".mypy_cache", ".pytest_cache"}


@dataclass
class ReferenceService:
    """The reference RAG service on a free loopback port, and its failure-mode switches."""

    address: str  # host:port
    failure_modes: FailureModes


@pytest.fixture(scope="session")
def reference_service() -> Iterator[ReferenceService]:
    """``python -m evaluator.reference`` with its defaults, served in a background thread."""
    app = create_app()
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say TCP (else +40 ms/reply)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the reference service did not start within 20 s")
        time.sleep(0.01)
    try:
        yield ReferenceService(f"127.0.0.1:{port}", app.state.rag.failure_modes)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


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

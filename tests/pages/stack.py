"""Processes the page tests and ``make screenshots`` share: ``evaluator serve`` on loopback
and Debian's Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

__all__ = [
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "EVALUATOR",
    "REPO",
    "clean_env",
    "serving",
    "wait_for",
]

REPO = Path(__file__).resolve().parents[2]
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without ``EVALUATOR_*`` variables, with ``extra`` added."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    env.update(extra)
    return env


def wait_for(
    url: str,
    paths: Sequence[str],
    process: subprocess.Popen[bytes],
    log: Path,
    seconds: float = 60.0,
) -> None:
    """Until every path answers 200 (or the process dies, or time runs out)."""
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=5) as http:
        while True:
            if process.poll() is not None:
                raise RuntimeError(log.read_text("utf-8", errors="replace")[-3000:])
            try:
                if all(http.get(p).status_code == 200 for p in paths):
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url}: {list(paths)} not all 200 within {seconds:g} s")
            time.sleep(0.2)


@contextlib.contextmanager
def serving(
    args: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess, terminated (then killed) on exit."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(args), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)

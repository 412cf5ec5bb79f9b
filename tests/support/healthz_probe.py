"""Poll a URL from a process of its own and append each latency to a file, one line each:
``<seconds since start> <latency seconds> <status or 0>``.

The fuzz tier polls the daemon's ``/healthz`` this way: its loopback attackers run threads in
the test's own interpreter, and a poller sharing that interpreter would measure the test's
GIL as much as the daemon. ``python -m tests.support.healthz_probe URL FILE [PAUSE]``; stop it
with SIGTERM (each line is flushed as it is written).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import httpx

__all__ = ["main"]


def main(url: str, out: str, pause: float = 0.02) -> None:
    """Poll the URL until SIGTERM, appending each poll's start, duration and status to
    ``out``."""
    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    start = time.monotonic()
    with Path(out).open("a", buffering=1, encoding="utf-8") as sink, httpx.Client(timeout=10) as c:
        while running:
            began = time.monotonic()
            try:
                status = c.get(url).status_code
            except httpx.HTTPError:
                status = 0
            took = time.monotonic() - began
            sink.write(f"{began - start:.3f} {took:.4f} {status}\n")
            time.sleep(pause)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.02)

"""The one way tests pick a loopback port for a server they start."""

from __future__ import annotations

import socket

__all__ = ["HOST", "free_port"]

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bound to 0, read, released):
    for a server a test starts, or for a URL where nothing listens."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
    return port

"""The one reference-service server of the tests: ``evaluator.reference``'s app served by
uvicorn in a background thread on a free loopback port, with its failure-mode switches.

The session fixtures (``reference_server`` in tests/reference, ``reference_service`` in
tests/docs) start it through :func:`serve_reference`; nothing else starts one in-process.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn

from evaluator.reference.app import create_app
from evaluator.reference.failures import FailureModes
from tests.support.ports import HOST

__all__ = ["ReferenceServer", "serve_reference"]


@dataclass
class ReferenceServer:
    """A running reference service: its base URL and its failure-mode switchboard."""

    url: str
    failure_modes: FailureModes

    @property
    def address(self) -> str:
        """``host:port``, as the docs' examples write it."""
        return self.url.removeprefix("http://")


@contextlib.contextmanager
def serve_reference(
    slow_model_seconds: float | None = None, *, start_seconds: float = 20
) -> Iterator[ReferenceServer]:
    """The reference app served until the block ends (``slow_model_seconds``: the model
    stage's delay under ``slow_model``; None: the service's default).

    Raises:
        RuntimeError: the server did not start within ``start_seconds``.
    """
    app = (
        create_app()
        if slow_model_seconds is None
        else create_app(slow_model_seconds=slow_model_seconds)
    )
    # proto IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only when
    # the listening socket says TCP, else Nagle + delayed ACK add 40 ms to every response
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_seconds
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the reference service did not start within {start_seconds} s")
        time.sleep(0.01)
    try:
        yield ReferenceServer(f"http://{HOST}:{port}", app.state.rag.failure_modes)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()

"""Fixtures for the reference service: one real uvicorn server on a free loopback port for
the whole session, and an HTTP client for it with every failure mode off."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from evaluator.dataset import load_dataset
from evaluator.models import Dataset
from evaluator.reference.app import create_app
from tests.reference.harness import GOLDEN_SET, SLOW_SECONDS, ReferenceServer


@pytest.fixture(scope="session")
def reference_server() -> Iterator[ReferenceServer]:
    """The reference app served by uvicorn in a background thread."""
    app = create_app(slow_model_seconds=SLOW_SECONDS)
    # proto IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only when
    # the listening socket says TCP, else Nagle + delayed ACK add 40 ms to every response
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the reference server did not start within 10 s")
        time.sleep(0.01)
    try:
        yield ReferenceServer(f"http://127.0.0.1:{port}", app.state.rag.failure_modes)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def client(reference_server: ReferenceServer) -> Iterator[httpx.Client]:
    """A client for the session server; every failure mode is off before and after."""
    reference_server.failure_modes.set([])
    with httpx.Client(base_url=reference_server.url, timeout=10) as http:
        yield http
    reference_server.failure_modes.set([])


@pytest.fixture(scope="session")
def golden() -> Dataset:
    return load_dataset(GOLDEN_SET)

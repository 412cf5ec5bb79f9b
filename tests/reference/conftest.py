"""Fixtures for the reference service: one real uvicorn server on a free loopback port for
the whole session, and an HTTP client for it with every failure mode off."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from evaluator.dataset import load_dataset
from evaluator.models import Dataset
from tests.reference.harness import GOLDEN_SET, SLOW_SECONDS
from tests.support.reference import ReferenceServer, serve_reference


@pytest.fixture(scope="session")
def reference_server() -> Iterator[ReferenceServer]:
    """The reference app on a free loopback port for the session (a short slow_model)."""
    with serve_reference(SLOW_SECONDS, start_seconds=10) as server:
        yield server


@pytest.fixture
def client(reference_server: ReferenceServer) -> Iterator[httpx.Client]:
    """A client for the session server; every failure mode is off before and after."""
    reference_server.failure_modes.set([])
    with httpx.Client(base_url=reference_server.url, timeout=10) as http:
        yield http
    reference_server.failure_modes.set([])


@pytest.fixture(scope="session")
def golden() -> Dataset:
    """The reference golden set."""
    return load_dataset(GOLDEN_SET)

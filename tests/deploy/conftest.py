"""Fixtures of the deploy/ tests.

Tests that need ``promtool`` (Debian package ``prometheus``) are marked
``@pytest.mark.prometheus``. Without it they are skipped on a developer's machine but fail
in CI (``CI=true``), where .ci/run must have installed it.
"""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path of promtool; skipped when absent, except in CI where it must be installed."""
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is not installed: CI must install the Debian package prometheus")
        pytest.skip("promtool is not installed (Debian package prometheus)")
    return path

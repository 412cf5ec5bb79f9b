"""The installed distribution and the package agree on what they are."""

from __future__ import annotations

from importlib import metadata

import evaluator


def test_version_is_written_once() -> None:
    """The distribution's version is the one ``evaluator/_version.py`` holds (it is hashed into
    every report's ``config_hash``, so two sources drifting apart would split baselines)."""
    assert evaluator.__version__ == metadata.version("evaluator")

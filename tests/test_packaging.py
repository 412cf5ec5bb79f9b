"""The installed distribution and the package agree on what they are."""

from __future__ import annotations

from importlib import metadata

import evaluator


def test_version_is_written_once() -> None:
    """The distribution's version is the one ``evaluator/_version.py`` holds (it is hashed into
    every report's ``config_hash``, so two sources drifting apart would split baselines)."""
    assert evaluator.__version__ == metadata.version("evaluator")


def test_typed_package_says_so() -> None:
    """The package ships ``py.typed``, and its classifiers say it is typed."""
    classifiers = metadata.metadata("evaluator").get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    files = metadata.files("evaluator") or []
    assert any(str(f).endswith("evaluator/py.typed") for f in files) or (
        __import__("pathlib").Path(evaluator.__file__).with_name("py.typed").is_file()
    )

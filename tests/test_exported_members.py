"""The package's public Python API is exactly these names, each the object from its home."""

from __future__ import annotations

import subprocess
import sys

import pytest

import evaluator
from evaluator import models
from evaluator.gate import verdict


def test_all_is_the_public_api() -> None:
    """``__all__`` lists the API a callable target and a gate-in-code user need, sorted."""
    assert ["Case", "Retrieved", "TargetResponse", "__version__", "evaluate_gate"] == sorted(
        evaluator.__all__
    )


def test_every_exported_name_resolves_to_its_definition() -> None:
    """Each name is the object its defining module holds, not a copy or a wrapper."""
    assert models.Case is evaluator.Case
    assert models.Retrieved is evaluator.Retrieved
    assert models.TargetResponse is evaluator.TargetResponse
    assert verdict.evaluate_gate is evaluator.evaluate_gate
    assert isinstance(evaluator.__version__, str)


def test_dir_lists_every_exported_name() -> None:
    """``dir()`` shows the lazily loaded names too, so completion and ``help`` find them."""
    assert set(evaluator.__all__) <= set(dir(evaluator))


def test_unknown_attribute_is_an_attribute_error() -> None:
    """A typo fails as Python's own AttributeError, naming the attribute."""
    with pytest.raises(AttributeError, match="evaluate_gates"):
        evaluator.evaluate_gates  # noqa: B018


@pytest.mark.e2e
def test_importing_the_package_does_not_load_the_gate() -> None:
    """The gate loads on first use, so commands that never judge a report do not pay for it."""
    code = "import sys, evaluator; print('evaluator.gate' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "False" == out.strip()

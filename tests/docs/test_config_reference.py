"""docs/configuration.md's reference is what the settings model says, and says it all."""

from __future__ import annotations

from pydantic import BaseModel

from evaluator.config import Settings
from tests.docs.config_reference import PAGE, _inner_models, page_with_reference


def test_the_page_is_generated_from_the_current_settings_model() -> None:
    """Regenerate with `.venv/bin/python -m tests.docs.config_reference`."""
    text = PAGE.read_text(encoding="utf-8")
    assert page_with_reference(text) == text, (
        "docs/configuration.md is stale: run .venv/bin/python -m tests.docs.config_reference"
    )


def _fields(model: type[BaseModel], path: str = "") -> list[tuple[str, str | None]]:
    found = []
    for name, info in model.model_fields.items():
        found.append((f"{path}{name}", info.description))
        for inner in _inner_models(info.annotation):
            found += _fields(inner, f"{path}{name}.")
    return found


def test_every_setting_has_a_description() -> None:
    """A new setting without a docstring would be a blank row in the reference."""
    missing = [name for name, description in _fields(Settings) if not description]
    assert not missing, f"settings without a docstring (description): {missing}"

"""docs/streaming.md: every TOML block on the page is a configuration the product accepts.

Target blocks are loaded as a config file (with a job, so every target is built into
settings); gates-file blocks are parsed as gate rules. A renamed setting or rule key then
fails here instead of in a user's first run.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from evaluator.config import load_settings
from evaluator.gate.rules import parse_rules

PAGE = Path(__file__).resolve().parents[2] / "docs" / "streaming.md"
BLOCKS = re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_has_its_examples() -> None:
    """docs/streaming.md has its configuration examples."""
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_toml_block_is_accepted(
    block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each TOML example of docs/streaming.md is accepted by the configuration or the gate's
    rules."""
    data = tomllib.loads(block)
    if "rules" in data:
        assert parse_rules(data, "docs/streaming.md")
        return
    monkeypatch.setenv("CHAT_API_TOKEN", "t0ken-for-the-docs-test")
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "a", "question": "q?", "relevant_ids": ["d"]}\n', "utf-8")
    name = data["targets"][0]["name"]
    config = tmp_path / "evaluator.toml"
    config.write_text(
        block + f'\n[[jobs]]\ntarget = "{name}"\ndataset = "{golden}"\n', encoding="utf-8"
    )
    settings = load_settings(config)
    assert [t.label for t in settings.targets] == [name]
    if "otlp" in data:
        assert settings.otlp.model_dump(exclude_unset=True) == data["otlp"]

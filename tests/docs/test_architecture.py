"""docs/architecture.md's layer table is the import contract, read from pyproject.toml.

The table is what a newcomer reads to learn where a module belongs; import-linter enforces
the contract. A layer added, removed or reordered in one and not the other fails here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (layers,) = [
        c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    ]
    return [{m.strip() for m in layer.split("|")} for layer in layers]


def _doc_layers() -> list[set[str]]:
    text = (ROOT / "docs/architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    return [set(re.findall(r"`(evaluator(?:\.\w+)*)`", row.split(" | ")[1])) for row in rows]


def test_the_layer_table_is_the_import_contract() -> None:
    """docs/architecture.md's layer table is the import-linter contract."""
    doc = _doc_layers()
    contract = _contract_layers()
    # the entry point row names two layers of the contract (__main__ above cli)
    assert doc[0] == contract[0] | contract[1]
    assert doc[1:] == contract[2:]


def test_at_most_sixteen_modules_at_the_top() -> None:
    """The package holds at most sixteen loose modules at its top."""
    loose = [
        p.name
        for p in (ROOT / "evaluator").glob("*.py")
        if p.name not in {"__init__.py", "__main__.py", "_version.py"}
    ]
    assert len(loose) <= 16, sorted(loose)

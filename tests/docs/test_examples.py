"""Every ```` ```console ```` example in README.md and docs/*.md runs, and prints what it says.

One test per page: its console blocks run in order in one fresh copy of the repository
(see :mod:`tests.docs.console` and the convention at the top of docs/README.md). Sybil
finds the blocks and honours ``<!-- skip: next -->``.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.docs.conftest import ROOT, ReferenceService, copy_checkout
from tests.docs.console import Page, example_env, parse_console, python_bin_dir, run_console

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _evaluate(example: Example) -> str | None:
    page: Page = example.namespace["page"]
    source = str(example.parsed)
    # the fence is on example.line; the block's first line follows it
    commands = parse_console(source, example.line + 1)
    failures: list[str] = []
    for outcome in run_console(commands, page):
        if outcome.ok:
            continue
        diff = difflib.unified_diff(
            outcome.command.expected.rstrip("\n").split("\n"),
            outcome.actual.split("\n"),
            "expected (the page)",
            "actual (the command)",
            lineterm="",
        )
        first = outcome.command.text.split("\n")[0]
        failures.append(f"line {outcome.command.line}: $ {first}\n" + "\n".join(diff))
    return "\n\n".join(failures) or None


def parse_page(path: Path) -> Document:
    """The page's console examples and skip directives."""
    return Document.parse(str(path), CodeBlockParser("console", _evaluate), SkipParser())


def console_examples(path: Path) -> list[Any]:
    """The page's console examples."""
    return [e for e in parse_page(path).examples() if e.region.evaluator is _evaluate]


@pytest.mark.e2e
@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_console_examples_print_what_the_page_says(
    path: Path, tmp_path: Path, reference_service: ReferenceService
) -> None:
    """Every console example of the page, run in a checkout against the reference service,
    prints what the page says."""
    document = parse_page(path)
    workdir = copy_checkout(tmp_path / "checkout")
    home = tmp_path / "home"
    home.mkdir()
    page = Page(workdir, reference_service.address, example_env(python_bin_dir(), home))
    document.namespace["page"] = page
    reference_service.failure_modes.set([])
    failures: list[str] = []
    try:
        for example in document.examples():
            try:
                example.evaluate()
            except AssertionError as exc:  # SybilFailure: keep going, report every block
                failures.append(str(exc))
    finally:
        reference_service.failure_modes.set([])
    assert not failures, f"{path.relative_to(ROOT)}:\n" + "\n\n".join(failures)

"""Every repository file a page names exists, and every relative link resolves.

A reader who copies ``evaluator validate evals/bad.jsonl`` from a page must find the file in
a fresh clone; a page that names a file which was moved or never shipped fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.conftest import ROOT, shipped_files

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: a path inside one of the repository's top-level folders, as prose or a command names it
_REPO_PATH = re.compile(
    r"(?<![\w/.$-])((?:evals|config|deploy|docs|tests|evaluator|\.ci)/[A-Za-z_.](?:[\w./-]*[\w-])?)"
)
#: a Markdown link or image target that is not a URL or an in-page anchor
_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s#]+)(?:#[^)]*)?\)")


def _shipped() -> set[str]:
    files = {str(p) for p in shipped_files()}
    folders = {str(parent) for p in shipped_files() for parent in p.parents}
    return files | folders


def named_paths(text: str) -> set[str]:
    """The repository paths ``text`` names."""
    return {m.rstrip(".") for m in _REPO_PATH.findall(text)}


@pytest.mark.e2e  # lists the shipped files with `git ls-files`
@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_file_a_page_names_is_shipped(path: Path) -> None:
    """Every file a page names is in a fresh clone."""
    shipped = _shipped()
    text = path.read_text(encoding="utf-8")
    missing = sorted(p for p in named_paths(text) if p not in shipped)
    assert not missing, f"{path.relative_to(ROOT)} names files a fresh clone lacks: {missing}"


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(path: Path) -> None:
    """Every relative link of a page resolves to a file."""
    text = path.read_text(encoding="utf-8")
    broken = sorted(
        link for link in _LINK.findall(text) if not (path.parent / link).resolve().exists()
    )
    assert not broken, f"{path.relative_to(ROOT)} links to missing files: {broken}"


def test_the_path_finder_sees_paths_in_prose_and_commands() -> None:
    """The path finder sees repository paths in prose and commands, not home or version
    paths."""
    text = "run `evaluator validate evals/bad.jsonl`, see config/targets/"
    text += ", not $HOME/evals/x or evaluator/0.1.0."
    assert named_paths(text) == {"evals/bad.jsonl", "config/targets"}

"""The complexity cap make lint applies (tests/complexity_cap.py), on small packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.complexity_cap import MAX_LINES, figures, main


def _branchy(name: str, branches: int) -> str:
    """A function with ``branches`` if statements: complexity branches + 1."""
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(branches))
    return f"def {name}(x):\n{body}    return -1\n"


def _package(tmp_path: Path, *functions: str) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text("\n\n".join(functions), encoding="utf-8")
    return package


def test_a_package_within_the_cap_passes(tmp_path: Path) -> None:
    """Small, simple functions: the figures say so and the check exits 0."""
    package = _package(tmp_path, _branchy("a", 3), _branchy("b", 9))
    found = figures(package)
    assert (2, [], [], True) == (found.functions, found.complex, found.long, found.holds)
    assert 0 == main([str(package)])


def test_too_many_complex_functions_fail(tmp_path: Path) -> None:
    """One function of two above complexity 10 is half of them, far above 3.5%."""
    package = _package(tmp_path, _branchy("a", 3), _branchy("tangled", 10))
    found = figures(package)
    assert [11] == [c for c, _ in found.complex] and 0.5 == found.share
    assert 1 == main([str(package)])


def test_a_long_function_fails_whatever_its_complexity(tmp_path: Path) -> None:
    """A function of 81 lines with no branch at all is refused, and so is the function
    holding it (a closure counts on its own and in its holder)."""
    lines = "".join(f"    y{i} = {i}\n" for i in range(MAX_LINES - 1))
    inner = f"def outer():\n    def inner():\n{lines.replace('    ', '        ')}        return 0\n"
    package = _package(tmp_path, inner + "    return inner\n")
    found = figures(package)
    assert [MAX_LINES + 3, MAX_LINES + 1] == [n for n, _ in found.long]
    assert 1 == main([str(package)])


def test_the_offenders_are_named_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused package names each offender by file, line and function on stderr."""
    package = _package(tmp_path, _branchy("a", 3), _branchy("tangled", 10))
    assert 1 == main([str(package)])
    assert f"  complexity 11: {package / 'mod.py'}:11 tangled\n" in capsys.readouterr().err

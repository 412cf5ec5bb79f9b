"""``make lint``'s complexity cap on the package: no function longer than :data:`MAX_LINES`
lines, and at most :data:`MAX_SHARE` of functions and methods above cyclomatic complexity
:data:`THRESHOLD`, as radon counts them (``radon cc``: a closure's paths count in the
function that holds it). ruff's C90 caps each function at 13 on its own (pyproject.toml).

A function past ~50 lines or complexity 10 is split into named steps, each with a docstring
(docs/architecture.md); this keeps the package where that leaves it. Run from the
repository root: ``python -m tests.complexity_cap [PACKAGE]``; it prints the figures, the
offenders, and exits 1 when the cap does not hold.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

__all__ = ["MAX_LINES", "MAX_SHARE", "THRESHOLD", "Figures", "figures", "main"]

#: the longest a function (or method, or closure) may be, in lines from ``def`` to its end
MAX_LINES = 80
#: complexity above this counts in the share
THRESHOLD = 10
#: the share of functions and methods above :data:`THRESHOLD` the package may hold
MAX_SHARE = 0.035


@dataclass(frozen=True, slots=True)
class Figures:
    """The package's functions as the cap reads them."""

    #: functions and methods radon measures
    functions: int
    #: (complexity, where) of those above :data:`THRESHOLD`, most complex first
    complex: list[tuple[int, str]]
    #: (lines, where) of every function, closure and method longer than :data:`MAX_LINES`
    long: list[tuple[int, str]]
    #: (lines, where) of the longest one
    longest: tuple[int, str]

    @property
    def share(self) -> float:
        """The share of functions above :data:`THRESHOLD`."""
        return len(self.complex) / self.functions if self.functions else 0.0

    @property
    def holds(self) -> bool:
        """Whether the cap holds."""
        return self.share <= MAX_SHARE and not self.long


def _lengths(path: Path, tree: ast.AST) -> list[tuple[int, str]]:
    """(lines, where) of every function definition in ``tree``, nested ones included."""
    return [
        (node.end_lineno - node.lineno + 1, f"{path}:{node.lineno} {node.name}")
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def _complexities(path: Path, source: str) -> list[tuple[int, str]]:
    """(complexity, where) of every function and method radon measures in ``source``."""
    return [
        (block.complexity, f"{path}:{block.lineno} {block.fullname}")
        for block in cc_visit(source)
        if isinstance(block, Function)
    ]


def figures(package: Path) -> Figures:
    """Measure every module of ``package``."""
    measured: list[tuple[int, str]] = []
    lengths: list[tuple[int, str]] = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        measured += _complexities(path, source)
        lengths += _lengths(path, ast.parse(source, str(path)))
    return Figures(
        functions=len(measured),
        complex=sorted((c for c in measured if c[0] > THRESHOLD), reverse=True),
        long=sorted((n for n in lengths if n[0] > MAX_LINES), reverse=True),
        longest=max(lengths, default=(0, "-")),
    )


def main(argv: list[str]) -> int:
    """Print the figures and the offenders; 1 when the cap does not hold."""
    package = Path(argv[0] if argv else "evaluator")
    found = figures(package)
    print(
        f"complexity cap: {len(found.complex)} of {found.functions} functions above "
        f"{THRESHOLD} ({found.share:.2%}, at most {MAX_SHARE:.1%}); longest "
        f"{found.longest[0]} lines ({found.longest[1]}, at most {MAX_LINES})"
    )
    if not found.holds:
        print("split into named steps (docs/architecture.md):", file=sys.stderr)
    if found.share > MAX_SHARE:
        for complexity, where in found.complex:
            print(f"  complexity {complexity}: {where}", file=sys.stderr)
    for lines, where in found.long:
        print(f"  {lines} lines (over {MAX_LINES}): {where}", file=sys.stderr)
    return 0 if found.holds else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

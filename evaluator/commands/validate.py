"""``evaluator validate FILE...``: every problem of every golden set, as file:line."""

from __future__ import annotations

import argparse
import sys

from evaluator.dataset import check_files
from evaluator.errors import ExitCode

__all__ = ["configure", "handle"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="golden sets (JSONL)")


def handle(args: argparse.Namespace) -> int:
    problems = check_files(args.files)
    for problem in problems:
        print(problem, file=sys.stderr)
    bad = len({p.path for p in problems})
    if problems:
        print(f"{len(problems)} problem(s) in {bad} of {len(args.files)} file(s)", file=sys.stderr)
        return ExitCode.ERROR
    print(f"{len(args.files)} file(s) valid")
    return ExitCode.OK

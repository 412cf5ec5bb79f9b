"""Command-line flags that several subcommands share.

Here and not in :mod:`evaluator.cli`, so that commands do not import the entry point that
imports them.
"""

from __future__ import annotations

import argparse

__all__ = ["add_common", "add_repeat_flag", "add_target_flags", "repeat_count"]


def add_common(parser: argparse.ArgumentParser) -> None:
    """Flags every subcommand takes."""
    parser.add_argument(
        "--config", metavar="FILE", help="TOML config (default config/evaluator.toml if present)"
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,  # keeps `evaluator --debug COMMAND` (see evaluator.cli)
        help="show tracebacks on errors",
    )


def add_target_flags(parser: argparse.ArgumentParser) -> None:
    """Flags that describe a single (target, golden set) job without a config file."""
    parser.add_argument("--dataset", metavar="FILE", help="golden set (JSONL)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--target-url", metavar="URL", help="RAG endpoint (default contract)")
    group.add_argument("--target", metavar="MODULE:FUNCTION", help="in-process Python target")
    parser.add_argument("--k", type=int, metavar="N", help="cutoff for recall/nDCG (default 5)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="cases in flight (default 4)")
    parser.add_argument("--job", metavar="NAME", help="which configured job (default the first)")


#: More repeats than this is a load test, not an evaluation.
MAX_REPEATS = 100


def repeat_count(text: str) -> int:
    """``--repeat N``: 1..MAX_REPEATS."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= n <= MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_REPEATS}, got {n}")
    return n


def add_repeat_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeat",
        type=repeat_count,
        default=1,
        metavar="N",
        help="run each case N times, interleaved; the report adds pass^k and per-case pass rates",
    )

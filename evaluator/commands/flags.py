"""Command-line flags that several subcommands share, and typed options from parsed flags.

Each command module declares its flags (``configure(parser)``) and a frozen dataclass
``Options`` whose fields are the flags' destinations; :func:`options_from` builds it from
the parsed :class:`argparse.Namespace`, the one place a namespace is read, so a handler's
every option access is type-checked. ``tests/commands/test_options.py`` checks that the
fields and the flags match, name for name and type for type.

Here and not in :mod:`evaluator.cli`, so that commands do not import the entry point that
imports them.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "CommonOptions",
    "TargetFlags",
    "add_common",
    "add_repeat_flag",
    "add_target_flags",
    "options_from",
    "repeat_count",
]

Options = TypeVar("Options", bound="DataclassInstance")


def options_from(cls: type[Options], args: argparse.Namespace) -> Options:
    """``cls`` with each field the parsed flag of that destination; a field that is itself
    a dataclass (:class:`TargetFlags`) is built from the same flags.

    Raises:
        AttributeError: a field no flag fills (a programming error, caught by the tests).
    """
    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            values[field.name] = options_from(hint, args)
        else:
            values[field.name] = getattr(args, field.name)
    return cls(**values)


@dataclasses.dataclass(frozen=True)
class CommonOptions:
    """The flags every subcommand takes (``--debug`` is the entry point's alone)."""

    config: str | None


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


@dataclasses.dataclass(frozen=True)
class TargetFlags:
    """:func:`add_target_flags`: one (target, golden set) job without a config file, or the
    configured job to run."""

    dataset: str | None = None
    target_url: str | None = None
    target: str | None = None
    k: int | None = None
    concurrency: int | None = None
    job: str | None = None

    def given(self) -> list[str]:
        """The flags given on the command line, as typed (``--target-url``)."""
        return [
            "--" + field.name.replace("_", "-")
            for field in dataclasses.fields(self)
            if getattr(self, field.name) is not None
        ]


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

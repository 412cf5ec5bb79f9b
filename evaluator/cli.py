"""The ``evaluator`` command line: parses flags, runs a subcommand, maps errors to exit codes.

Exit codes (DESIGN.md): 0 success, 2 the gate failed and nothing else, 1 every other failure
with one line on stderr (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from evaluator._version import __version__
from evaluator.commands.flags import add_common
from evaluator.errors import EvaluatorError, ExitCode, UsageError
from evaluator.redaction import RedactingStream

__all__ = ["main"]

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error; DESIGN.md reserves 2 for a failed gate."""

    def error(self, message: str) -> NoReturn:
        # main() prefixes "evaluator: error: "; the program name again would double it
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the ``chosen`` subcommand's module is imported and given its flags."""
    from evaluator.commands import COMMANDS

    parser = _Parser(prog="evaluator", description="Continuous quality evaluation of RAG services.")
    parser.add_argument("--version", action="version", version=f"evaluator {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_text, module_name in COMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_common(p)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.configure(p)
            p.set_defaults(handler=module.handle)
    return parser


def _chosen_command(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evaluator`` console script.

    Everything the command prints goes out redacted of the targets' secrets (one egress
    point for run, probe, gate and the error line), see :mod:`evaluator.redaction`.
    """
    with (
        contextlib.redirect_stdout(RedactingStream(sys.stdout)),
        contextlib.redirect_stderr(RedactingStream(sys.stderr)),
    ):
        return _dispatch(argv)


def _dispatch(argv: Sequence[str] | None) -> int:
    args: Any = None
    try:
        arguments = list(sys.argv[1:] if argv is None else argv)
        parser = build_parser(_chosen_command(arguments))
        args = parser.parse_args(arguments)
        if getattr(args, "handler", None) is None:
            parser.print_help(sys.stderr)
            return ExitCode.ERROR
        code: int = args.handler(args)
        return code
    except EvaluatorError as exc:
        if getattr(args, "debug", False):
            raise
        print(f"evaluator: error: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt:
        print("evaluator: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # the last line of defence: one line unless --debug
        if getattr(args, "debug", False):
            raise
        print(
            f"evaluator: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        return ExitCode.ERROR

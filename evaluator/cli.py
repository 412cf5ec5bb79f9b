"""The ``evaluator`` command line: parses flags, runs a subcommand, maps errors to exit codes.

Exit codes (README.md, "Exit codes"): 0 success, 2 the gate failed and nothing else, 1 every
other failure with one line on stderr (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO, cast

from evaluator._version import __version__
from evaluator.commands.flags import add_common, options_from
from evaluator.commands.pipes import ClosedPipeGuard
from evaluator.errors import EvaluatorError, ExitCode, UsageError
from evaluator.redaction import RedactingStream

__all__ = ["main"]

#: a command's ``handle``: takes that command's ``Options``, returns the exit code
Handler = Callable[[Any], int]


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error; exit code 2 is reserved for a failed gate."""

    def error(self, message: str) -> NoReturn:
        # main() prefixes "evaluator: error: "; the program name again would double it
        raise UsageError(f"{message} (see {self.prog} --help)")


def _epilog(name: str | None) -> str:
    from evaluator.commands import EXAMPLES, EXIT_CODES

    if name is None:
        lines = [f"  {example}" for examples in EXAMPLES.values() for example in examples[:1]]
    else:
        lines = [f"  {example}" for example in EXAMPLES.get(name, ())]
    return "examples:\n" + "\n".join(lines) + "\n\n" + EXIT_CODES if lines else EXIT_CODES


def build_parser(chosen: str | None = None, *, every: bool = False) -> argparse.ArgumentParser:
    """The parser; only the ``chosen`` subcommand's module is imported and given its flags
    (``every``: all of them, for shell completion)."""
    from evaluator.commands import COMMANDS

    parser = _Parser(
        prog="evaluator",
        description="Continuous quality evaluation of RAG services.",
        epilog=_epilog(None) + "\n\nevaluator COMMAND --help shows each command's flags.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"evaluator {__version__}")
    # accepted before the command too (evaluator --debug run ...): the subcommand's own
    # --debug defaults to SUPPRESS, so it cannot reset this one to False
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_text, module_name in COMMANDS:
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=_epilog(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_common(p)
        if every or name == chosen:
            module = importlib.import_module(module_name)
            module.configure(p)
            p.set_defaults(
                handler=module.handle,
                options=module.Options,
                full_parser=lambda: build_parser(every=True),
            )
    return parser


def _chosen_command(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evaluator`` console script.

    Everything the command prints goes out redacted of the targets' secrets (one egress
    point for run, probe, gate and the error line), see :mod:`evaluator.redaction`; once a
    reader closes its end of a pipe, the rest is dropped and the command still ends with
    its own exit code (:mod:`evaluator.commands.pipes`).
    """
    with (
        contextlib.redirect_stdout(RedactingStream(_guarded(sys.stdout))),
        contextlib.redirect_stderr(RedactingStream(_guarded(sys.stderr))),
    ):
        return _dispatch(argv)


def _guarded(stream: TextIO) -> TextIO:
    # a text stream in all but name (io.TextIOBase is not typing.TextIO to mypy)
    return cast(TextIO, ClosedPipeGuard(stream))


def _dispatch(argv: Sequence[str] | None) -> int:
    args: Any = None
    try:
        arguments = list(sys.argv[1:] if argv is None else argv)
        parser = build_parser(_chosen_command(arguments))
        args = parser.parse_args(arguments)
        if getattr(args, "handler", None) is None:
            parser.print_help(sys.stderr)
            return ExitCode.ERROR
        handler: Handler = args.handler
        code: int = handler(options_from(args.options, args))
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

"""``evaluator completion SHELL``: a completion script for bash, zsh or tcsh.

shtab writes it from the same argparse parser the command line uses, every subcommand's
flags included, so completion never falls behind a new flag.
"""

from __future__ import annotations

import argparse

import shtab

from evaluator.errors import ExitCode

__all__ = ["configure", "handle"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=shtab.SUPPORTED_SHELLS, help="the shell to complete for")


def handle(args: argparse.Namespace) -> int:
    # the entry point hands over a factory of the full parser (every command's flags):
    # importing evaluator.cli from here would point a layer upwards
    print(shtab.complete(args.full_parser(), shell=args.shell))
    return ExitCode.OK

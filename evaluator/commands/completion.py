"""``evaluator completion SHELL``: a completion script for bash, zsh or tcsh.

shtab writes it from the same argparse parser the command line uses, every subcommand's
flags included, so completion never falls behind a new flag.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import shtab

from evaluator.commands.flags import CommonOptions
from evaluator.errors import ExitCode

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    shell: str
    # the entry point hands over a factory of the full parser (every command's flags):
    # importing evaluator.cli from here would point a layer upwards
    full_parser: Callable[[], argparse.ArgumentParser]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=shtab.SUPPORTED_SHELLS, help="the shell to complete for")


def handle(options: Options) -> int:
    print(shtab.complete(options.full_parser(), shell=options.shell))
    return ExitCode.OK

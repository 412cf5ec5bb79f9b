"""Subcommands of the ``evaluator`` CLI; each module adds its flags and a handler."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from evaluator.commands import demo, run, serve, validate

__all__ = ["COMMANDS"]

Configure = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]

#: (name, help, add-flags function, handler), in --help order
COMMANDS: list[tuple[str, str, Configure, Handler]] = [
    (
        "run",
        "run a golden set against a target once and write the report",
        run.configure,
        run.handle,
    ),
    (
        "serve",
        "the daemon: run every job on its schedule, serve metrics, health and reports",
        serve.configure,
        serve.handle,
    ),
    (
        "demo",
        "start the bundled reference RAG service and the daemon against it",
        demo.configure,
        demo.handle,
    ),
    (
        "validate",
        "check golden-set files; print every problem with file:line",
        validate.configure,
        validate.handle,
    ),
]

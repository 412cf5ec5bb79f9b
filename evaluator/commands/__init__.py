"""Subcommands of the ``evaluator`` CLI; each module has ``configure(parser)`` and ``handle(args)``.

Modules are imported only for the command being run, so ``evaluator validate`` does not pay
for the daemon, numpy or the HTTP stack.
"""

from __future__ import annotations

__all__ = ["COMMANDS"]

#: (name, help, module), in --help order
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "run",
        "run a golden set against a target once and write the report",
        "evaluator.commands.run",
    ),
    (
        "serve",
        "the daemon: run every job on its schedule, serve metrics, health and reports",
        "evaluator.commands.serve",
    ),
    (
        "demo",
        "start the bundled reference RAG service and the daemon against it",
        "evaluator.commands.demo",
    ),
    (
        "gate",
        "judge a candidate report (or a run now) against a baseline; exit 2 when it fails",
        "evaluator.commands.gate",
    ),
    (
        "report",
        "read a saved run report back: its summary, a baseline's verdict, an HTML report",
        "evaluator.commands.report",
    ),
    (
        "history",
        "a case's recent outcomes, the flaky and newly failing cases, from the history store",
        "evaluator.commands.history",
    ),
    (
        "probe",
        "send one question to a target; show the request, raw response and mapped fields",
        "evaluator.commands.probe",
    ),
    (
        "validate",
        "check golden-set files; print every problem with file:line",
        "evaluator.commands.validate",
    ),
)

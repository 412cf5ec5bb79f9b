"""``evaluator demo``: the reference RAG service, the daemon against it, and Prometheus."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from evaluator.commands.demo_stack import DemoOptions, run_demo
from evaluator.commands.flags import CommonOptions
from evaluator.logs import configure_logging

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    """``--config`` is accepted and not read: the demo builds its own settings."""

    dataset: Path
    conversations: Path
    no_conversations: bool
    rag_port: int
    listen: str
    prometheus_port: int
    no_prometheus: bool
    interval: float
    reports_dir: Path
    failure_mode: list[str]


def configure(parser: argparse.ArgumentParser) -> None:
    d = DemoOptions()
    parser.add_argument(
        "--dataset",
        type=Path,
        default=d.dataset,
        help="golden set (default: the bundled reference golden set)",
    )
    parser.add_argument(
        "--conversations",
        type=Path,
        default=d.conversations,
        help="golden set of conversations, run as a second job "
        "(default: the bundled reference conversations)",
    )
    parser.add_argument("--no-conversations", action="store_true", help="run the golden set alone")
    parser.add_argument(
        "--rag-port",
        type=int,
        default=d.rag_port,
        help="port of the reference RAG service (default %(default)s)",
    )
    parser.add_argument(
        "--listen",
        default=d.listen,
        help="the daemon's status page and /metrics address HOST:PORT (default %(default)s)",
    )
    parser.add_argument(
        "--prometheus-port",
        type=int,
        default=d.prometheus_port,
        help="port of the Prometheus the demo starts (default %(default)s)",
    )
    parser.add_argument("--no-prometheus", action="store_true", help="do not start Prometheus")
    parser.add_argument(
        "--interval",
        type=float,
        default=d.interval_seconds,
        metavar="SECONDS",
        help="seconds between runs of the golden set (default %(default)s)",
    )
    parser.add_argument(
        "--reports-dir",
        type=Path,
        default=d.reports_dir,
        help="where the run reports are written (default %(default)s)",
    )
    parser.add_argument(
        "--failure-mode",
        action="append",
        default=[],
        metavar="MODE",
        help="start the reference service degraded (repeatable)",
    )


def handle(options: Options) -> int:
    configure_logging("auto", "info")
    demo = DemoOptions(
        dataset=options.dataset,
        conversations=None if options.no_conversations else options.conversations,
        rag_port=options.rag_port,
        listen=options.listen,
        prometheus_port=options.prometheus_port,
        interval_seconds=options.interval,
        reports_dir=options.reports_dir,
        failure_modes=tuple(options.failure_mode),
        prometheus=not options.no_prometheus,
    )
    return run_demo(demo)

"""``evaluator demo``: the reference RAG service, the daemon against it, and Prometheus."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.commands.demo_stack import DemoOptions, run_demo
from evaluator.logs import configure_logging

__all__ = ["configure", "handle"]


def configure(parser: argparse.ArgumentParser) -> None:
    d = DemoOptions()
    parser.add_argument("--dataset", type=Path, default=d.dataset, help="golden set")
    parser.add_argument("--rag-port", type=int, default=d.rag_port, help="reference service port")
    parser.add_argument("--listen", default=d.listen, help="daemon's metrics address HOST:PORT")
    parser.add_argument("--prometheus-port", type=int, default=d.prometheus_port)
    parser.add_argument("--no-prometheus", action="store_true", help="do not start Prometheus")
    parser.add_argument("--interval", type=float, default=d.interval_seconds, metavar="SECONDS")
    parser.add_argument("--reports-dir", type=Path, default=d.reports_dir)
    parser.add_argument(
        "--failure-mode",
        action="append",
        default=[],
        metavar="MODE",
        help="start the reference service degraded (repeatable)",
    )


def handle(args: argparse.Namespace) -> int:
    configure_logging("auto", "info")
    options = DemoOptions(
        dataset=args.dataset,
        rag_port=args.rag_port,
        listen=args.listen,
        prometheus_port=args.prometheus_port,
        interval_seconds=args.interval,
        reports_dir=args.reports_dir,
        failure_modes=tuple(args.failure_mode),
        prometheus=not args.no_prometheus,
    )
    return run_demo(options)

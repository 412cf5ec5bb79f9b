"""``evaluator serve``: the daemon."""

from __future__ import annotations

import argparse
from typing import Any

from evaluator.commands.common import settings_from_args
from evaluator.commands.flags import add_target_flags
from evaluator.config import Settings
from evaluator.daemon import serve
from evaluator.logs import configure_logging

__all__ = ["configure", "handle"]


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_flags(parser)
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--interval", type=float, metavar="SECONDS", help="time between runs")
    when.add_argument("--cron", metavar="EXPR", help='cron expression in UTC, e.g. "*/15 * * * *"')
    parser.add_argument("--listen", metavar="HOST:PORT", help="metrics and health (127.0.0.1:9464)")
    parser.add_argument("--reports-dir", metavar="DIR", help="where run reports are kept")


def handle(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configure_logging(settings.log_format, settings.log_level)
    # SIGHUP reads the same file, environment and flags again
    return serve(settings, reload=lambda: _settings(args))


def _settings(args: argparse.Namespace) -> Settings:
    schedule: dict[str, Any] = {}
    if args.interval is not None:
        schedule["interval_seconds"] = args.interval
    if args.cron is not None:
        schedule["cron"] = args.cron
    args.job_overrides = schedule
    extra: dict[str, Any] = {}
    if args.listen is not None:
        extra["listen"] = args.listen
    if args.reports_dir is not None:
        extra["reports_dir"] = args.reports_dir
    settings = settings_from_args(args, extra)
    if schedule and not (args.target_url or args.target):
        # flags set the schedule of every configured job
        jobs = tuple(
            j.model_copy(update={"interval_seconds": None, "cron": None, **schedule})
            for j in settings.jobs
        )
        settings = settings.model_copy(update={"jobs": jobs})
    return settings

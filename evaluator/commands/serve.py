"""``evaluator serve``: the daemon."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from evaluator.commands.common import settings_from_flags
from evaluator.commands.flags import CommonOptions, TargetFlags, add_target_flags
from evaluator.commands.gcpolicy import freeze_startup
from evaluator.config import Settings
from evaluator.daemon import serve
from evaluator.logs import configure_logging

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    target_flags: TargetFlags
    interval: float | None
    cron: str | None
    listen: str | None
    reports_dir: str | None


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_flags(parser)
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--interval", type=float, metavar="SECONDS", help="time between runs")
    when.add_argument("--cron", metavar="EXPR", help='cron expression in UTC, e.g. "*/15 * * * *"')
    parser.add_argument("--listen", metavar="HOST:PORT", help="metrics and health (127.0.0.1:9464)")
    parser.add_argument("--reports-dir", metavar="DIR", help="where run reports are kept")


def handle(options: Options) -> int:
    settings = _settings(options)
    configure_logging(settings.log_format, settings.log_level)
    freeze_startup()
    # SIGHUP reads the same file, environment and flags again
    return serve(settings, reload=lambda: _settings(options))


def _settings(options: Options) -> Settings:
    schedule: dict[str, Any] = {}
    if options.interval is not None:
        schedule["interval_seconds"] = options.interval
    if options.cron is not None:
        schedule["cron"] = options.cron
    extra: dict[str, Any] = {}
    if options.listen is not None:
        extra["listen"] = options.listen
    if options.reports_dir is not None:
        extra["reports_dir"] = options.reports_dir
    flags = options.target_flags
    settings = settings_from_flags(options.config, flags, job_overrides=schedule, extra=extra)
    if schedule and not (flags.target_url or flags.target):
        # flags set the schedule of every configured job
        jobs = tuple(
            j.model_copy(update={"interval_seconds": None, "cron": None, **schedule})
            for j in settings.jobs
        )
        settings = settings.model_copy(update={"jobs": jobs})
    return settings

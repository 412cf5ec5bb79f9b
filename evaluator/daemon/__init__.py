"""The long-running daemon behind ``evaluator serve``: schedules, metrics, health, reports."""

from __future__ import annotations

from evaluator.daemon.service import Daemon, serve

__all__ = ["Daemon", "serve"]

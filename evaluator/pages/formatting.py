"""Numbers, durations, ages and verdict badges as every page writes them, and the redactor
each view takes.

One place for the words of a figure: the status page, the case view, the case tables and the
HTML report all write a ratio, a latency, an age or a verdict's colour the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from evaluator.metrics import METRICS
from evaluator.repeat_summary import VERDICT_PASSED

__all__ = [
    "UNIT",
    "Redact",
    "fmt_age",
    "fmt_diff",
    "fmt_seconds",
    "fmt_value",
    "format_timestamp_utc",
    "verdict_badge",
]

#: masks every registered secret in a text: what each view passes endpoint strings through
Redact = Callable[[str], str]

#: each metric's unit, from the registry: how its numbers are written
UNIT: Mapping[str, str] = {s.name: s.unit for s in METRICS}


def fmt_value(metric: str, value: float | None) -> str:
    """A metric's value: durations as :func:`fmt_seconds`, ratios to four places."""
    if value is None:
        return "n/a"
    if UNIT.get(metric) == "seconds":
        return fmt_seconds(value)
    if UNIT.get(metric) == "count":
        return f"{value:,.0f}"
    return f"{value:.4f}"


def fmt_seconds(value: float | None) -> str:
    """A duration in the unit that reads best: µs, ms or s."""
    if value is None:
        return "n/a"
    if value < 0.001:
        return f"{value * 1e6:.0f}µs"
    if value < 1:
        return f"{value * 1000:.1f}ms"
    return f"{value:.2f}s"


def fmt_age(seconds: float) -> str:
    """How long ago, in seconds, minutes, hours or days."""
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.1f} days ago"


def fmt_diff(metric: str, diff: float | None) -> str:
    """A signed difference of a metric ("" when there is none)."""
    if diff is None:
        return ""
    if UNIT.get(metric) == "seconds":
        return ("+" if diff >= 0 else "-") + fmt_seconds(abs(diff))
    if UNIT.get(metric) == "count":
        return f"{diff:+,.0f}"
    return f"{diff:+.4f}"


def format_timestamp_utc(at: float) -> str:
    """A moment as the pages write it: ``2026-12-01 08:00:00 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def verdict_badge(word: str) -> str:
    """The badge colour of a verdict word (:data:`~evaluator.repeat_summary.VERDICT_WORDS`):
    green for a pass, red for a fail or an error, grey for nothing checked."""
    passed = VERDICT_PASSED.get(word)
    if passed is None:
        return "bad" if word == "error" else "na"
    return "ok" if passed else "bad"

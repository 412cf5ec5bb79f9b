"""Durations as Prometheus writes them (``28d``, ``1h30m``, ``5m``): parsed, bounded, written.

SLO windows and alert windows are written in rule files, recorded series' names and the
configuration in one notation, so a window reads the same everywhere it appears.
"""

from __future__ import annotations

import re

__all__ = ["UNITS", "format_duration", "parse_duration"]

#: seconds per unit, largest first (Prometheus's ``y`` and ``w`` are not used: ``28d``
#: reads better than ``4w`` in a window)
UNITS: tuple[tuple[str, int], ...] = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_PATTERN = re.compile(r"(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,6})s)?")
#: a window longer than this is a typo: a year and a day
_MAX_SECONDS = 366 * 86400


def parse_duration(text: str) -> int:
    """Whole seconds of ``text``: units ``d``, ``h``, ``m``, ``s``, largest first (``1h30m``).

    Raises:
        ValueError: not such a duration, zero, or longer than 366 days.
    """
    match = _PATTERN.fullmatch(text) if len(text) <= 32 else None
    if not text or match is None:
        shown = text if len(text) <= 32 else text[:32] + "..."
        raise ValueError(
            f"{shown!r} is not a duration: digits and units d, h, m, s, largest first "
            "(28d, 1h30m, 5m)"
        )
    seconds = sum(
        int(count) * size for count, (_, size) in zip(match.groups(), UNITS, strict=True) if count
    )
    if seconds <= 0:
        raise ValueError(f"{text!r} is zero: a window holds some time")
    if seconds > _MAX_SECONDS:
        raise ValueError(f"{text!r} is longer than 366 days")
    return seconds


def format_duration(seconds: int) -> str:
    """``seconds`` in the largest units that write it exactly: 5400 -> ``1h30m``.

    Examples::

        format_duration(2419200)   # '28d'
        format_duration(300)       # '5m'
        format_duration(5400)      # '1h30m'
    """
    if seconds <= 0:
        raise ValueError(f"a duration is positive, not {seconds}")
    parts = []
    left = seconds
    for unit, size in UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)

"""Optional figures a target reports beside its answer: token usage, stage timings, scores.

They describe an answer; they are not the answer. A figure out of range (tokens of 1e308, a
negative or ten-year stage, an infinite score) is dropped: the case names the field in its
``out_of_range`` ("not reported (out of range)"), the run counts the cases per field and
warns, and the case is still scored. One service's odd usage must not turn every case into
an error and its report into a failed baseline. A value of the wrong type (a string where a
count belongs) is still the mapping's error: its expression points at the wrong place.

Each check takes a JSON number (an ``int`` or a ``float``, never a ``bool``) and gives the
figure, or None when it is out of range.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from evaluator import border
from evaluator.models import OUT_OF_RANGE_FIELDS, OutOfRange

__all__ = ["MAX_STAGE_SECONDS", "MAX_TOKENS", "count", "in_order", "score", "stage_seconds"]

#: most tokens one response may report: beyond any real call, far from overflowing the cost
#: and the run's sums (1e308 tokens stopped every run with an OverflowError)
MAX_TOKENS = 1e12
#: longest stage one response may report (a day): beyond it a figure is not a timing, and
#: would sit in the stage histograms' +Inf bucket and sums for ever
MAX_STAGE_SECONDS = 86_400.0


def _float(value: int | float) -> float | None:
    try:
        number = float(value)
    except OverflowError:  # JSON integers have no size limit
        return None
    return number if math.isfinite(number) else None


def count(value: int | float) -> int | None:
    """A token count: a whole number from 0 to :data:`MAX_TOKENS`."""
    number = _float(value)
    if number is None or not 0 <= number <= MAX_TOKENS or not number.is_integer():
        return None
    return int(number)


def stage_seconds(value: int | float, scale: float = 1.0) -> float | None:
    """A stage's duration in seconds (``scale``: seconds per unit of ``value``), from 0 to
    :data:`MAX_STAGE_SECONDS`."""
    try:
        seconds = float(value) * scale
    except OverflowError:  # JSON integers have no size limit
        return None
    # NaN fails both comparisons and an infinity the second: the range is the finiteness
    # check too (six stages a case, each a call less)
    return seconds if 0 <= seconds <= MAX_STAGE_SECONDS else None


def score(value: int | float) -> float | None:
    """A retrieval score: any finite number within the border's range."""
    number = _float(value)
    if number is None or abs(number) > border.MAX_NUMBER:
        return None
    return number


def in_order(names: Iterable[OutOfRange]) -> tuple[OutOfRange, ...]:
    """``names`` once each, in the order they are shown."""
    present = set(names)
    return tuple(name for name in OUT_OF_RANGE_FIELDS if name in present)

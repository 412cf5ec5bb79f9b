"""The most a baseline may have failed and still be a standard: ``[baseline] max_error_rate``.

A baseline recorded while the response mapping was broken (five of six cases failed) would
let a candidate broken the same way pass for ever: the gate compares it with a baseline
that is no better. So a baseline whose error rate is above the ceiling is refused (exit 1),
unless the gates file or ``--baseline-max-error-rate`` raise it (1 accepts any baseline).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from evaluator.errors import ConfigError, GateError

__all__ = [
    "DEFAULT_BASELINE_MAX_ERROR_RATE",
    "FLAG",
    "check_baseline_errors",
    "parse_baseline_ceiling",
]

#: a baseline with more than a fifth of its cases failed is refused unless told otherwise
DEFAULT_BASELINE_MAX_ERROR_RATE = 0.2
FLAG = "--baseline-max-error-rate"
_KEY = "max_error_rate"


def parse_baseline_ceiling(data: Mapping[str, object], source: str) -> float:
    """The ``[baseline]`` table of a decoded gates file (absent: the default ceiling).

    Raises:
        ConfigError: naming the file and the bad key.
    """
    table = data.get("baseline")
    if table is None:
        return DEFAULT_BASELINE_MAX_ERROR_RATE
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: baseline: expected a table ([baseline] {_KEY} = 0.2)")
    for key in table:
        if key != _KEY:
            raise ConfigError(f"{source}: baseline.{key}: unknown key (known: {_KEY})")
    value = table.get(_KEY, DEFAULT_BASELINE_MAX_ERROR_RATE)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ConfigError(f"{source}: baseline.{_KEY}: must be a number (got {value!r})")
    if not 0 <= value <= 1:
        raise ConfigError(f"{source}: baseline.{_KEY}: must be within 0..1 (got {value!r})")
    return float(value)


def check_baseline_errors(error_rate: float | None, ceiling: float, source: str) -> None:
    """Refuse a baseline whose error rate is above ``ceiling``.

    Raises:
        GateError: naming the baseline, its rate, the ceiling and how to raise it.
    """
    if error_rate is None or error_rate <= ceiling:
        return
    raise GateError(
        f"{source}: the baseline's error rate {error_rate:.3g} is above {ceiling:g} "
        f"([baseline] {_KEY} in the gates file): a baseline that mostly failed would pass a "
        f"candidate broken the same way; fix the target and record it again, or accept it "
        f"with {FLAG} {min(1.0, math.ceil(error_rate * 100) / 100):g}"
    )

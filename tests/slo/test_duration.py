"""Durations as Prometheus writes them: parsed to seconds and written back the same way."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.slo.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("28d", 2419200), ("1h30m", 5400), ("5m", 300), ("90s", 90), ("1d2h3m4s", 93784)],
)
def test_parse_reads_each_unit(text: str, seconds: int) -> None:
    """Each unit counts its seconds, largest first."""
    assert seconds == parse_duration(text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "not a duration"),
        ("28 days", "not a duration"),
        ("30m1h", "not a duration"),
        ("1w", "not a duration"),
        ("0d", "is zero"),
        ("367d", "longer than 366 days"),
        ("1" * 40 + "d", "not a duration"),
    ],
)
def test_parse_refuses_what_is_not_a_window(text: str, why: str) -> None:
    """Other units, another order, zero, a window beyond a year: refused, saying why."""
    with pytest.raises(ValueError, match=why):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(2419200, "28d"), (300, "5m"), (5400, "1h30m"), (241920, "2d19h12m")]
)
def test_format_writes_the_largest_units(seconds: int, text: str) -> None:
    """A duration is written in the largest units that say it exactly."""
    assert text == format_duration(seconds)


@given(st.integers(min_value=1, max_value=366 * 86400))
def test_format_and_parse_round_trip(seconds: int) -> None:
    """What is written reads back as the same number of seconds."""
    assert seconds == parse_duration(format_duration(seconds))

"""``Server-Timing`` response headers (W3C Server Timing) as stage timings.

Each header is a comma-separated list of ``name;dur=<milliseconds>;desc="..."`` entries;
a response may send several headers. Entries without a ``dur`` carry no timing and are
skipped, as are malformed ones and durations the border refuses (not finite, negative,
beyond :data:`MAX_DUR_MS`); the first entry of a name wins (as browsers show it). At
most :data:`MAX_ENTRIES` entries are read per response: the stage-name bound that applies
to body timings applies to these names too, downstream.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from evaluator import border
from evaluator.targets.figures import MAX_STAGE_SECONDS

__all__ = ["MAX_DUR_MS", "MAX_ENTRIES", "parse_server_timing"]

#: entries read per response, whatever the headers hold
MAX_ENTRIES = 64
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


#: longest stage one response may report, in milliseconds: the body's bound
#: (:data:`evaluator.targets.figures.MAX_STAGE_SECONDS`, a day)
MAX_DUR_MS = MAX_STAGE_SECONDS * 1000
#: a ``dur`` as RFC 9110 writes a number (``float()`` alone also takes ``nan``, ``inf``,
#: ``1_000`` and a 10,000-digit string), at most 32 characters
_NUMBER = re.compile(r"-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][-+]?[0-9]{1,3})?")


def _milliseconds(text: str) -> float | None:
    """A ``dur`` value through the border: a plain number, finite, from 0 to
    :data:`MAX_DUR_MS`; None (the entry is skipped, as a malformed one is) otherwise."""
    if len(text) > 32 or not _NUMBER.fullmatch(text):
        return None
    try:
        return border.number(float(text), "Server-Timing dur", high=MAX_DUR_MS)
    except ValueError:
        return None


def _entries(header: str) -> Iterable[str]:
    """Split on commas outside quoted strings."""
    current: list[str] = []
    quoted = escaped = False
    for char in header:
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            yield "".join(current)
            current = []
            continue
        current.append(char)
    yield "".join(current)


def parse_server_timing(headers: Iterable[str]) -> dict[str, float]:
    """Stage name -> seconds from every ``Server-Timing`` header value.

    Example::

        parse_server_timing(['db;dur=53.2, cache;desc="Cache Read";dur=1.5', "app;desc=x"])
        # {"db": 0.0532, "cache": 0.0015}
    """
    out: dict[str, float] = {}
    seen = 0
    for header in headers:
        for entry in _entries(header):
            seen += 1
            if seen > MAX_ENTRIES:
                return out
            name, *params = (part.strip() for part in entry.split(";"))
            if not _TOKEN.match(name) or name in out:
                continue
            for param in params:
                key, _, value = param.partition("=")
                if key.strip().lower() != "dur":
                    continue
                ms = _milliseconds(value.strip().strip('"'))
                if ms is not None:
                    out[name] = ms / 1000.0
                break
    return out

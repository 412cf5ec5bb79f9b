"""Bounded label values: whatever a target reports, the number of series stays bounded.

A Prometheus label value that comes from outside the configuration (a stage name in a
response body or a ``Server-Timing`` header) could grow the series without limit, one new
name per response. :func:`sanitise_label` makes any text a short, safe value;
:class:`StageNames` keeps at most ``cap`` distinct stage names per job (or only the names of
an allow-list) and folds the rest into one ``other`` stage, whose time is their sum.

Example::

    stages = StageNames(allowed=None, cap=2)
    stages.fold({"retrieve": 0.1, "rerank": 0.2, "x-123": 0.3, "x-124": 0.4})
    # {'retrieve': 0.1, 'rerank': 0.2, 'other': 0.7}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

from evaluator.redaction import redactor

__all__ = [
    "DEFAULT_MAX_STAGES",
    "MAX_LABEL_CHARS",
    "OTHER_STAGE",
    "StageNames",
    "sanitise_label",
]

#: the longest label value kept; longer values are cut
MAX_LABEL_CHARS = 64
#: distinct stage names kept per job when the target has no allow-list
DEFAULT_MAX_STAGES = 20
#: the stage every folded name is counted under
OTHER_STAGE = "other"
#: folded names logged per job; beyond, they are only counted
_LOGGED_FOLDS = 20
#: raw stage names whose sanitised form is remembered per job (a hostile target sending a
#: new name per response gets them sanitised each time, never a growing memo)
_MEMO_NAMES = 1024

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def sanitise_label(value: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """``value`` as a short label value: secrets redacted, runs of other characters than
    letters, digits and ``_.:-`` become one ``_``, the result is cut to ``max_chars``; empty
    gives ``unnamed``. (A label value leaves the process on every scrape.)"""
    text = redactor().redact_text(str(value)[: max_chars * 4 + 1024])
    text = _UNSAFE.sub("_", text[: max_chars * 4]).strip("_")
    return text[:max_chars] or "unnamed"


class StageNames:
    """The stage names of one job, bounded.

    Args:
        allowed: when given, only these names (after :func:`sanitise_label`) are kept.
        cap: otherwise, the first ``cap`` distinct names seen are kept.
        on_fold: called with each raw name folded into ``other`` (to count and log it).
    """

    def __init__(
        self,
        allowed: Collection[str] | None = None,
        cap: int = DEFAULT_MAX_STAGES,
        on_fold: Callable[[str, bool], None] | None = None,
    ) -> None:
        self.allowed = None if allowed is None else frozenset(map(sanitise_label, allowed))
        self.cap = cap
        self.on_fold = on_fold
        self._kept: set[str] = set()
        self._logged: set[str] = set()
        #: raw name -> sanitise_label(raw), under the redactor it was computed with: the same
        #: few names come with every response, and sanitising was a tenth of a case's CPU
        self._sanitised: dict[str, str] = {}
        self._redactor = redactor()
        #: raw names folded into ``other`` so far
        self.folded = 0

    @property
    def kept(self) -> frozenset[str]:
        """The stage names kept so far (the ``stage`` label values in use)."""
        return frozenset(self._kept)

    def name(self, raw: str) -> str:
        """The label value of stage ``raw``: its sanitised name, or ``other``."""
        name = self._sanitise(raw)
        if name in self._kept:
            return name
        if (self.allowed is None and len(self._kept) < self.cap) or (
            self.allowed is not None and name in self.allowed
        ):
            self._kept.add(name)
            return name
        self.folded += 1
        if self.on_fold is not None:
            # the first few distinct names are worth a log line; the rest only a count
            first = len(self._logged) < _LOGGED_FOLDS and name not in self._logged
            if first:
                self._logged.add(name)
            self.on_fold(name, first)
        return OTHER_STAGE

    def _follow_redactor(self) -> None:
        current = redactor()
        if current is not self._redactor:
            # a secret registered since: names remembered before may hold it
            self._sanitised.clear()
            self._redactor = current

    def _sanitise(self, raw: str) -> str:
        self._follow_redactor()
        name = self._sanitised.get(raw)
        if name is None:
            name = sanitise_label(raw)
            if len(self._sanitised) < _MEMO_NAMES:
                self._sanitised[raw] = name
        return name

    def fold(self, timings: Mapping[str, float]) -> dict[str, float]:
        """``timings`` with bounded names; the seconds of names folded together add up."""
        self._follow_redactor()
        remembered, kept = self._sanitised, self._kept
        out: dict[str, float] = {}
        for raw, seconds in timings.items():
            # a remembered name already kept is its own label (what name() would find)
            name = remembered.get(raw)
            if name is None or name not in kept:
                name = self.name(raw)
            out[name] = out.get(name, 0.0) + seconds
        return out

"""Warnings about a target's configuration that only its responses reveal.

Each function returns one line (or None) for ``run`` and ``probe`` to print on stderr: the
citations are not mapped (citation metrics n/a), a mapped field failed (with the expression
that failed), stage timings that cannot be seconds (far longer than the whole case).
Pure functions over configuration and records: no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from operator import itemgetter

from evaluator import border
from evaluator.config import HttpTargetConfig, TargetConfig
from evaluator.models import CaseRecord
from evaluator.summary import out_of_range_warning
from evaluator.targets.markers import compile_markers, first_bracketed

__all__ = [
    "UNIT_LIE_FACTOR",
    "check_warnings",
    "citations_warning",
    "ids_warning",
    "mapping_failure_warning",
    "markers_warning",
    "target_warnings",
    "timings_unit_warning",
    "unit_lie",
]

#: a stage this many times longer than its whole case cannot be in seconds
UNIT_LIE_FACTOR = 10.0
#: a (stage, seconds) pair's seconds, read in C (max over every case's stages)
_SECONDS = itemgetter(1)


def citations_warning(target: TargetConfig) -> str | None:
    """The warning when ``target``'s citations are not mapped: citation metrics are n/a."""
    if not isinstance(target, HttpTargetConfig) or target.reports_citations:
        return None
    if target.retrieval_only:
        return None  # no answer: nothing is cited, and the output says retrieval-only
    return (
        f"target {target.label!r}: citations are not mapped, so citation metrics are n/a; "
        f"set response.citations (a field, annotations) or response.citation_markers "
        f"('numbers' for [1], 'ids' for [doc-id]) (docs/targets.md)"
    )


def ids_warning(target: TargetConfig) -> str | None:
    """The warning when a preset target's ids are not mapped: its retrieval says nothing."""
    if not isinstance(target, HttpTargetConfig) or target.kind == "http":
        return None
    if target.response is None or target.response.ids != "`[]`":
        return None
    return (
        f"target {target.label!r}: no response.ids: the {target.kind} preset returns no ids, "
        f"so the retrieval metrics say nothing about the service; set response.ids to where "
        f"it puts its sources (docs/targets.md)"
    )


def _unmatched_brackets(style: str, answers: Sequence[str]) -> list[str]:
    """The bracketed markers in the answers, when the configured style found no marker in
    any of them (none when it found one)."""
    markers = compile_markers(style)
    if any(markers(a) for a in answers):
        return []
    return [b for a in answers if (b := first_bracketed(a)) is not None]


def markers_warning(target: TargetConfig, answers: Sequence[str | None]) -> str | None:
    """The warning when ``citation_markers`` found no marker in any answer while some hold
    markers of a built-in style: its citations would silently count none."""
    if not isinstance(target, HttpTargetConfig) or target.response is None:
        return None
    style = target.response.citation_markers
    if style is None:
        return None
    given = [a for a in answers if a]
    bracketed = _unmatched_brackets(style, given)
    if not bracketed:
        return None
    example = border.printable(bracketed[0][:40])
    return (
        f"citation_markers {style!r} found no marker in any of {len(given)} answer(s), yet "
        f"{len(bracketed)} hold bracketed markers such as {example!r}: citation metrics count "
        f"no citation from the answer; set the style that matches them ('numbers' for [1], "
        f"'ids' for [doc-id])"
    )


def check_warnings(target: TargetConfig) -> list[str]:
    """What ``evaluator check`` warns about a target, without calling it."""
    return [w for w in (ids_warning(target), citations_warning(target)) if w is not None]


def mapping_failure_warning(records: Sequence[CaseRecord]) -> str | None:
    """The warning when a mapped field failed on some case: how many, and the expression."""
    failed = [
        r.error
        for r in records
        if r.error is not None and r.error.kind == "bad_response" and r.error.field is not None
    ]
    if not failed:
        return None
    (field, expression), count = Counter((e.field, e.expression) for e in failed).most_common(1)[0]
    where = (
        f"response.{field} = {json.dumps(expression)}"
        if expression is not None
        else f"the default contract's {field!r}"
    )
    example = next(e.message for e in failed if (e.field, e.expression) == (field, expression))
    return (
        f"the response mapping failed on {len(failed)} of {len(records)} case(s), "
        f"{count} of them at {where}: {example}"
    )


def unit_lie(stages: Mapping[str, float], latency: float) -> tuple[str, float] | None:
    """The longest stage when it is :data:`UNIT_LIE_FACTOR` times the case's latency or more."""
    if not stages or latency <= 0:
        return None
    name, seconds = max(stages.items(), key=_SECONDS)
    return (name, seconds) if seconds >= UNIT_LIE_FACTOR * latency else None


def timings_unit_warning(target: str, records: Sequence[CaseRecord]) -> str | None:
    """The warning when stage timings exceed their case's measured latency many times over."""
    lies = []
    for record in records:
        found = unit_lie(record.stage_seconds, record.latency_seconds)
        if found is not None:
            lies.append((record, found))
    if not lies:
        return None
    record, (stage, seconds) = lies[0]
    return (
        f"target {target!r}: stage timings exceed the measured latency many times over in "
        f"{len(lies)} of {len(records)} case(s) (case {record.id!r}: {stage} {seconds:g}s in "
        f"a {record.latency_seconds:.3f}s case): these look like milliseconds: set "
        f'timings_unit = "milliseconds" in [targets.response]'
    )


def _labelled(target: str, warning: str | None) -> str | None:
    return None if warning is None else f"target {target!r}: {warning}"


def target_warnings(
    target: TargetConfig, records: Sequence[CaseRecord], *, mapping: bool = True
) -> list[str]:
    """Every warning of a run of ``target`` (``mapping``: include the mapping failures)."""
    found = [
        ids_warning(target),
        citations_warning(target),
        mapping_failure_warning(records) if mapping else None,
        timings_unit_warning(target.label, records),
        _labelled(target.label, markers_warning(target, [r.answer for r in records])),
        _labelled(target.label, out_of_range_warning(records)),
    ]
    return [warning for warning in found if warning is not None]

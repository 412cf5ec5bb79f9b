"""Reading a report back: one pass over the file, typed and range-checked while decoding.

The file is decoded by msgspec against the schema below (in C: types, finite numbers,
ratios in 0..1, non-negative counts, integers of sane size; NaN, Infinity and 1e400 are not
numbers here). The cases array is kept as raw slices of the file and each case is decoded
into a typed entry (a struct, no dict tree of the whole report). Then
:mod:`evaluator.report.check` checks the relations between fields on the entries' columns,
and the report is trusted: :func:`read_report` builds a :class:`CaseRecord` per entry,
:func:`read_columns` keeps the entries as the columns the gate judges
(:mod:`evaluator.report.columns`).

A compact report (one case per line) and an indented one (older versions wrote
``indent=2``) read back identically. Fields this version does not know are skipped, so a
newer report with more per-case fields still reads; to add a field, add it to the
``_CaseFields`` (or ``_Report``) struct with a default and map it in :func:`_case`; a score
(a :class:`CaseScores` field) and a registered quality ratio need no edit here.

Python's cyclic garbage collector is paused while the records are built: with hundreds of
thousands of new objects it would otherwise rescan them again and again (four fifths of the
reading time at 100,000 cases), and none of them can form a cycle.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from itertools import compress, count, repeat
from operator import attrgetter, is_
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_type_hints

import msgspec
from msgspec import Meta, Struct

from evaluator import border
from evaluator.errors import ReportError
from evaluator.gcpause import without_gc
from evaluator.models import DELIVERY_FIELDS, Case, CaseError, CaseRecord, CaseScores, Outcome
from evaluator.repeats import Repeats, repeats_from_dict
from evaluator.report.check import (
    CheckedColumns,
    check_ids,
    check_summary,
    check_summary_columns,
)
from evaluator.report.columns import CaseTable, ReportColumns
from evaluator.report.model import SCHEMA_VERSION, RunReport, parse_timestamp
from evaluator.summary import OPTIONAL_FIELDS, QUALITY_METRICS, Summary, Total

__all__ = ["parse_columns", "parse_report", "read_columns", "read_report", "report_from_dict"]

# integers beyond 2**53 are not counts anyone made, and do not survive a float round trip
_MAX_INT = 2**53
Ratio = Annotated[float, Meta(ge=0.0, le=1.0)]
Seconds = Annotated[float, Meta(ge=0.0)]
Count = Annotated[int, Meta(ge=0, le=_MAX_INT)]
Grade = Annotated[int, Meta(ge=0, le=1_000_000)]
Attempts = Annotated[int, Meta(ge=1, le=1_000_000)]
K = Annotated[int, Meta(ge=1, le=1_000_000)]
Status = Annotated[int, Meta(ge=100, le=999)]
Citation = Annotated[int, Meta(ge=-_MAX_INT, le=_MAX_INT)] | str


class _Error(Struct, frozen=True, gc=False):
    kind: str
    message: str
    status: Status | None = None


class _CaseFields(Struct, frozen=True, gc=False):
    """A case entry's fields other than its scores (those come from :class:`CaseScores`)."""

    id: str
    question: str
    latency_seconds: Seconds
    # tuples and frozensets are built by the decoder (in C) in the record's own types, so
    # the record takes them as they are
    tags: tuple[str, ...] = ()
    unanswerable: bool = False
    relevant_ids: tuple[str, ...] | dict[str, Grade] = ()
    expected_facts: tuple[str | tuple[str, ...], ...] = ()
    ranked_ids: tuple[str, ...] = ()
    answer: str | None = None
    citations: tuple[Citation, ...] = ()
    stage_seconds: dict[str, Seconds] = {}
    attempts: Attempts = 1
    error: _Error | None = None
    texts: dict[str, str] = {}
    # a tuple, not a frozenset: every empty one is the same object (a frozenset is 216
    # bytes per case held while a report is judged); the record takes a frozenset of it
    cut_texts: tuple[str, ...] = ()
    # delivery: written only when measured (streamed answers, token usage, a trace)
    ttfb_seconds: Seconds | None = None
    ttft_seconds: Seconds | None = None
    tokens_per_second: Annotated[float, Meta(ge=0.0)] | None = None
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cost: Annotated[float, Meta(ge=0.0)] | None = None
    trace_id: str | None = None


class _Total(Struct, frozen=True, gc=False):
    sum: Annotated[float, Meta(ge=0.0)]
    count: Count


class _TagSummaryFields(Struct, frozen=True, gc=False):
    """A summary's fields other than its quality ratios (those come from the registry)."""

    case_count: Count
    scored_count: Count
    error_count: Count
    totals: _Totals = msgspec.field(default_factory=lambda: _Totals())
    error_rate: Ratio | None = None
    p50_seconds: Seconds | None = None
    p95_seconds: Seconds | None = None
    stage_p95_seconds: dict[str, Seconds] = {}
    errors_by_kind: dict[str, Count] = {}
    event_loop_lag_p95_seconds: Seconds | None = None
    event_loop_lag_max_seconds: Seconds | None = None
    p50_ttft_seconds: Seconds | None = None
    p95_ttft_seconds: Seconds | None = None
    p95_ttfb_seconds: Seconds | None = None
    p50_tokens_per_second: Annotated[float, Meta(ge=0.0)] | None = None
    input_tokens_total: Count | None = None
    output_tokens_total: Count | None = None
    cost_total: Annotated[float, Meta(ge=0.0)] | None = None
    cost_per_case: Annotated[float, Meta(ge=0.0)] | None = None


# The per-metric fields are made from the registry, so that a metric added there (and its
# CaseScores field) is read back with no edit here. They are still typed fields, not maps:
# a bad value is an error naming the metric, checked in C while decoding.
_SCORE_FIELDS = tuple(f.name for f in dataclasses.fields(CaseScores))
# typed by the decoder: each value already has its CaseScores field's type
_scores_of: Callable[[object], tuple[Any, ...]] = attrgetter(*_SCORE_FIELDS)
_SCORE_TYPES = get_type_hints(CaseScores)
#: the leading CaseScores fields every scored case has (retrieval); the rest may be null
_REQUIRED_SCORES = sum(f.default is dataclasses.MISSING for f in dataclasses.fields(CaseScores))


def _decoded_as(name: str) -> object:
    """How a CaseScores field is read: flags as booleans, everything else a ratio in 0..1
    (CaseScores promises both); optional, since a failed case has no scores."""
    return bool | None if bool in get_args(_SCORE_TYPES[name]) else Ratio | None


if TYPE_CHECKING:  # the generated fields are read by name (getattr, attrgetter)

    class _Case(_CaseFields, frozen=True): ...

    class _Totals(Struct, frozen=True): ...

    class _TagSummary(_TagSummaryFields, frozen=True): ...

else:
    _Case = msgspec.defstruct(
        "_Case",
        [(name, _decoded_as(name), None) for name in _SCORE_FIELDS],
        bases=(_CaseFields,),
        frozen=True,
        gc=False,
    )
    _Totals = msgspec.defstruct(
        "_Totals", [(name, _Total | None, None) for name in QUALITY_METRICS], frozen=True, gc=False
    )
    _TagSummary = msgspec.defstruct(
        "_TagSummary",
        [(name, Ratio | None, None) for name in QUALITY_METRICS],
        bases=(_TagSummaryFields,),
        frozen=True,
        gc=False,
    )


class _Summary(_TagSummary, frozen=True, gc=False):
    # one level only: a tag's summary has no tags of its own
    by_tag: dict[str, _TagSummary] = msgspec.field(default_factory=dict)


class _ReportFields(Struct, frozen=True, gc=False, kw_only=True):
    """A report's fields other than its cases (keyword-only: each subclass adds them)."""

    schema_version: int
    run_id: str
    generated_at: str
    config_hash: str
    dataset_hash: str
    target: str
    dataset: str
    k: K
    duration_seconds: Seconds
    summary: _Summary
    evaluator_version: str = ""
    #: written for compatibility; the report derives it from its cases (RunReport.retrieval_only)
    retrieval_only: bool = False
    case_count: Count | None = None
    error_count: Count | None = None
    #: ``--repeat N``: checked by :func:`evaluator.repeats.repeats_from_dict`
    repeats: dict[str, Any] | None = None
    interrupted: bool = False


class _Report(_ReportFields, frozen=True, gc=False, kw_only=True):
    """The header decoded, each case kept as its slice of the file (decoded one by one)."""

    cases: list[msgspec.Raw]


class _WholeReport(_ReportFields, frozen=True, gc=False, kw_only=True):
    """The header and the cases decoded in one pass (see :func:`_decoded`)."""

    cases: list[_Case]


class _Version(Struct, frozen=True, gc=False):
    schema_version: Any = None


_REPORT = msgspec.json.Decoder(_Report)
_WHOLE = msgspec.json.Decoder(_WholeReport)
_CASE = msgspec.json.Decoder(_Case)
_VERSION = msgspec.json.Decoder(_Version)
_AT = re.compile(r"\s*-\s*at\s*`\$(?P<path>[^`]*)`\s*$")
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]*)`$")


@contextmanager
def _no_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _field_error(source: str, exc: msgspec.ValidationError, prefix: str = "") -> ReportError:
    """msgspec's "Expected `float` <= 1.0 - at `$.summary.mrr`" as our one line."""
    text = str(exc)
    match = _AT.search(text)
    head = text[: match.start()].strip() if match else text
    missing = _MISSING.match(head)
    if missing is not None:
        path = (prefix + (match.group("path").lstrip(".") if match else "")).rstrip(".")
        field = f"{path}.{missing.group('name')}" if path else missing.group("name")
        return ReportError(f"{source}: field {field!r} is missing")
    if match is None and not prefix:
        return ReportError(f"{source}: not a report (expected a JSON object): {text}")
    if match is None:
        return ReportError(f"{source}: field {prefix.rstrip('.')!r}: {text}")
    field = prefix + match.group("path").lstrip(".")
    why = text[: match.start()].strip()
    if not field:
        return ReportError(f"{source}: not a report: {why}")
    return ReportError(f"{source}: field {field!r}: {why}")


def _nonfinite_path(data: object, path: str = "") -> str | None:
    """Where the first NaN or infinity is in decoded JSON (to name the field)."""
    stack: list[tuple[object, str]] = [(data, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where or "report"
        if isinstance(value, dict):
            items = [(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()]
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(v, f"{where}[{i}]") for i, v in enumerate(value)]))
    return None


def _malformed(source: str, raw: bytes, exc: msgspec.DecodeError) -> ReportError:
    """Name the field when the JSON is malformed only by NaN/Infinity, else say where."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return ReportError(f"{source}: not valid JSON (truncated or corrupt?): {exc}")
    where = _nonfinite_path(data)
    if where is not None:
        return ReportError(f"{source}: field {where!r}: not a finite number (NaN or infinity)")
    return ReportError(f"{source}: not valid JSON: {exc}")


def _total_map(entry: _TagSummary) -> dict[str, Total]:
    out: dict[str, Total] = {}
    for name in QUALITY_METRICS:
        total: _Total | None = getattr(entry.totals, name)
        if total is not None:
            out[name] = Total(total.sum, total.count)
    return out


def _ratios(entry: _TagSummary) -> dict[str, float | None]:
    return {name: getattr(entry, name) for name in QUALITY_METRICS}


def _tag_summary(entry: _TagSummary, by_tag: Mapping[str, Summary]) -> Summary:
    return Summary(
        case_count=entry.case_count,
        scored_count=entry.scored_count,
        error_count=entry.error_count,
        totals=_total_map(entry),
        error_rate=entry.error_rate,
        p50_seconds=entry.p50_seconds,
        p95_seconds=entry.p95_seconds,
        stage_p95_seconds=dict(entry.stage_p95_seconds),
        errors_by_kind=dict(entry.errors_by_kind),
        by_tag=by_tag,
        **{name: getattr(entry, name) for name in OPTIONAL_FIELDS},
    )


def _summary(source: str, entry: _Summary) -> Summary:
    by_tag: dict[str, Summary] = {}
    for tag, tag_entry in entry.by_tag.items():
        tag_summary = _tag_summary(tag_entry, {})
        check_summary(source, f"summary.by_tag.{tag}.", tag_summary, _ratios(tag_entry))
        by_tag[tag] = tag_summary
    summary = _tag_summary(entry, by_tag)
    check_summary(source, "summary.", summary, _ratios(entry))
    return summary


#: one empty value for every case without texts or cut texts (most cases of most runs):
#: the decoder builds a new one per case, 280 bytes each
_NO_TEXTS: Mapping[str, str] = MappingProxyType({})
_NO_CUTS: frozenset[str] = frozenset()


def _same_case(
    known: Case,
    c: _Case,
    relevance: Mapping[str, int],
    facts: tuple[tuple[str, ...], ...],
) -> bool:
    """Whether ``known`` is exactly the :class:`Case` this reader would build from ``c``."""
    return (
        known.line == 0
        and not known.graded
        and known.question == c.question
        and known.unanswerable == c.unanswerable
        and known.tags == c.tags
        and known.relevance == relevance
        and known.expected_facts == facts
    )


#: the fields :func:`_case` passes by position, in the models' order: checked when this
#: module loads, so a field added or moved in evaluator/models.py fails loudly here
_CASE_ORDER = ("id", "question", "relevance", "expected_facts", "unanswerable", "tags")
_RECORD_ORDER = (
    "case",
    "outcome",
    "ranked_ids",
    "answer",
    "citations",
    "latency_seconds",
    "stage_seconds",
    "attempts",
    "texts",
    "cut_texts",
    *DELIVERY_FIELDS,
)
for _model, _order, _all in ((Case, _CASE_ORDER, False), (CaseRecord, _RECORD_ORDER, True)):
    _names = tuple(f.name for f in dataclasses.fields(_model))
    if (_names if _all else _names[: len(_order)]) != _order:
        raise TypeError(f"report reader: {_model.__name__} fields are {_names}, not {_order}")


def _case(c: _Case, known: Mapping[str, Case] | None = None) -> CaseRecord:
    """The record of a decoded entry that passed :func:`_check_scored`."""
    rel = c.relevant_ids
    relevance = dict.fromkeys(rel, 1) if isinstance(rel, tuple) else rel
    facts = c.expected_facts
    if facts:
        facts = tuple([f if isinstance(f, tuple) else (f,) for f in facts])
    golden: tuple[tuple[str, ...], ...] = facts  # type: ignore[assignment]  # one-item facts made tuples
    outcome: Outcome
    if c.error is not None:
        outcome = CaseError(c.error.kind, c.error.message, c.error.status)
    else:
        outcome = CaseScores(*_scores_of(c))
    case = known.get(c.id) if known is not None else None
    if case is None or not _same_case(case, c, relevance, golden):
        # by position, in _CASE_ORDER (keywords cost twice as much, per case of a report)
        case = Case(c.id, c.question, relevance, golden, c.unanswerable, c.tags)
    # by position, in _RECORD_ORDER
    return CaseRecord(
        case,
        outcome,
        c.ranked_ids,
        c.answer,
        c.citations,
        c.latency_seconds,
        c.stage_seconds,
        c.attempts,
        c.texts or _NO_TEXTS,
        frozenset(c.cut_texts) if c.cut_texts else _NO_CUTS,
        c.ttfb_seconds,
        c.ttft_seconds,
        c.tokens_per_second,
        c.input_tokens,
        c.output_tokens,
        c.cost,
        c.trace_id,
    )


def _check_scored(source: str, entries: Sequence[_Case]) -> None:
    """A case without an error has its required scores (a case is either scored or
    failed), checked column by column in C.

    Raises:
        ReportError: naming the first such case and its first null score.
    """
    scored = list(compress(entries, map(is_, map(_ERROR, entries), repeat(None))))
    if not any(None in map(getter, scored) for getter in _REQUIRED_OF):
        return  # the usual report: no search for the case
    nulls: set[int] = set()
    for getter in _REQUIRED_OF:
        nulls.update(compress(count(), map(is_, map(getter, entries), repeat(None))))
    failed = [i for i in sorted(nulls) if entries[i].error is None]
    if failed:
        i = failed[0]
        scores = _scores_of(entries[i])
        missing = _SCORE_FIELDS[scores.index(None)]
        raise ReportError(
            f"{source}: field 'cases[{i}].{missing}' is null but the case has no error "
            "(a case is either scored or failed)"
        )


def _entries(source: str, head: _Report) -> list[_Case]:
    """The decoded cases, each checked as it was decoded.

    Raises:
        ReportError: naming the first bad case and field (an earlier case's null score is
            reported before a later case's bad field, as reading case by case finds them).
    """
    try:
        entries = list(map(_CASE.decode, head.cases))
    except msgspec.ValidationError:
        entries = []
        for i, raw in enumerate(head.cases):
            try:
                entries.append(_CASE.decode(raw))
            except msgspec.ValidationError as exc:
                _check_scored(source, entries)
                raise _field_error(source, exc, f"cases[{i}].") from None
    _check_scored(source, entries)
    return entries


_ID = attrgetter("id")
_ERROR = attrgetter("error")
_TAGS = attrgetter("tags")
_UNANSWERABLE = attrgetter("unanswerable")
_LATENCY = attrgetter("latency_seconds")
_STAGES = attrgetter("stage_seconds")
_REQUIRED_OF = tuple(attrgetter(name) for name in _SCORE_FIELDS[:_REQUIRED_SCORES])


def _validated(source: str, head: _Head) -> tuple[Summary, list[_Case], CaseTable]:
    """The summary, the decoded cases and their table, every check passed.

    Raises:
        ReportError: naming the source and the first bad field.
    """
    if head.schema_version != SCHEMA_VERSION:
        raise ReportError(
            f"{source}: schema_version {head.schema_version!r} is not supported "
            f"(expected {SCHEMA_VERSION})"
        )
    summary = _summary(source, head.summary)
    if isinstance(head, _Report):
        entries = _entries(source, head)
    else:  # decoded in one pass: each case's fields already checked
        entries = head.cases
        _check_scored(source, entries)
    ids = list(map(_ID, entries))
    check_ids(source, ids)
    errors = list(map(_ERROR, entries))
    unanswerable = list(map(_UNANSWERABLE, entries))
    if entries:
        failed = len(errors) - errors.count(None)
        for field, written, actual in (
            ("case_count", head.case_count, len(entries)),
            ("error_count", head.error_count, failed),
        ):
            if written is not None and written != actual:
                raise ReportError(
                    f"{source}: field {field!r} is {written} but the report holds {actual}"
                )
        columns = CheckedColumns(
            kinds=[None if e is None else e.kind for e in errors],
            scores=entries,
            unanswerable=unanswerable,
            latency=list(map(_LATENCY, entries)),
            stages=list(map(_STAGES, entries)),
            tags=list(map(_TAGS, entries)),
        )
        check_summary_columns(source, summary, columns)
    table = CaseTable(
        ids=ids,
        errors=errors,
        scores=entries,
        unanswerable=unanswerable,
        rows=entries,
        show=_shown,
    )
    return summary, entries, table


def _shown(c: _Case) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What a case diff shows of an entry, as of its record (relevant ids deduplicated)."""
    rel = c.relevant_ids
    if not isinstance(rel, tuple):
        relevant = tuple(rel)
    else:  # a record's relevance is dict.fromkeys(rel): one id has no repeat to drop
        relevant = rel if len(rel) < 2 else tuple(dict.fromkeys(rel))
    return c.question, relevant, c.ranked_ids


def _records(entries: Sequence[_Case], share: RunReport | None) -> tuple[CaseRecord, ...]:
    known = {r.case.id: r.case for r in share.cases} if share is not None else None
    return tuple([_case(entry, known) for entry in entries])


def _build(source: str, head: _Head, share: RunReport | None = None) -> RunReport:
    summary, entries, _ = _validated(source, head)
    return RunReport(
        run_id=head.run_id,
        generated_at=_generated_at(source, head.generated_at),
        config_hash=head.config_hash,
        dataset_hash=head.dataset_hash,
        target=head.target,
        dataset=head.dataset,
        k=head.k,
        duration_seconds=head.duration_seconds,
        summary=summary,
        cases=_records(entries, share),
        repeats=_repeats(source, head.repeats),
        interrupted=head.interrupted,
        evaluator_version=head.evaluator_version,
        schema_version=SCHEMA_VERSION,
    )


def _build_columns(source: str, head: _Head) -> ReportColumns:
    summary, entries, table = _validated(source, head)
    return ReportColumns(
        run_id=head.run_id,
        generated_at=_generated_at(source, head.generated_at),
        config_hash=head.config_hash,
        dataset_hash=head.dataset_hash,
        target=head.target,
        dataset=head.dataset,
        k=head.k,
        duration_seconds=head.duration_seconds,
        summary=summary,
        table=table,
        records=partial(_records, entries),
        repeats=_repeats(source, head.repeats),
        interrupted=head.interrupted,
        evaluator_version=head.evaluator_version,
        schema_version=SCHEMA_VERSION,
    )


def _generated_at(source: str, text: str) -> datetime:
    try:
        return parse_timestamp(text)
    except ValueError:
        raise ReportError(
            f"{source}: field 'generated_at' is not an ISO 8601 time: {text[:40]!r}"
        ) from None


def _repeats(source: str, raw: dict[str, Any] | None) -> Repeats | None:
    """The optional ``repeats`` block (``--repeat N``), checked."""
    if raw is None:
        return None
    try:
        return repeats_from_dict(raw, source)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def _version_error(source: str, raw: bytes | None, data: object) -> ReportError | None:
    """A clearer message when the report is of another schema version."""
    try:
        if raw is not None:
            version = _VERSION.decode(raw).schema_version
        else:
            version = data.get("schema_version") if isinstance(data, Mapping) else None
    except (msgspec.MsgspecError, RecursionError):
        return None
    if version == SCHEMA_VERSION:
        return None
    return ReportError(
        f"{source}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})"
    )


#: a report's header, its cases decoded with it or kept as slices of the file
_Head = _Report | _WholeReport


def _decoded(raw: bytes, source: str) -> _Head:
    """The report decoded: in one pass (a valid report), or, when that fails, the header
    first and then case by case, as the errors are named and ordered."""
    try:
        return _WHOLE.decode(raw)
    except (msgspec.MsgspecError, RecursionError):
        pass  # the same decoding again, step by step, for the same first error
    try:
        return _REPORT.decode(raw)
    except msgspec.ValidationError as exc:
        raise (_version_error(source, raw, None) or _field_error(source, exc)) from None
    except msgspec.DecodeError as exc:
        raise _malformed(source, raw, exc) from None
    except RecursionError:
        raise ReportError(f"{source}: nested too deeply to be a report") from None


@without_gc
def parse_report(
    raw: bytes, source: str = "report", *, share: RunReport | None = None
) -> RunReport:
    """A report from the bytes of its file, validated.

    ``share``: a report read before (a baseline) whose golden-set cases this one reuses
    where a case is the same in every field, so two reports of one golden set hold its
    cases once (a fifth of the memory of each further report).

    Raises:
        ReportError: naming ``source`` and the first bad field.
    """
    with _no_gc():
        return _build(source, _decoded(raw, source), share)


@without_gc
def parse_columns(raw: bytes, source: str = "report") -> ReportColumns:
    """:func:`parse_report` as columns: the same checks and errors, no records built.

    Raises:
        ReportError: naming ``source`` and the first bad field.
    """
    with _no_gc():
        return _build_columns(source, _decoded(raw, source))


def report_from_dict(data: object, source: str = "report") -> RunReport:
    """A report from its decoded JSON (a dict), validated exactly as :func:`read_report`.

    Raises:
        ReportError: naming the source and the first bad field.
    """
    if not isinstance(data, Mapping):
        raise ReportError(f"{source}: not a report (expected a JSON object)")
    where = _nonfinite_path(data)
    if where is not None:
        raise ReportError(f"{source}: field {where!r}: not a finite number (NaN or infinity)")
    try:
        raw = msgspec.json.encode(data)
    except (TypeError, OverflowError, ValueError) as exc:
        raise ReportError(f"{source}: not a report: {exc}") from None
    return parse_report(raw, source)


def read_report(path: str | os.PathLike[str], *, share: RunReport | None = None) -> RunReport:
    """Read and validate a report file (compact or indented); ``share`` as in
    :func:`parse_report`.

    Raises:
        ReportError: unreadable, not JSON (e.g. truncated), not a report, or inconsistent;
            the message names the file and the field.
    """
    return parse_report(_read(path), str(path), share=share)


def read_columns(path: str | os.PathLike[str]) -> ReportColumns:
    """:func:`read_report` as columns (:mod:`evaluator.report.columns`): what the gate
    judges two saved reports on.

    Raises:
        ReportError: as :func:`read_report`, with the same messages.
    """
    return parse_columns(_read(path), str(path))


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        return border.read_file(path)
    except OSError as exc:
        raise ReportError(f"{path}: cannot read report: {exc.strerror or exc}") from exc

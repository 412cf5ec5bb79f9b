"""Reading a report back: one pass over the file, typed and range-checked while decoding.

The file is decoded by msgspec against the schema below, its header straight into
:class:`~evaluator.report.model.RunHeader`'s fields (in C: types, finite numbers,
ratios in 0..1, non-negative counts, integers of sane size; NaN, Infinity and 1e400 are not
numbers here), and each decoded case becomes its :class:`CaseRecord`. The summary is not
trusted but derived: recomputed from the cases (:func:`evaluator.summary.summarise`), so a
summary copied from a better run onto other cases cannot decide a release. Only a report
without cases (a summary-only report, hand-made or exported) is judged on its written
summary, which must then agree with itself (:mod:`evaluator.report.check`).

A compact report (one case per line) and an indented one (older versions wrote
``indent=2``) read back identically. Fields this version does not know are skipped, so a
newer report with more per-case fields still reads; to add a field, add it to the
``_CaseFields`` struct with a default and pass it in :func:`_case` (a header field: to
:class:`RunHeader` with a default, read with no edit here, written by the writer);
a score (a :class:`CaseScores` field) and a registered quality ratio need no edit here.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_type_hints

import msgspec
from msgspec import Meta, Struct

from evaluator import border
from evaluator.errors import ReportError
from evaluator.metrics import TURN_POSITIONS
from evaluator.models import Case, CaseError, CaseRecord, CaseScores, Outcome, OutOfRange, Turn
from evaluator.repeat_summary import repeats_from_dict
from evaluator.report.check import check_ids, check_summary, check_turn
from evaluator.report.model import SCHEMA_VERSION, RunHeader, RunReport, Seconds, as_utc
from evaluator.scoring.conversation import conversation_success
from evaluator.summary import OPTIONAL_FIELDS, QUALITY_METRICS, Summary, Total, summarise

__all__ = ["parse_report", "read_report", "report_from_dict"]

# integers beyond 2**53 are not counts anyone made, and do not survive a float round trip
_MAX_INT = 2**53
Ratio = Annotated[float, Meta(ge=0.0, le=1.0)]
# the border's range for a number from outside (checked by the decoder, in C): a cost of
# 1e308 per case overflowed the sums of the gate (an internal error); durations: Seconds
Amount = Annotated[float, Meta(ge=0.0, le=border.MAX_NUMBER)]
Count = Annotated[int, Meta(ge=0, le=_MAX_INT)]
Grade = Annotated[int, Meta(ge=0, le=1_000_000)]
# 0: a conversation's turn skipped after an earlier one failed (never asked)
Attempts = Annotated[int, Meta(ge=0, le=1_000_000)]
Citation = Annotated[int, Meta(ge=-_MAX_INT, le=_MAX_INT)] | str


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
    # decoded as the record's own CaseError (its status range-checked by its type)
    error: CaseError | None = None
    texts: dict[str, str] = {}
    # a tuple, not a frozenset: every empty one is the same object (a frozenset is 216
    # bytes per case held while a report is judged); the record takes a frozenset of it
    cut_texts: tuple[str, ...] = ()
    # delivery: written only when measured (streamed answers, token usage, a trace)
    ttfb_seconds: Seconds | None = None
    ttft_seconds: Seconds | None = None
    tokens_per_second: Amount | None = None
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cost: Amount | None = None
    trace_id: str | None = None
    span_id: str | None = None
    # a conversation's turn: both or neither (checked by check_turn)
    conversation: str | None = None
    turn: int | None = None
    assistant: str | None = None
    # optional figures the target reported out of range (each name checked in C)
    out_of_range: tuple[OutOfRange, ...] = ()


class _Total(Struct, frozen=True, gc=False):
    sum: Amount
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
    out_of_range: dict[OutOfRange, Count] = {}
    event_loop_lag_p95_seconds: Seconds | None = None
    event_loop_lag_max_seconds: Seconds | None = None
    p50_ttft_seconds: Seconds | None = None
    p95_ttft_seconds: Seconds | None = None
    p95_ttfb_seconds: Seconds | None = None
    p50_tokens_per_second: Amount | None = None
    input_tokens_total: Count | None = None
    output_tokens_total: Count | None = None
    cost_total: Amount | None = None
    cost_per_case: Amount | None = None
    p50_conversation_seconds: Seconds | None = None
    p95_conversation_seconds: Seconds | None = None


# The per-metric fields are made from the registry, so that a metric added there (and its
# CaseScores field) is read back with no edit here. They are still typed fields, not maps:
# a bad value is an error naming the metric, checked in C while decoding.
_SCORE_FIELDS = CaseScores.__struct_fields__
_SCORE_TYPES = get_type_hints(CaseScores)


def _decoded_as(name: str) -> object:
    """How a CaseScores field is read: flags as booleans, everything else a ratio in 0..1
    (CaseScores promises both); optional, since a failed case has no scores."""
    return bool | None if bool in get_args(_SCORE_TYPES[name]) else Ratio | None


if TYPE_CHECKING:  # the generated fields are read by name (getattr, msgspec.convert)

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
    # keyed by TURN_POSITIONS (checked when a summary-only report is read)
    by_position: dict[str, _TagSummary] = msgspec.field(default_factory=dict)


class _Report(RunHeader, frozen=True, gc=False, kw_only=True):
    """A report decoded: its header, straight into :class:`RunHeader`'s fields (typed and
    range-checked there), its written summary and every case."""

    #: required in a file (a record made in memory defaults to this version's)
    schema_version: int
    #: reports before the field read as of no known version
    evaluator_version: str = ""
    summary: _Summary
    #: written for compatibility; the report derives it from its cases (RunReport.retrieval_only)
    retrieval_only: bool = False
    case_count: Count | None = None
    error_count: Count | None = None
    #: ``--repeat N``: checked by :func:`evaluator.repeat_summary.repeats_from_dict`
    repeats: dict[str, Any] | None = None
    #: the LLM judge's block, checked by evaluator.judge.record.judged_run_from_dict
    judge: dict[str, Any] | None = None
    cases: list[_Case]


_conversation_of = attrgetter("conversation")
_turn_of = attrgetter("turn")

#: the header's fields, read from a decoded report as they are
_HEADER_FIELDS = RunHeader.__struct_fields__
_header_of = attrgetter(*_HEADER_FIELDS)


class _Version(Struct, frozen=True, gc=False):
    schema_version: Any = None


_REPORT = msgspec.json.Decoder(_Report)
_VERSION = msgspec.json.Decoder(_Version)
_AT = re.compile(r"\s*-\s*at\s*`\$(?P<path>[^`]*)`\s*$")
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]*)`$")


def _field_error(source: str, exc: msgspec.ValidationError) -> ReportError:
    """msgspec's "Expected `float` <= 1.0 - at `$.summary.mrr`" as our one line."""
    text = str(exc)
    match = _AT.search(text)
    why = text[: match.start()].strip() if match else text
    missing = _MISSING.match(why)
    if missing is not None:
        path = (match.group("path").lstrip(".") if match else "").rstrip(".")
        field = f"{path}.{missing.group('name')}" if path else missing.group("name")
        return ReportError(f"{source}: field {field!r} is missing")
    if match is None:
        return ReportError(f"{source}: not a report (expected a JSON object): {text}")
    field = match.group("path").lstrip(".")
    if why.startswith("Invalid RFC3339"):  # a time (generated_at), in the reader's words
        return ReportError(f"{source}: field {field!r} is not an ISO 8601 time (RFC 3339)")
    if not field:
        return ReportError(f"{source}: not a report: {why}")
    return ReportError(f"{source}: field {field!r}: {why}")


def _nonfinite_path(data: object) -> str | None:
    """Where the first NaN or infinity is in decoded JSON (to name the field)."""
    stack: list[tuple[object, str]] = [(data, "")]
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


def _ratios(entry: _TagSummary) -> dict[str, float | None]:
    return {name: getattr(entry, name) for name in QUALITY_METRICS}


def _tag_summary(
    entry: _TagSummary,
    by_tag: Mapping[str, Summary],
    by_position: Mapping[str, Summary] | None = None,
) -> Summary:
    return Summary(
        case_count=entry.case_count,
        scored_count=entry.scored_count,
        error_count=entry.error_count,
        totals={
            name: Total(total.sum, total.count)
            for name in QUALITY_METRICS
            if (total := getattr(entry.totals, name)) is not None
        },
        error_rate=entry.error_rate,
        p50_seconds=entry.p50_seconds,
        p95_seconds=entry.p95_seconds,
        stage_p95_seconds=dict(entry.stage_p95_seconds),
        errors_by_kind=dict(entry.errors_by_kind),
        out_of_range=dict(entry.out_of_range),
        by_tag=by_tag,
        by_position=by_position or {},
        **{name: getattr(entry, name) for name in OPTIONAL_FIELDS},
    )


def _written_summary(source: str, entry: _Summary) -> Summary:
    """The summary as written, for a report without cases: it must agree with itself."""
    by_tag: dict[str, Summary] = {}
    for tag, tag_entry in entry.by_tag.items():
        tag_summary = _tag_summary(tag_entry, {})
        check_summary(source, f"summary.by_tag.{tag}.", tag_summary, _ratios(tag_entry))
        by_tag[tag] = tag_summary
    by_position: dict[str, Summary] = {}
    for position, position_entry in entry.by_position.items():
        where = f"summary.by_position.{position}."
        if position not in TURN_POSITIONS:
            raise ReportError(
                f"{source}: field {where[:-1]!r} is not a turn position "
                f"({', '.join(TURN_POSITIONS)})"
            )
        position_summary = _tag_summary(position_entry, {})
        check_summary(source, where, position_summary, _ratios(position_entry))
        by_position[position] = position_summary
    summary = _tag_summary(entry, by_tag, by_position)
    check_summary(source, "summary.", summary, _ratios(entry))
    return summary


#: one empty value for every case without texts or cut texts (most cases of most runs, read
#: back or streamed): each ``frozenset()`` call is a new 216-byte object
_NO_TEXTS: Mapping[str, str] = MappingProxyType({})
_NO_CUTS: frozenset[str] = frozenset()


def _case(c: _Case, known: Mapping[str, Case]) -> CaseRecord:
    """The record of the decoded case ``c``."""
    outcome: Outcome
    if c.error is not None:
        outcome = c.error
    else:
        # any score may be null: retrieval when the target's ids are not mapped; each
        # score read off the decoded case by its name, in C
        outcome = msgspec.convert(c, CaseScores, from_attributes=True)
    case = _golden_case(c)
    # two reports of one golden set hold its cases once (see parse_report's ``share``)
    shared = known.get(c.id)
    if shared is not None and shared == case:
        case = shared
    return CaseRecord(
        case=case,
        outcome=outcome,
        ranked_ids=c.ranked_ids,
        answer=c.answer,
        citations=c.citations,
        latency_seconds=c.latency_seconds,
        stage_seconds=c.stage_seconds,
        attempts=c.attempts,
        texts=c.texts or _NO_TEXTS,
        cut_texts=frozenset(c.cut_texts) if c.cut_texts else _NO_CUTS,
        ttfb_seconds=c.ttfb_seconds,
        ttft_seconds=c.ttft_seconds,
        tokens_per_second=c.tokens_per_second,
        input_tokens=c.input_tokens,
        output_tokens=c.output_tokens,
        cost=c.cost,
        trace_id=c.trace_id,
        span_id=c.span_id,
        out_of_range=c.out_of_range,
    )


def _golden_case(c: _Case) -> Case:
    """The golden-set case a decoded entry ran: binary relevance from a list of ids, a bare
    fact as its one alternative, a conversation's turn with its place."""
    rel = c.relevant_ids
    turn = None
    if c.conversation is not None and c.turn is not None:
        turn = Turn(conversation=c.conversation, position=c.turn, assistant=c.assistant)
    return Case(
        id=c.id,
        question=c.question,
        relevance=dict.fromkeys(rel, 1) if isinstance(rel, tuple) else rel,
        expected_facts=tuple(f if isinstance(f, tuple) else (f,) for f in c.expected_facts),
        unanswerable=c.unanswerable,
        tags=c.tags,
        turn=turn,
    )


def _records(head: _Report, share: RunReport | None) -> tuple[CaseRecord, ...]:
    """Every case's record, each decoded entry dropped once its record is built (the
    entries and the records of a large report are not held at once)."""
    known = {r.case.id: r.case for r in share.cases} if share is not None else {}
    entries = head.cases
    records = []
    for i, entry in enumerate(entries):
        records.append(_case(entry, known))
        entries[i] = None  # type: ignore[call-overload]
    if any(r.case.turn is not None for r in records):
        return _successes_derived(records)
    return tuple(records)


def _successes_derived(records: list[CaseRecord]) -> tuple[CaseRecord, ...]:
    """``records`` with each conversation's success derived from its turns' scores, never
    taken from the file: it stays on the turn that carries one (the last turn the run
    scored), its value recomputed over the conversation's turns up to it."""
    turns: dict[str, list[CaseScores | None]] = {}
    out = []
    for record in records:
        place = record.case.turn
        scores = record.scores
        if place is None:
            out.append(record)
            continue
        before = turns.setdefault(place.conversation, [])
        before.append(scores)
        if scores is not None and scores.conversation_success is not None:
            derived = msgspec.structs.replace(
                scores, conversation_success=conversation_success(before)
            )
            record = msgspec.structs.replace(record, outcome=derived)
        out.append(record)
    return tuple(out)


def _check_cases(source: str, head: _Report) -> None:
    """The cases' ids are unique, a conversation's turns in place, and the counts the header
    states (when it states them) are the cases'.

    Raises:
        ReportError: naming the source and the field.
    """
    check_ids(source, [c.id for c in head.cases])
    if any(map(_conversation_of, head.cases)) or any(map(_turn_of, head.cases)):
        for index, entry in enumerate(head.cases):  # only a report with conversations
            check_turn(source, index, entry.id, entry.conversation, entry.turn)
    if not head.cases:
        return
    failed = sum(c.error is not None for c in head.cases)
    for field, value, actual in (
        ("case_count", head.case_count, len(head.cases)),
        ("error_count", head.error_count, failed),
    ):
        if value is not None and value != actual:
            raise ReportError(f"{source}: field {field!r} is {value} but the report holds {actual}")


def _build(source: str, head: _Report, share: RunReport | None = None) -> RunReport:
    """The report of a decoded file, every check passed.

    Raises:
        ReportError: naming the source and the first bad field.
    """
    if head.schema_version != SCHEMA_VERSION:
        raise _unsupported(source, head.schema_version)
    _check_cases(source, head)
    written = head.summary
    if not head.cases:  # a summary-only report: judged on what it says
        summary = _written_summary(source, written)
        cases: tuple[CaseRecord, ...] = ()
    else:
        cases = _records(head, share)
        # derived from the cases; the event loop's lag is the run's, not the cases'
        summary = replace(
            summarise(cases),
            event_loop_lag_p95_seconds=written.event_loop_lag_p95_seconds,
            event_loop_lag_max_seconds=written.event_loop_lag_max_seconds,
        )
    try:  # the optional ``repeats`` block (``--repeat N``)
        repeats = None if head.repeats is None else repeats_from_dict(head.repeats, source)
    except ValueError as exc:
        raise ReportError(str(exc)) from None
    header = dict(zip(_HEADER_FIELDS, _header_of(head), strict=True))
    header["generated_at"] = as_utc(head.generated_at)
    return RunReport(**header, summary=summary, cases=cases, repeats=repeats, judge=head.judge)


def _version_error(source: str, raw: bytes) -> ReportError | None:
    """A clearer message when the report is of another schema version."""
    try:
        version = _VERSION.decode(raw).schema_version
    except (msgspec.MsgspecError, RecursionError):
        return None
    return None if version == SCHEMA_VERSION else _unsupported(source, version)


def _unsupported(source: str, version: object) -> ReportError:
    return ReportError(
        f"{source}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})"
    )


def _decoded(raw: bytes, source: str) -> _Report:
    """The report decoded and range-checked.

    Raises:
        ReportError: naming the source and the first bad field (or the schema version).
    """
    try:
        return _REPORT.decode(raw)
    except msgspec.ValidationError as exc:
        raise (_version_error(source, raw) or _field_error(source, exc)) from None
    except msgspec.DecodeError as exc:
        cleaned = _through_the_border(raw)
        if cleaned is None:
            raise _malformed(source, raw, exc) from None
    except RecursionError:
        raise ReportError(f"{source}: nested too deeply to be a report") from None
    try:
        return _REPORT.decode(cleaned)
    except msgspec.ValidationError as exc:
        raise (_version_error(source, cleaned) or _field_error(source, exc)) from None


def _through_the_border(raw: bytes) -> bytes | None:
    """JSON msgspec refused but the border reads (a lone surrogate ``\\ud83d`` escaped in a
    string, what a JavaScript tool writes when it cuts inside an emoji), with every string
    through :func:`evaluator.border.value` (surrogates replaced and counted), encoded again;
    None for JSON that is not valid anyway or holds NaN or infinity (named by the caller)."""
    try:
        data = border.loads(raw)
    except ValueError:
        return None
    if _nonfinite_path(data) is not None:
        return None
    try:
        return msgspec.json.encode(data)
    except (TypeError, OverflowError, ValueError):
        return None


def parse_report(
    raw: bytes, source: str = "report", *, share: RunReport | None = None
) -> RunReport:
    """A report from the bytes of its file, validated, its summary derived from its cases.

    ``share``: a report read before (a baseline) whose golden-set cases this one reuses
    where a case is the same in every field, so two reports of one golden set hold its
    cases once.

    Raises:
        ReportError: naming ``source`` and the first bad field.
    """
    return _build(source, _decoded(raw, source), share)


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
    try:
        raw = border.read_file(path)
    except OSError as exc:
        raise ReportError(f"{path}: cannot read report: {exc.strerror or exc}") from exc
    return parse_report(raw, str(path), share=share)

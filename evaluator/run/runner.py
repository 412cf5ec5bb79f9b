"""One evaluation pass: every case of a golden set against a target, scored, into a report.

The runner never sleeps and never schedules: the CLI calls it once, the daemon on a timer.
Failed cases are recorded with their error kind and stay out of the quality averages.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from sys import intern
from typing import Any, NamedTuple

import msgspec

from evaluator import process_state
from evaluator.bounds import DEFAULT_TEXT_CHARS, OFF_LOOP_ANSWER_CHARS, RecordLimits
from evaluator.errors import (
    BadResponseError,
    CallError,
    SkippedAfterError,
    TargetError,
    TargetHTTPStatusError,
)
from evaluator.models import (
    Case,
    CaseError,
    CaseRecord,
    CaseScores,
    Conversation,
    Dataset,
    Delivery,
    Dialogue,
    GoldenCase,
    Retrieved,
    TargetResponse,
)
from evaluator.redaction import redactor
from evaluator.repeat_summary import summarise_repeats
from evaluator.report import RunReport, compute_config_hash
from evaluator.retry import call_with_retries
from evaluator.run.looplag import LoopLagMonitor
from evaluator.run.otlp import CaseSpans
from evaluator.run.otlp import active as active_spans
from evaluator.run_options import RunOptions
from evaluator.scoring.case import score_case
from evaluator.scoring.conversation import conversation_success
from evaluator.summary import summarise
from evaluator.targets.admission import measure_queue_wait
from evaluator.targets.base import Target

__all__ = [
    "TEXT_KEEP_CHARS",
    "CaseSink",
    "RetryEvent",
    "RunOptions",
    "config_hash_for",
    "new_conversation_id",
    "new_run_id",
    "run_dataset",
]


@dataclass(frozen=True, slots=True)
class RetryEvent:
    """A transient failure about to be retried (for logs and counters)."""

    case_id: str
    attempt: int
    kind: str
    message: str
    sleep_seconds: float


CaseCallback = Callable[[CaseRecord], None]
RetryCallback = Callable[[RetryEvent], None]
#: takes a first-round case as it finishes, with its golden-set position (a report
#: stream writing it out); returns what the run keeps of it for the report in memory
CaseSink = Callable[[int, CaseRecord], CaseRecord]


def new_run_id() -> str:
    """A new run's id (when the caller needs it before the run: its report's file name)."""
    return uuid.uuid4().hex[:12]


def config_hash_for(dataset: Dataset, target: Target, options: RunOptions) -> str:
    """The configuration identity of a run of ``dataset`` against ``target``."""
    return compute_config_hash(
        dataset_hash=dataset.content_hash,
        target_identity=target.identity(),
        k=options.k,
        scoring={"refusal_phrases": list(options.scoring.refusal_phrases)},
    )


#: evidence text kept per id in reports by default: enough for read-back and the label
#: audit, while a target returning huge chunks cannot grow a report without bound
TEXT_KEEP_CHARS = DEFAULT_TEXT_CHARS


#: shared: each ``frozenset()`` call is a new 216-byte object, once per case
_NO_CUTS: frozenset[str] = frozenset()


def _kept_texts(
    case: Case, response: TargetResponse, ranked: tuple[str, ...], k: int, limits: RecordLimits
) -> tuple[dict[str, str], frozenset[str]]:
    """Texts of the top-K ids and of the relevant ids, first occurrence, each cut to size
    (redacted first: a cut must not leave half a secret). ``ranked`` is the response's
    ``ranked_ids``.

    Ids and texts are interned: a corpus is finite, so the same passage comes back for many
    cases, for every run of a job and for every job on the same service, and each parsed
    copy was kept. At platform scale (100 jobs x 1,000 cases held at once) the copies were
    1.5 KB of the 2 KB a case's evidence took; interned strings are freed with their last
    record, so hostile unique texts cost what they did before."""
    keep = limits.max_text_chars
    id_chars = limits.max_id_chars
    relevance = case.relevance
    items: tuple[Retrieved, ...] = response.retrieved
    if len(ranked) != len(items):
        # repeated ids: only the first occurrence of each counts, and takes the rank
        first: dict[str, Retrieved] = {}
        for item in items:
            first.setdefault(item.id, item)
        items = tuple(first.values())
    texts: dict[str, str] = {}
    cut: set[str] = set()
    for rank, item in enumerate(items, start=1):
        text = item.text
        if not text:
            continue
        raw_id = item.id
        if rank > k and raw_id not in relevance:
            continue
        doc_id = raw_id if len(raw_id) <= id_chars else limits.id(raw_id)
        if len(text) > keep:
            cut.add(doc_id)
            text = redactor().redact_text(text[: keep + 1024])[:keep]
        texts[intern(doc_id)] = intern(text)
    return texts, frozenset(cut) if cut else _NO_CUTS


def _record(
    case: Case,
    result: TargetResponse | CaseError,
    options: RunOptions,
    latency: float,
    attempts: int,
    trace_id: str | None = None,
    scored: tuple[CaseScores, str | None] | None = None,
    span_id: str | None = None,
) -> CaseRecord:
    """The record of a case the target answered (scored here, or given its :func:`_scored`
    already) or that failed with ``result``; ``trace_id`` and ``span_id`` are the ones its
    request's ``traceparent`` carried (:func:`_span_of` says which span the record keeps)."""
    if isinstance(result, CaseError):
        return CaseRecord(
            case=case,
            outcome=result,
            ranked_ids=(),
            answer=None,
            citations=(),
            latency_seconds=latency,
            stage_seconds={},
            attempts=attempts,
            trace_id=trace_id,
            span_id=_span_of(trace_id, trace_id, span_id),
        )
    limits = options.limits
    response = limits.ranking(result)
    ranked = response.ranked_ids  # once: scoring and the record both need it
    texts, cut = _kept_texts(case, response, ranked, options.k, limits)
    ttfb, ttft, tps, tokens_in, tokens_out, cost, trace = _delivery_fields(
        response.delivery, trace_id
    )
    outcome, answer = scored if scored is not None else _scored(case, response, ranked, options)
    return CaseRecord(
        case=case,
        outcome=outcome,
        ranked_ids=tuple(map(intern, limits.ids(ranked))),
        answer=answer,
        citations=limits.citations(response.citations),
        latency_seconds=latency,
        stage_seconds=options.stages.fold(response.timings),
        attempts=attempts,
        texts=texts,
        cut_texts=cut,
        ttfb_seconds=ttfb,
        ttft_seconds=ttft,
        tokens_per_second=tps,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost=cost,
        trace_id=trace,
        span_id=_span_of(trace, trace_id, span_id),
        out_of_range=response.out_of_range,
    )


def _scored(
    case: Case, response: TargetResponse, ranked: tuple[str, ...], options: RunOptions
) -> tuple[CaseScores, str | None]:
    """A response's scores and its answer as stored: the two parts of a record whose cost
    grows with the answer (normalisation, redaction), pure, so a worker thread may do them.
    ``response`` has its ranking cut already, ``ranked`` is its ``ranked_ids``."""
    limits = options.limits
    scores = score_case(case, limits.scored(response), options.k, options.scoring, ranked)
    return scores, limits.answer(response.answer)


def _off_loop(
    case: Case, response: TargetResponse, options: RunOptions
) -> asyncio.Future[tuple[CaseScores, str | None]] | None:
    """A long answer's :func:`_scored` running in a worker thread, so that its normalisation
    (bounded, yet about 20 ms of U+FDFA) never holds the event loop, the daemon's
    ``/healthz`` and every other job; None for a short one, the common case, scored inline
    by :func:`_record` (no coroutine made for it). One thread scores them one at a time:
    normalisation holds the GIL a piece at a time (about 10 ms, see
    :mod:`evaluator.scoring.answer`); four long answers scored at once in
    ``asyncio.to_thread``'s pool made ``/healthz`` wait 0.6 s, in one thread it waits a piece."""
    answer = response.answer
    if answer is None or len(answer) <= OFF_LOOP_ANSWER_CHARS:
        return None
    ranked_response = options.limits.ranking(response)
    return asyncio.get_running_loop().run_in_executor(
        process_state.worker("scoring"),
        _scored,
        case,
        ranked_response,
        ranked_response.ranked_ids,
        options,
    )


def _delivery_fields(
    delivery: Delivery | None, trace_id: str | None
) -> tuple[
    float | None, float | None, float | None, int | None, int | None, float | None, str | None
]:
    """(ttfb, ttft, tokens per second, input tokens, output tokens, cost, trace id) of a
    record (a tuple, not keyword arguments unpacked from a dict: once per case)."""
    if delivery is None:
        return None, None, None, None, None, None, trace_id
    tps = delivery.tokens_per_second
    return (
        delivery.ttfb_seconds,
        delivery.ttft_seconds,
        tps if tps is None or math.isfinite(tps) else None,
        delivery.input_tokens,
        delivery.output_tokens,
        delivery.cost,
        delivery.trace_id or trace_id,
    )


def _case_error(exc: TargetError, message: str) -> CaseError:
    """The case's error, with the exception's structured context carried over."""
    status = exc.status if isinstance(exc, TargetHTTPStatusError) else None
    if isinstance(exc, BadResponseError):
        return CaseError(
            kind=exc.kind,
            message=message,
            status=status,
            field=exc.field,
            expression=exc.expression,
        )
    return CaseError(kind=exc.kind, message=message, status=status)


@dataclass(frozen=True, slots=True)
class _SpanContext:
    """What the case spans of one run say besides the case: where it ran and how."""

    spans: CaseSpans
    attributes: dict[str, str | int]


class _Asked(NamedTuple):
    """A case's record, and what the next turn of its conversation needs from the call."""

    record: CaseRecord
    #: the OTLP span id of the call (None when it was not traced)
    span_id: str | None = None
    #: the conversation id the service returned (stateful services)
    service_id: str | None = None


def _run_case(
    case: Case,
    target: Target,
    options: RunOptions,
    on_retry: RetryCallback | None,
    spans: _SpanContext | None = None,
    dialogue: Dialogue | None = None,
) -> Awaitable[_Asked]:
    """The case asked, and its span recorded when spans are exported. Not a coroutine
    itself: without spans the caller awaits :func:`_attempt_case` directly (one coroutine a
    case fewer)."""
    attempt = _attempt_case(case, target, options, on_retry, dialogue)
    return attempt if spans is None else _spanned(attempt, spans)


async def _spanned(attempt: Awaitable[_Asked], spans: _SpanContext) -> _Asked:
    """``attempt`` awaited, and the span of its case recorded with the time it took."""
    start_ns = time.time_ns()
    asked = await attempt
    spans.spans.record(
        asked.record,
        span_id=asked.span_id,
        start_ns=start_ns,
        end_ns=time.time_ns(),
        attributes=spans.attributes,
    )
    return asked


async def _attempt_case(
    case: Case,
    target: Target,
    options: RunOptions,
    on_retry: RetryCallback | None,
    dialogue: Dialogue | None = None,
) -> _Asked:
    limits = options.limits
    # a question of its own is asked as it always was: targets that hold no conversation
    # need not take a dialogue (partials, not closures: nothing made or called in Python)
    call: Callable[[], Awaitable[TargetResponse]] = (
        functools.partial(target.query, case, options.k)
        if dialogue is None
        else functools.partial(target.query, case, options.k, dialogue)
    )
    retried = None if on_retry is None else _retry_reporter(on_retry, case.id, limits)

    # time queued behind the target's own limits (rate, connections) is not its latency
    with measure_queue_wait() as queued:
        started = time.perf_counter()
        try:
            response, attempts = await call_with_retries(call, options.retry, on_retry=retried)
        except TargetError as exc:
            latency = time.perf_counter() - started - queued.seconds
            error = _case_error(exc, limits.message(exc.message))
            record = _record(
                case, error, options, latency, exc.attempts, queued.trace_id, span_id=queued.span_id
            )
            return _Asked(record, queued.span_id)
    # ends at the last byte when the target says when it came (parsing is not its latency)
    ended = queued.received_at if queued.received_at is not None else time.perf_counter()
    latency = ended - started - queued.seconds
    scoring = _off_loop(case, response, options)
    scored = None if scoring is None else await scoring
    record = _record(
        case, response, options, latency, attempts, queued.trace_id, scored, queued.span_id
    )
    return _Asked(record, queued.span_id, response.conversation_id)


def _retry_reporter(
    on_retry: RetryCallback, case_id: str, limits: RecordLimits
) -> Callable[[int, CallError, float], None]:
    """What tells ``on_retry`` of each retry of one case, its message bounded."""

    def retried(attempt: int, exc: CallError, sleep: float) -> None:
        on_retry(RetryEvent(case_id, attempt, exc.kind, limits.message(exc.message), sleep))

    return retried


def _span_of(trace: str | None, trace_id: str | None, span_id: str | None) -> str | None:
    """The span id a record whose trace is ``trace`` keeps: the one its request's
    ``traceparent`` carried (``trace_id``, ``span_id``) when the record's trace is that
    request's (a service that reports a trace of its own keeps it, without our span).
    Given to the record as it is made: a copy of each record to add it was a case's cost."""
    if span_id is None or trace_id is None or trace != trace_id:
        return None
    return span_id


#: what a finished case is handed to: its position in the report and its record
_Finished = Callable[[int, CaseRecord], None]


async def _run_conversation(
    conversation: Conversation,
    target: Target,
    options: RunOptions,
    on_retry: RetryCallback | None,
    spans: _SpanContext | None,
    finished: _Finished,
) -> None:
    """Ask a conversation's turns in order, each with the conversation so far; hand each
    turn's record to ``finished`` with its position in the conversation (0-based).

    A turn that fails ends the conversation: the later turns are recorded as
    ``skipped_after_error``, never asked (a follow-up without its context asks another
    question than the script's)."""
    scripted = getattr(target, "history", "service") == "scripted"
    dialogue = Dialogue(id=new_conversation_id())
    turns = conversation.turns
    scored: list[CaseScores | None] = []
    for index, turn in enumerate(turns):
        asked = await _run_case(turn, target, options, on_retry, spans, dialogue)
        record = asked.record
        scored.append(record.scores)
        if index == len(turns) - 1:
            record = _concluded(record, scored)
        finished(index, record)
        if record.error is not None:
            for later in range(index + 1, len(turns)):
                finished(later, _skipped(turns[later], record))
            return
        dialogue = dialogue.after(turn.question, _said(turn, record, scripted), asked.service_id)


def _concluded(last: CaseRecord, turns: list[CaseScores | None]) -> CaseRecord:
    """The last turn's record carrying its conversation's success (a failed last turn has
    no scores to carry it: the conversation has none)."""
    scores = last.scores
    if scores is None:
        return last
    success = conversation_success(turns)
    return msgspec.structs.replace(
        last, outcome=msgspec.structs.replace(scores, conversation_success=success)
    )


def _said(turn: Case, record: CaseRecord, scripted: bool) -> str | None:
    """The assistant's answer to ``turn`` as later turns are sent it: the golden set's
    scripted answer under ``history = "scripted"`` (when the turn has one), else the
    target's answer as it was stored (bounded, redacted)."""
    if scripted and turn.turn is not None and turn.turn.assistant is not None:
        return turn.turn.assistant
    return record.answer


def _skipped(turn: Case, failed: CaseRecord) -> CaseRecord:
    """The record of a turn not asked because the turn of ``failed`` failed."""
    kind = failed.error.kind if failed.error is not None else "error"
    message = f"not asked: turn {failed.case.id} of its conversation failed ({kind})"
    return CaseRecord(
        case=turn,
        outcome=CaseError(kind=SkippedAfterError.kind, message=message),
        ranked_ids=(),
        answer=None,
        citations=(),
        latency_seconds=0.0,
        stage_seconds={},
        attempts=0,
    )


def new_conversation_id() -> str:
    """A conversation's id for one run (``{conversation_id}``): fresh per conversation and
    per run, so a stateful service never mixes two runs' histories."""
    return uuid.uuid4().hex


def _questions(case: GoldenCase) -> int:
    """How many records a golden case makes: one, or one per turn."""
    return len(case.turns) if isinstance(case, Conversation) else 1


def _report_positions(cases: tuple[GoldenCase, ...]) -> list[int]:
    """Where each golden case's first record goes in the report (its turns follow it)."""
    starts, at = [], 0
    for case in cases:
        starts.append(at)
        at += _questions(case)
    return starts


def _shifted(
    finished: Callable[[int, int, CaseRecord], None],
    r: int,
    start: int,
    index: int,
    record: CaseRecord,
) -> None:
    """``finished`` for a conversation's turn ``index`` of round ``r``: its report position
    is the conversation's ``start`` plus ``index``."""
    finished(r, start + index, record)


def _now_to_the_millisecond() -> datetime:
    # reports keep milliseconds: a report in memory equals the one read back from its file
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


async def run_dataset(
    dataset: Dataset,
    target: Target,
    options: RunOptions,
    *,
    on_case: CaseCallback | None = None,
    on_retry: RetryCallback | None = None,
    run_id: str | None = None,
    cases: tuple[GoldenCase, ...] | None = None,
    repeats: int = 1,
    keep_partial: bool = False,
    sink: CaseSink | None = None,
) -> RunReport:
    """Run every case (or ``cases``, a subset such as a shard) with bounded concurrency.

    Args:
        dataset: the golden set.
        target: the system under test.
        options: K, concurrency, scoring and retry settings.
        on_case: called as each case finishes (logs, histograms), in completion order.
        on_retry: called before each retry of a transient failure.
        run_id: identifies the run in logs and exemplars; a new one by default.
        cases: the cases to run, in report order; all of the dataset's by default. A
            conversation's turns run in order, each with the earlier ones as its history;
            conversations run concurrently like cases, and each turn is a record of the
            report (``id#position``).
        repeats: run each case this many times. The repeats are interleaved (every case
            once, then every case again), never back to back, so a case's runs are spread
            over the whole run and not all answered by one warm cache. The report's cases
            and summary are the first round; ``report.repeats`` counts every round.
        keep_partial: when the run is cancelled (Ctrl-C in a one-shot command), return the
            cases that finished as a report marked ``interrupted`` instead of raising.
        sink: given each first-round case as it finishes (after ``on_case``) with its
            position; the report keeps what it returns instead (see
            :class:`~evaluator.report.stream.ReportStream`: the case written out, the record
            kept without its texts).

    Returns:
        The report, cases in golden-set order.
    """
    options = _options_for(target, options, repeats)
    todo = dataset.cases if cases is None else cases
    rounds = _Rounds(todo, repeats, on_case, sink)
    started = time.perf_counter()
    run_id = run_id or new_run_id()
    spans = _span_context(target, dataset, options, run_id)

    async def worker() -> None:
        # a fixed pool of workers pulls cases: memory stays flat for large golden sets
        for r, start, case in rounds.queue:
            if isinstance(case, Case):
                asked = await _run_case(case, target, options, on_retry, spans)
                rounds.finished(r, start, asked.record)
                continue
            finished = functools.partial(_shifted, rounds.finished, r, start)
            await _run_conversation(case, target, options, on_retry, spans, finished)

    workers = min(options.concurrency, len(todo)) or 1
    lag, interrupted = await _work(worker, workers, keep_partial=keep_partial)
    return _report(
        _RunFacts(dataset, target, options, run_id, time.perf_counter() - started),
        rounds,
        lag,
        interrupted=interrupted,
    )


def _options_for(target: Target, options: RunOptions, repeats: int) -> RunOptions:
    """``options`` checked, with the metrics the target cannot be scored on turned off: its
    citation metrics are n/a when it maps no citations, its retrieval metrics when it maps no
    ids (not 0 for citing or ranking nothing).

    Raises:
        ValueError: concurrency or repeats below 1.
    """
    if options.concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    scoring = options.scoring
    if scoring.citations and getattr(target, "cites", True) is False:
        scoring = dataclasses.replace(scoring, citations=False)
    if scoring.retrieval and getattr(target, "ranks", True) is False:
        scoring = dataclasses.replace(scoring, retrieval=False)
    return options if scoring is options.scoring else dataclasses.replace(options, scoring=scoring)


def _span_context(
    target: Target, dataset: Dataset, options: RunOptions, run_id: str
) -> _SpanContext | None:
    """Where the run's case spans go and what they say besides the case (None: no OTLP
    export installed)."""
    exporter = active_spans()
    if exporter is None:
        return None
    attributes: dict[str, str | int] = {
        "target": target.name,
        "dataset": dataset.name,
        "k": options.k,
        "run_id": run_id,
    }
    return _SpanContext(exporter, attributes)


class _Rounds:
    """Every round's records by report position, filled as cases finish, and the queue the
    workers pull ``(round, report position, golden case)`` from."""

    def __init__(
        self,
        cases: tuple[GoldenCase, ...],
        repeats: int,
        on_case: CaseCallback | None,
        sink: CaseSink | None,
    ) -> None:
        starts = _report_positions(cases)
        size = starts[-1] + _questions(cases[-1]) if cases else 0
        self.rounds: list[list[CaseRecord | None]] = [[None] * size for _ in range(repeats)]
        self.queue = (
            (r, start, case)
            for r in range(repeats)
            for start, case in zip(starts, cases, strict=True)
        )
        self._on_case = on_case
        self._sink = sink

    def finished(self, r: int, index: int, record: CaseRecord) -> None:
        """A record of round ``r`` at report position ``index``: handed to ``on_case``, kept
        (a first-round one as the sink returns it)."""
        if self._on_case is not None:
            self._on_case(record)
        sink = self._sink
        self.rounds[r][index] = record if sink is None or r else sink(index, record)

    def first(self) -> tuple[CaseRecord, ...]:
        """The first round's finished records, in report order."""
        return tuple(r for r in self.rounds[0] if r is not None)


async def _work(
    worker: Callable[[], Coroutine[Any, Any, None]], workers: int, *, keep_partial: bool
) -> tuple[LoopLagMonitor, bool]:
    """Run ``workers`` copies of ``worker`` under the loop-lag probe; the probe, and whether
    the run was interrupted (Ctrl-C with ``keep_partial``: the cases that finished make a
    partial report; without it the cancellation is raised)."""
    try:
        async with LoopLagMonitor() as lag, asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(worker())
    except asyncio.CancelledError:
        if not keep_partial:
            raise
        return lag, True
    return lag, False


@dataclass(frozen=True, slots=True)
class _RunFacts:
    """What a run's report says about the run besides its records."""

    dataset: Dataset
    target: Target
    options: RunOptions
    run_id: str
    seconds: float


def _report(
    facts: _RunFacts, rounds: _Rounds, lag: LoopLagMonitor, *, interrupted: bool
) -> RunReport:
    """The run's report: the first round's records and their summary (every round's pass^k
    when repeated)."""
    done = rounds.first()
    repeated = len(rounds.rounds) > 1
    return RunReport(
        run_id=facts.run_id,
        generated_at=_now_to_the_millisecond(),
        config_hash=config_hash_for(facts.dataset, facts.target, facts.options),
        dataset_hash=facts.dataset.content_hash,
        target=facts.target.name,
        dataset=facts.dataset.name,
        k=facts.options.k,
        duration_seconds=facts.seconds,
        summary=dataclasses.replace(
            # one pass over the finished records, after the loop: copying each case's
            # values as it finished cost ~5 us a case inside the loop, against ~2.5 us
            # here (the run's CPU per case is a goal of its own)
            summarise(done),
            event_loop_lag_p95_seconds=lag.p95,
            event_loop_lag_max_seconds=lag.max,
        ),
        cases=done,
        repeats=(
            summarise_repeats([[x for x in r if x is not None] for r in rounds.rounds])
            if repeated
            else None
        ),
        interrupted=interrupted,
    )

"""What a judged run sends over OTLP: each judge call as a span under the case span it
judged, and the judged scores as ``gen_ai.evaluation.result`` events tied to that span.

The judge runs after the target's run, from the report, which keeps each case's trace id
and span id: a judge call's span takes the case's trace id and the case span as its parent,
so a trace backend shows the judge's calls inside the trace of the case they judged (after
the case's own span has ended, as they happened). A canary's call sits under the case its
canary was made from, marked ``rag_eval.judge.canary``. A case without ids (no
``traceparent`` sent) gets its judge calls as spans of a trace of their own, with the case
and run ids as attributes. A span is built with the call's explicit start and end times,
like the case spans: the daemon builds each as its call ends, ``evaluator run`` and
``evaluator judge`` once the judging is done (their case spans were sent before). Every
string passes the redactor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evaluator.redaction import redactor
from evaluator.run.otlp_events import span_context, span_ids

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Tracer

    from evaluator.judge.judged_pass import CallEvent
    from evaluator.judge.record import JudgedRun
    from evaluator.models import CaseRecord
    from evaluator.run.otlp import CaseSpans

__all__ = ["JUDGE_SPAN", "JudgeCallSpans", "export_judged"]

#: the name of a judge call's span, followed by its check (``rag_eval.judge fact_support``)
JUDGE_SPAN = "rag_eval.judge"


class JudgeCallSpans:
    """Makes each judge call of one judged run a span, under the span of the case it judged
    (the ids the run's report kept): called with each call as it ends."""

    def __init__(self, tracer: Tracer, records: Sequence[CaseRecord], run_id: str) -> None:
        self._tracer = tracer
        self._run_id = run_id
        self._cases = {r.id: span_ids(r.trace_id, r.span_id) for r in records}

    def __call__(self, event: CallEvent) -> None:
        case = span_context(self._cases.get(event.call.case_id))
        _call_span(self._tracer, event, case, self._run_id)


def _call_span(tracer: Tracer, event: CallEvent, case: Context | None, run_id: str) -> None:
    """The span of one call under ``case`` (None: a trace of its own), a client span from
    its start to its end; its status an error when no verdict came back."""
    from opentelemetry.trace import SpanKind, Status, StatusCode

    span = tracer.start_span(
        f"{JUDGE_SPAN} {event.call.check}",
        context=case,
        kind=SpanKind.CLIENT,
        attributes=_attributes(event, run_id),
        start_time=event.started_ns,
    )
    if event.error_kind is not None:
        span.set_status(Status(StatusCode.ERROR, event.error_kind))
    span.end(end_time=max(event.ended_ns, event.started_ns))


def _attributes(event: CallEvent, run_id: str) -> dict[str, str | int | bool]:
    """A call's attributes: which case, check, judge and sample, whether a canary, the
    judge's model and tokens in the GenAI conventions' names, its outcome; texts redacted."""
    redact = redactor().redact_text
    call = event.call
    attrs: dict[str, str | int | bool] = {
        "rag_eval.case_id": redact(call.case_id),
        "rag_eval.run_id": redact(run_id),
        "rag_eval.judge.check": call.check,
        "rag_eval.judge.name": redact(call.judge),
        "rag_eval.judge.canary": call.canary,
        "rag_eval.outcome": "error" if event.error_kind is not None else "ok",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": redact(call.model),
    }
    if call.sample is not None:
        attrs["rag_eval.judge.sample"] = call.sample
    if event.input_tokens is not None:
        attrs["gen_ai.usage.input_tokens"] = event.input_tokens
    if event.output_tokens is not None:
        attrs["gen_ai.usage.output_tokens"] = event.output_tokens
    if event.error_kind is not None:
        attrs["error.type"] = event.error_kind
    return attrs


def export_judged(
    otlp_settings: Mapping[str, Any],
    records: Sequence[CaseRecord],
    judged: JudgedRun,
    run_id: str,
    calls: Sequence[CallEvent] = (),
) -> CaseSpans | None:
    """Send a judged run's telemetry once, when ``[otlp]`` (``otlp_settings``, the section
    as a mapping) is enabled, and stop: the judge's ``calls`` as spans, and the judged
    scores as events unless ``evaluation_events`` is off (``evaluator run`` and ``evaluator
    judge`` judge after the run's spans were sent). None when export is off.

    Raises:
        ConfigError: a setting (or standard variable) that cannot work, or no SDK.
    """
    from evaluator.run import otlp

    if not otlp_settings.get("enabled"):
        return None
    keys = ("endpoint", "service_name", "timeout_seconds", "headers", "compression")
    settings = otlp.resolve(**{k: otlp_settings[k] for k in keys if k in otlp_settings})
    with_events = otlp_settings.get("evaluation_events", True)
    spans = otlp.CaseSpans(**settings, events=otlp.events_for(settings) if with_events else None)
    try:
        record = spans.judge_calls(records, run_id)
        for call in calls:
            record(call)
        if spans.events is not None:
            spans.events.judged(records, judged, run_id)
    finally:
        spans.shutdown()
    return spans

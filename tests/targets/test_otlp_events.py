"""Each case's scores as OpenTelemetry ``gen_ai.evaluation.result`` events, decoded by an
OTLP receiver built on opentelemetry-proto: one log record per deterministic metric tied to
the case span, the judged scores after the judge tied to the same span through the report,
secrets redacted, explanations bounded, nothing sent when turned off."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from evaluator.config import HttpTargetConfig, OtlpConfig
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.settings import JudgeConfig
from evaluator.redaction import register_secrets
from evaluator.report import RunReport
from evaluator.run import otlp
from evaluator.run.evaluation_results import EVENT_NAME, MAX_EXPLANATION_CHARS
from evaluator.run.judged_telemetry import export_judged
from evaluator.run.otlp_events import logs_url
from tests.judge.reports import golden
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer, Reply
from tests.support.otlp_receiver import OtlpReceiver, ReceivedEvent
from tests.targets.helpers import GOOD_BODY, dataset, run_config

pytestmark = pytest.mark.e2e

SECRET = "sk-events-9f8e7d6c5b4a"


def _run(receiver: OtlpReceiver, server: LoopbackServer, **extra: object) -> RunReport:
    """Two cases against ``server``, spans and events exported to ``receiver``."""
    config = OtlpConfig(enabled=True, endpoint=receiver.url, **extra)
    otlp.install(**config.model_dump())
    try:
        report, _ = run_config(HttpTargetConfig(name="rag", url=server.url), dataset(["a", "b"]))
    finally:
        otlp.shutdown()  # flushes both batches: the receiver has everything after this
    return report


def _named(events: list[ReceivedEvent], name: str) -> list[ReceivedEvent]:
    """The received events of the evaluation called ``name``."""
    return [e for e in events if e.attributes.get("gen_ai.evaluation.name") == name]


def test_each_case_emits_its_deterministic_scores_tied_to_its_span() -> None:
    """Every case's quality metrics arrive as gen_ai.evaluation.result log records whose trace
    and span ids are those of its case span; a verdict carries pass/fail, a ratio its value."""
    reply = Reply(body=GOOD_BODY)
    with OtlpReceiver() as receiver, LoopbackServer(lambda _r: reply) as server:
        report = _run(receiver, server, service_name="rag-eval-events")
    spans = {(s.trace_id, s.span_id) for s in receiver.named(otlp.CASE_SPAN)}
    assert 2 == len(spans)
    assert {EVENT_NAME} == {e.event_name for e in receiver.events}
    assert spans == {(e.trace_id, e.span_id) for e in receiver.events}
    assert {(c.trace_id, c.span_id) for c in report.cases} == spans  # kept in the report
    accuracy = _named(receiver.events, "answer_accuracy")
    assert 2 == len(accuracy)
    record = report.cases[0]
    assert record.scores is not None
    passed = "pass" if record.scores.answer_correct else "fail"
    mine = next(e for e in accuracy if e.attributes["rag_eval.case_id"] == record.id)
    assert {
        "gen_ai.evaluation.name": "answer_accuracy",
        "gen_ai.evaluation.score.value": float(record.scores.answer_correct or 0),
        "gen_ai.evaluation.score.label": passed,
        "rag_eval.case_id": record.id,
        "rag_eval.run_id": report.run_id,
    } == mine.attributes
    recall = _named(receiver.events, "recall_at_k")[0]
    assert "gen_ai.evaluation.score.label" not in recall.attributes
    assert "rag-eval-events" == recall.resource["service.name"]


def test_a_failed_case_emits_its_error_type_and_no_score() -> None:
    """A case the target failed has error.type (its error kind) on every metric, no score."""
    with OtlpReceiver() as receiver, LoopbackServer(lambda _r: Reply(status=500)) as server:
        _run(receiver, server)
    assert receiver.events
    assert {"http_status"} == {e.attributes.get("error.type") for e in receiver.events}
    assert all("gen_ai.evaluation.score.value" not in e.attributes for e in receiver.events)


def test_events_can_be_turned_off() -> None:
    """evaluation_events = false sends the spans alone."""
    with OtlpReceiver() as receiver, LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
        _run(receiver, server, evaluation_events=False)
    assert ([], 2) == (receiver.events, len(receiver.named(otlp.CASE_SPAN)))


def test_judged_scores_arrive_tied_to_the_case_spans_redacted_and_bounded() -> None:
    """After the run, the judge's verdicts go out as events on the spans the report kept: a
    judged verdict with its label and the judge's reason as explanation, a secret in it
    masked, a long reason within the bound."""
    register_secrets([SECRET])
    report = _traced(golden())
    long_reason = f"{SECRET} " + "x" * 5000

    def reason(data: dict[str, object]) -> dict[str, object]:
        """An honest refusal verdict with a long reason holding a secret."""
        return {"refusal": True, "reason": long_reason}

    with LoopbackJudge(verdicts={"refusal": reason}) as judge:

        async def go() -> object:
            async with JudgePanel(JudgeConfig(url=judge.url, model="m")) as panel:
                return await judge_report(report, panel)

        judged = asyncio.run(go())
    with OtlpReceiver() as receiver:
        settings = OtlpConfig(enabled=True, endpoint=receiver.url).model_dump()
        sent = export_judged(settings, report.cases, judged, report.run_id)  # type: ignore[arg-type]
    assert sent is not None and sent.events is not None
    assert 0 == sent.events.exporter.failed_spans
    refused = _named(receiver.events, "judged_refusal_rate")
    assert 1 == len(refused)
    (event,) = refused
    none = next(r for r in report.cases if r.id == "none")
    assert (none.trace_id, none.span_id) == (event.trace_id, event.span_id)
    explanation = str(event.attributes["gen_ai.evaluation.explanation"])
    assert SECRET not in explanation and explanation.startswith("*** xxx")
    assert len(explanation) <= MAX_EXPLANATION_CHARS  # the judge's reason is bounded, then cut
    assert ("pass", 1.0) == (
        event.attributes["gen_ai.evaluation.score.label"],
        event.attributes["gen_ai.evaluation.score.value"],
    )
    wrong = _named(receiver.events, "judged_answer_accuracy")
    assert 4 == len(wrong)


def test_export_judged_does_nothing_without_otlp() -> None:
    """With [otlp] off nothing is built; with its events off, no judged event is."""
    run = golden()
    off = OtlpConfig().model_dump()
    with OtlpReceiver() as receiver:
        quiet = OtlpConfig(enabled=True, endpoint=receiver.url, evaluation_events=False)
        sent = export_judged(quiet.model_dump(), run.cases, None, run.run_id)  # type: ignore[arg-type]
    assert None is export_judged(off, run.cases, None, run.run_id)  # type: ignore[arg-type]
    assert (None, [], 0) == (sent and sent.events, receiver.events, receiver.log_requests)


@pytest.mark.parametrize(
    ("traces", "logs"),
    [
        ("http://c:4318/v1/traces", "http://c:4318/v1/logs"),
        ("https://c/otlp/v1/traces", "https://c/otlp/v1/logs"),
        ("http://c:4318/ingest", "http://c:4318/v1/logs"),
    ],
)
def test_the_logs_url_sits_beside_the_traces_url(traces: str, logs: str) -> None:
    """/v1/traces becomes /v1/logs; any other path is a collector's base."""
    assert logs == logs_url(traces)


def _traced(report: RunReport) -> RunReport:
    """``report`` whose cases carry trace and span ids, as a traced run's do."""
    cases = tuple(
        msgspec.structs.replace(c, trace_id=f"{i + 1:032x}", span_id=f"{i + 1:016x}")
        for i, c in enumerate(report.cases)
    )
    return msgspec.structs.replace(report, cases=cases)

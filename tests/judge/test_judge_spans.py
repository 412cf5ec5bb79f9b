"""Judge calls as spans in the OTLP trace of the run they judged (issue 37, item 13): each
call of `evaluator run`, `evaluator judge` and the daemon arrives at an OTLP receiver as a
``rag_eval.judge <check>`` span whose parent is the span of the case it judged, in that
case's trace; a canary's call is marked, a failed call has its error kind. Real CLI
processes and a live daemon, a loopback RAG endpoint, loopback judges, and a receiver that
decodes what is sent with opentelemetry-proto."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.config import OtlpConfig
from evaluator.report import read_report
from evaluator.run.judged_telemetry import JUDGE_SPAN
from evaluator.run.otlp import CASE_SPAN
from tests.judge.test_cli_judge import _REPLIES, _cli, _setup
from tests.judge.test_daemon_judge import _labels, _settings
from tests.support.inprocess import run_bounded, running, until
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e

#: the judged checks of the three cases (refund and shipping: fact_support, groundedness;
#: ceo, unanswerable: refusal), and the two canaries
CASE_CALLS = 5
#: two injection canaries, two of each wrong-answer class
CANARY_CALLS = 2 + 2 * 2


def _with_otlp(config: Path, receiver: OtlpReceiver) -> None:
    """The configuration at ``config`` with span export to ``receiver``."""
    otlp = f'[otlp]\nenabled = true\nendpoint = "{receiver.url}"\n'
    config.write_text(config.read_text().replace("[judge]", otlp + "[judge]", 1), "utf-8")


def _judge_spans(receiver: OtlpReceiver) -> list[ReceivedSpan]:
    """The judge calls' spans the receiver decoded."""
    return [s for s in receiver.spans if s.name.startswith(f"{JUDGE_SPAN} ")]


def _under_their_cases(receiver: OtlpReceiver) -> dict[str, list[ReceivedSpan]]:
    """Each case span's judge spans by case id, asserting every judge span is the child of
    the case span it names."""
    cases = {str(s.attributes["rag_eval.case_id"]): s for s in receiver.named(CASE_SPAN)}
    out: dict[str, list[ReceivedSpan]] = {case_id: [] for case_id in cases}
    for span in _judge_spans(receiver):
        case_id = str(span.attributes["rag_eval.case_id"])
        case = cases[case_id]
        assert (case.trace_id, case.span_id) == (span.trace_id, span.parent_span_id)
        out[case_id].append(span)
    return out


def test_run_sends_each_judge_call_as_a_span_under_its_case(tmp_path: Path) -> None:
    """`evaluator run` with a judge and [otlp] on: the receiver gets one span per judge call,
    each the child of its case's span in that case's trace (the report's ids), named by its
    check, with the judge's model and tokens; the canaries' calls marked as such."""
    with OtlpReceiver() as receiver, LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        config = _setup(tmp_path, rag, judge)
        _with_otlp(config, receiver)
        out = tmp_path / "r.json"
        result = _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert 0 == result.returncode, result.stderr
        calls = judge.calls
    assert CASE_CALLS + CANARY_CALLS == calls
    by_case = _under_their_cases(receiver)
    spans = _judge_spans(receiver)
    assert calls == len(spans)
    report = read_report(out)
    assert {c.id: (c.trace_id, c.span_id) for c in report.cases} == {
        s.attributes["rag_eval.case_id"]: (s.trace_id, s.span_id) for s in receiver.named(CASE_SPAN)
    }
    assert {"ceo": ["refusal"]} == {
        case_id: sorted(str(s.attributes["rag_eval.judge.check"]) for s in found)
        for case_id, found in by_case.items()
        if case_id == "ceo"
    }
    canaries = [s for s in spans if s.attributes["rag_eval.judge.canary"]]
    assert CANARY_CALLS == len(canaries)
    refusal = next(
        s
        for s in spans
        if s.name == f"{JUDGE_SPAN} refusal" and not s.attributes["rag_eval.judge.canary"]
    )
    assert {
        "rag_eval.case_id": "ceo",
        "rag_eval.run_id": report.run_id,
        "rag_eval.judge.check": "refusal",
        "rag_eval.judge.name": "loopback-judge",  # a judge without a panel: its model
        "rag_eval.judge.canary": False,
        "rag_eval.outcome": "ok",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "loopback-judge",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
    } == refusal.attributes
    assert 0 == refusal.status_code  # unset: the call gave a verdict
    assert all(s.start_ns <= s.end_ns for s in spans)


def test_a_judge_that_is_down_shows_in_the_trace(tmp_path: Path) -> None:
    """`evaluator judge` of a traced report with its judge down: it exits 1, and each failed
    call is a span under its case with the error status and its error kind."""
    with OtlpReceiver() as receiver, LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        config = _setup(tmp_path, rag, judge)
        _with_otlp(config, receiver)
        out = tmp_path / "r.json"
        ran = _cli("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert 0 == ran.returncode, ran.stderr
        receiver.spans.clear()  # what the run sent; the judge's second pass follows
        down = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
        config.write_text(config.read_text().replace(judge.url, down), encoding="utf-8")
        judged = _cli("judge", str(out), "--config", str(config), "--no-judge-cache", cwd=tmp_path)
    assert 1 == judged.returncode, judged.stdout + judged.stderr
    spans = _judge_spans(receiver)
    assert CASE_CALLS + CANARY_CALLS == len(spans)
    assert {("judge_connect", "error", 2)} == {
        (s.attributes["error.type"], s.attributes["rag_eval.outcome"], s.status_code) for s in spans
    }
    report = read_report(out)
    ids = {c.id: (c.trace_id, c.span_id) for c in report.cases}
    assert all(
        ids[str(s.attributes["rag_eval.case_id"])] == (s.trace_id, s.parent_span_id) for s in spans
    )


def test_the_daemon_sends_each_judge_call_as_a_span_under_its_case(tmp_path: Path) -> None:
    """A live daemon with a judge and [otlp] on: after its judged run, the receiver holds one
    span per judge call, each the child of the case span it judged."""
    labels = tmp_path / "labels.jsonl"
    _labels(labels)
    with OtlpReceiver() as receiver, LoopbackServer(_REPLIES) as rag, LoopbackJudge() as judge:
        settings = _settings(tmp_path, rag.url, judge.url, labels)
        assert settings.judge is not None
        judge_config = settings.judge.model_copy(update={"drift_labels": None})
        settings = settings.model_copy(
            update={
                "judge": judge_config,
                "otlp": OtlpConfig(enabled=True, endpoint=receiver.url),
            }
        )

        async def body() -> None:
            async with running(settings) as daemon:
                judging = daemon.jobs[0].judge
                assert judging is not None
                await until(lambda: judging.latest is not None)
            # stopped: the daemon flushed its spans on the way out

        run_bounded(body, timeout=40)
        calls = judge.calls
    assert CASE_CALLS + CANARY_CALLS == calls
    by_case = _under_their_cases(receiver)
    assert calls == sum(len(found) for found in by_case.values())
    assert {"ceo", "refund", "shipping"} == {case_id for case_id, f in by_case.items() if f}

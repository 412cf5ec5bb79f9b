"""Optional figures out of range (usage, stage timings, scores) are dropped, counted per field
as "not reported (out of range)", and the case is still scored: against real loopback
services, through ``evaluator run`` and the gate that reads its report back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.cli import main
from evaluator.config import HttpTargetConfig
from evaluator.models import CaseRecord
from evaluator.report import read_report
from evaluator.summary import summarise
from tests.support.loopback import LoopbackServer, Reply
from tests.support.records import record
from tests.support.streams import Chunk, StreamServer, sse
from tests.targets.helpers import query_error, query_once

#: a body whose every optional figure is out of range: 1e308 input tokens, a negative
#: stage, a score of 1e999 (JSON's way to write infinity), and a stage of ten years
RAW = (
    b'{"answer": "7 days", "hits": [{"id": "refund-policy", "score": 1e999}],'
    b' "took": {"retrieve": -0.5, "model": 0.25, "queue": 315360000},'
    b' "usage": {"in": 1e308, "out": 12}}'
)


def _mapped(url: str) -> HttpTargetConfig:
    return HttpTargetConfig(
        url=url,
        response={
            "ids": "hits[].id",
            "scores": "hits[].score",
            "answer": "answer",
            "timings": "took",
            "input_tokens": "usage.in",
            "output_tokens": "usage.out",
        },
    )


@pytest.mark.e2e
class TestDropped:
    def test_mapped_figures_out_of_range_are_dropped(self) -> None:
        """Each optional figure out of range is dropped and named; the rest is kept."""
        with LoopbackServer(lambda _r: Reply(raw=RAW)) as server:
            response = query_once(_mapped(server.url))
        assert ("refund-policy",) == response.ranked_ids
        assert (None,) == tuple(r.score for r in response.retrieved)
        assert {"model": 0.25} == dict(response.timings)
        d = response.delivery
        assert d is not None and (None, 12) == (d.input_tokens, d.output_tokens)
        assert ("timings", "scores", "input_tokens") == response.out_of_range

    def test_default_contract_drops_them_too(self) -> None:
        """The default contract's negative stage and infinite score are dropped as well."""
        raw = (
            b'{"answer": "7 days", "retrieved": [{"id": "refund-policy", "score": -1e999}],'
            b' "timings": {"retrieve": -0.1, "model": 0.2}}'
        )
        with LoopbackServer(lambda _r: Reply(raw=raw)) as server:
            response = query_once(HttpTargetConfig(url=server.url))
        assert ((None,), {"model": 0.2}) == (
            tuple(r.score for r in response.retrieved),
            dict(response.timings),
        )
        assert ("timings", "scores") == response.out_of_range

    def test_streamed_usage_out_of_range(self) -> None:
        """A streamed answer's usage of 1e308 tokens is dropped; the answer is scored."""
        events = sse(
            {"choices": [{"delta": {"content": "7 days"}}], "sources": [{"id": "faq"}]},
            {"choices": [{"delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 1e308, "completion_tokens": -3}},
            done=True,
        )
        with StreamServer(lambda _r: [Chunk(0, e) for e in events]) as server:
            config = HttpTargetConfig(
                url=server.url,
                kind="openai-chat",
                model="m",
                stream=True,
                response={"ids": "sources[].id"},
            )
            response = query_once(config)
        assert "7 days" == response.answer
        assert ("input_tokens", "output_tokens") == response.out_of_range

    def test_a_wrong_type_is_still_an_error(self) -> None:
        """A usage that is not a number at all is a mapping error, as before."""
        body = {"answer": "7", "hits": [{"id": "a"}], "took": {}, "usage": {"in": "many", "out": 1}}
        with LoopbackServer(lambda _r: Reply(body=body)) as server:
            error = query_error(_mapped(server.url))
        assert "bad_response" == error.kind
        expected = 'response.input_tokens expression "usage.in" gave a string, expected a count'
        assert f"{expected} of tokens" == error.message


def test_summary_counts_cases_per_field() -> None:
    """The summary counts, per field, the cases whose figure was not reported (out of range)."""
    cases: list[CaseRecord] = [
        record("a", out_of_range=("timings", "input_tokens")),
        record("b", out_of_range=("input_tokens",)),
        record("c"),
    ]
    assert {"timings": 1, "input_tokens": 2} == dict(summarise(cases).out_of_range)


GOLDEN = [
    {"id": f"c{i}", "question": f"How long {i}?", "relevant_ids": ["refund-policy"]}
    for i in range(4)
]


@pytest.mark.e2e
def test_run_scores_every_case_and_the_gate_accepts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluator run`` against a service reporting 1e308 tokens scores every case, warns
    per field on stderr, writes the counts into the report, and the gate reads that report
    back as a baseline without refusing it."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in GOLDEN), encoding="utf-8")

    def reply(_request: dict[str, Any]) -> Reply:
        return Reply(raw=RAW)

    with LoopbackServer(reply) as server:
        config = tmp_path / "evaluator.toml"
        config.write_text(
            f'[[targets]]\nname = "svc"\nurl = "{server.url}"\n\n'
            f'[targets.response]\nids = "hits[].id"\nscores = "hits[].score"\n'
            f'answer = "answer"\ntimings = "took"\ninput_tokens = "usage.in"\n'
            f'output_tokens = "usage.out"\n\n'
            f'[[jobs]]\ntarget = "svc"\ndataset = "{golden}"\n',
            encoding="utf-8",
        )
        out = tmp_path / "r.json"
        code = main(["run", "--config", str(config), "--output", str(out)])
    err = capsys.readouterr().err
    assert 0 == code, err
    report = read_report(out)
    assert (0, 4) == (report.error_count, report.summary.scored_count)
    assert {"timings": 4, "scores": 4, "input_tokens": 4} == dict(report.summary.out_of_range)
    written = json.loads(out.read_text("utf-8"))
    assert {"timings": 4, "scores": 4, "input_tokens": 4} == written["summary"]["out_of_range"]
    assert ["timings", "scores", "input_tokens"] == written["cases"][0]["out_of_range"]
    assert (
        "evaluator: warning: target 'svc': not reported (out of range) in 4 of 4 case(s): "
        "timings 4, scores 4, input_tokens 4; the values were dropped and the cases scored"
    ) in err
    assert 0 == main(["gate", "--baseline", str(out), "--candidate", str(out)])

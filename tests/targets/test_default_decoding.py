"""The default contract's typed decoder: a common body is read in one C pass into the
response the parser gives it; every other body is left to the parser, which reads the
contract's lenient forms and names the field a bad body breaks."""

from __future__ import annotations

import asyncio
import json

import pytest

from evaluator import border
from evaluator.models import Case, Retrieved, TargetResponse
from evaluator.targets.base import decode_default_response, parse_default_response
from evaluator.targets.http import HttpTarget
from tests.benchmarks.endpoint import body as bench_body
from tests.support.loopback import LoopbackServer, Reply


def _raw(body: object) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


def test_a_common_body_decodes_to_its_fields() -> None:
    """Ids, scores, texts, answer, citations and stage seconds, read as the contract says."""
    raw = _raw(
        {
            "retrieved": [{"id": "d1", "score": 2, "text": "t"}, {"id": "d2", "score": None}],
            "answer": "a [1]",
            "citations": [1, "d2"],
            "timings": {"retrieve": 0.5, "generate": 1},
            "unknown": {"ignored": [1, 2]},
        }
    )
    expected = TargetResponse(
        retrieved=(Retrieved("d1", 2.0, "t"), Retrieved("d2", None, None)),
        answer="a [1]",
        citations=(1, "d2"),
        timings={"retrieve": 0.5, "generate": 1.0},
    )
    assert expected == decode_default_response(raw)


def test_the_benchmark_body_decodes_as_the_parser_maps_it() -> None:
    """The body of the CPU goal's endpoint: the same response either way."""
    raw = _raw(bench_body(0.02))
    assert parse_default_response(border.loads(raw), max_ranked_ids=3) == decode_default_response(
        raw, max_ranked_ids=3
    )


@pytest.mark.parametrize(
    "body",
    [
        {"retrieved": [{"id": 7}]},  # a number id: the parser's str()
        {"retrieved": ["d1"]},  # a bare-string item
        {"retrieved": [{"id": "d1", "score": "high"}]},  # a score that is not a number: None
        {"retrieved": [{"id": "d1", "score": 1e16}]},  # out of range: dropped and counted
        {"retrieved": [{"id": "d1", "text": 3}]},  # a text that is not a string: None
        {"timings": {"retrieve": -1}},  # out of range: dropped and counted
        {"timings": {"retrieve": "1s"}},  # an error naming the stage
        {"citations": [1.0]},  # a whole float is a position
        {"citations": [True]},  # an error: a boolean is no position
        {"answer": 3},  # an error naming the field
        [1, 2],  # an error: not an object
    ],
)
def test_other_bodies_are_left_to_the_parser(body: object) -> None:
    """What only the parser reads, or rejects with its message, is never decoded here."""
    assert None is decode_default_response(_raw(body))


def test_scores_past_the_ranking_cut_do_not_leave_the_typed_path() -> None:
    """An out-of-range score beyond ``max_ranked_ids`` is never read, as in the parser."""
    raw = _raw({"retrieved": [{"id": "a", "score": 1.0}, {"id": "b", "score": 1e16}]})
    decoded = decode_default_response(raw, max_ranked_ids=1)
    assert decoded is not None
    assert (Retrieved("a", 1.0),) == decoded.retrieved


@pytest.mark.e2e
@pytest.mark.parametrize(
    "body",
    [
        {"retrieved": [{"id": "d1", "score": 0.5}], "answer": "ok", "timings": {"s": 0.1}},
        {"retrieved": [{"id": 7, "score": 1e16}, "d2"], "answer": "ok", "timings": {"s": -1}},
    ],
)
def test_the_http_target_maps_either_body_as_the_parser_does(body: object) -> None:
    """Over real HTTP: a common body (typed path) and a lenient one (parser) both give the
    parser's response, figures out of range counted."""
    raw = _raw(body)

    async def ask(url: str) -> TargetResponse:
        target = HttpTarget(url)
        try:
            return await target.query(Case(id="c", question="q?", relevance={}), 5)
        finally:
            await target.aclose()

    with LoopbackServer(lambda _r: Reply(raw=raw)) as server:
        response = asyncio.run(ask(server.url))
    expected = parse_default_response(border.loads(raw), max_ranked_ids=100)
    assert (expected.retrieved, expected.answer, expected.timings, expected.out_of_range) == (
        response.retrieved,
        response.answer,
        response.timings,
        response.out_of_range,
    )

"""The hostile catalogue's streams, inline markers and annotations
(:mod:`tests.faults.hostile`), each against the real parser: a stream over real loopback
HTTP ends in its documented outcome (a scored answer or its error kind, never another
exception), markers stay within their bounds, annotation mappings fail only as
``bad_response``."""

from __future__ import annotations

from typing import Any

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.errors import TargetError
from evaluator.targets.markers import MAX_MARKERS, compile_markers, first_bracketed
from tests.faults.hostile import ANNOTATION_BODIES, MARKER_ANSWERS, STREAM_ATTACKS
from tests.support.loopback import LoopbackServer, Reply
from tests.support.streams import Chunk, StreamServer
from tests.targets.helpers import query_once


def _outcome(config: HttpTargetConfig) -> tuple[str | None, str | None]:
    """(error kind or None, the answer when scored)."""
    try:
        response = query_once(config)
    except TargetError as exc:
        return exc.kind, None
    return None, response.answer


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(STREAM_ATTACKS))
def test_stream_attack(name: str) -> None:
    """Each hostile stream ends the case in its expected outcome, a kept answer intact."""
    attack = STREAM_ATTACKS[name]
    script = [Chunk(0, c) for c in attack.chunks]
    if attack.hold:
        script.append(Chunk(attack.hold, b": still here\n\n"))
    with StreamServer(lambda _r: script) as server:
        config = HttpTargetConfig(
            url=server.url,
            kind="openai-chat",
            model="m",
            stream=True,
            timeout_seconds=2.0,
            response={"ids": "sources[].id || `[]`"},
            **({"streaming": dict(attack.streaming)} if attack.streaming else {}),
        )
        kind, answer = _outcome(config)
    assert attack.kind == kind
    if kind is None:
        assert answer is not None and answer.endswith("fact0")


@pytest.mark.parametrize("name", sorted(MARKER_ANSWERS))
@pytest.mark.parametrize("style", ["numbers", "ids"])
def test_marker_answer(name: str, style: str) -> None:
    """Citation markers read from a hostile answer are bounded in number and size."""
    found = compile_markers(style)(MARKER_ANSWERS[name])
    assert len(found) <= MAX_MARKERS
    for marker in found:
        if isinstance(marker, int):
            assert 0 <= marker < 10**6
        else:
            assert 0 < len(marker) <= 200


@pytest.mark.parametrize("name", sorted(MARKER_ANSWERS))
def test_first_bracketed_marker(name: str) -> None:
    """The example a markers warning shows is one bounded marker of the hostile answer."""
    example = first_bracketed(MARKER_ANSWERS[name])
    assert example is None or (example in MARKER_ANSWERS[name] and len(example) <= 52 * 202)


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(ANNOTATION_BODIES))
def test_annotation_body(name: str) -> None:
    """A hostile annotations body ends the case in its expected outcome, never a crash."""
    message, expected = ANNOTATION_BODIES[name]

    def reply(_request: dict[str, Any]) -> Reply:
        body = {
            "choices": [{"message": {"content": "fact0", **message}, "finish_reason": "stop"}],
            "sources": [{"url": "d0"}],
        }
        return Reply(body=body)

    with LoopbackServer(reply, path="/v1/chat") as server:
        config = HttpTargetConfig(
            url=server.url,
            kind="openai-chat",
            model="m",
            response={
                "ids": "sources[].url",
                "citations": "choices[0].message.annotations[].url_citation.url",
            },
        )
        kind, _ = _outcome(config)
    assert expected == kind

"""The preset table: a preset is one entry of ``PRESETS``, which the configuration validates
``kind`` against and the factory applies; a throwaway preset added to the table alone is
configured, sent and mapped end to end over real HTTP."""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import JsonValue, ValidationError

from evaluator.config import HttpTargetConfig
from evaluator.factory import build_target
from evaluator.models import Case, TargetResponse
from evaluator.targets import presets
from evaluator.targets.presets import PRESETS, Preset
from tests.support.loopback import LoopbackServer, Reply

NAME = "acme-search"


def _acme_body(model: str, stream: bool) -> JsonValue:
    """The throwaway service's request: the question as ``q``, the model as ``engine``."""
    return {"engine": model, "q": "{question}", "streaming": stream}


def _acme_turn(model: str, stream: bool) -> JsonValue:
    """The throwaway service's turn of a conversation: its history as ``past``."""
    return {"engine": model, "q": "{question}", "past": "{history}", "streaming": stream}


THROWAWAY = Preset(
    description="a made-up search API",
    body=_acme_body,
    turn_body=_acme_turn,
    response={"ids": "hits[].doc", "answer": "reply.text", "citations": "reply.cites"},
    streaming={"format": "ndjson", "content": "delta"},
)


@pytest.fixture
def with_throwaway(monkeypatch: pytest.MonkeyPatch) -> None:
    """:data:`THROWAWAY` in the table, after the shipped presets, for the test's duration."""
    table = MappingProxyType({**PRESETS, NAME: THROWAWAY})
    monkeypatch.setattr(presets, "PRESETS", table)


def _ask(config: HttpTargetConfig, question: str) -> TargetResponse:
    """One case through the target the factory builds from ``config``."""

    async def go() -> TargetResponse:
        target = build_target(config)
        try:
            case = Case(id="c1", question=question, relevance={"d1": 1})
            return await target.query(case, 5)
        finally:
            await target.aclose()

    return asyncio.run(go())


@pytest.mark.e2e
@pytest.mark.usefixtures("with_throwaway")
def test_a_preset_added_to_the_table_alone_is_sent_and_mapped() -> None:
    """kind = the new name: its body goes out with the model, its mapping reads the answer,
    the retrieved ids and the citations."""

    def reply(request: dict[str, Any]) -> Reply:
        body = {"hits": [{"doc": "d1"}, {"doc": "d2"}], "reply": {"text": "7 days", "cites": [1]}}
        return Reply(body=body)

    with LoopbackServer(reply) as server:
        config = HttpTargetConfig(url=server.url, kind=NAME, model="acme-1")
        response = _ask(config, "How long for a refund?")
    assert [{"engine": "acme-1", "q": "How long for a refund?", "streaming": False}] == (
        server.requests
    )
    assert (("d1", "d2"), "7 days", (1,)) == (
        response.ranked_ids,
        response.answer,
        response.citations,
    )


@pytest.mark.usefixtures("with_throwaway")
def test_the_configuration_merges_the_new_presets_fields_under_its_own() -> None:
    """A [response] field given overrides the preset's; the rest are the preset's."""
    config = HttpTargetConfig(
        url="http://127.0.0.1:1/s", kind=NAME, model="m", response={"answer": "reply.body"}
    )
    assert config.response is not None
    assert ("hits[].doc", "reply.body", "reply.cites") == (
        config.response.ids,
        config.response.answer,
        config.response.citations,
    )


def test_an_unknown_kind_names_the_presets_of_the_table() -> None:
    """kind outside 'http' and the table: an error listing what the table holds."""
    with pytest.raises(ValidationError) as caught:
        HttpTargetConfig(url="http://127.0.0.1:1/s", kind="openai-chatt", model="m")
    message = str(caught.value)
    assert "unknown kind 'openai-chatt': 'http' or a preset" in message
    assert all(repr(name) in message for name in PRESETS)


def test_each_shipped_preset_reads_a_streamed_answer_and_a_json_one() -> None:
    """Every entry has a body, a mapping with ids and an answer, and a streamed content; the
    Responses API reads a streamed answer's fields under ``response``."""
    for name, preset in PRESETS.items():
        body = preset.body("m", True)
        assert isinstance(body, dict) and "m" == body["model"], name
        assert {"ids", "answer"} <= set(preset.mapping(False)), name
        assert "content" in preset.streaming, name
    responses = PRESETS["openai-responses"]
    assert "response.usage.input_tokens" == responses.mapping(True)["input_tokens"]
    assert "usage.input_tokens" == responses.mapping(False)["input_tokens"]

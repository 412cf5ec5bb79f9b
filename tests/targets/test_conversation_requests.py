"""How a conversation's turn becomes a request: the default contract adds the history and
the conversation id; a question of its own is sent as it always was."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from evaluator.config.target import HttpTargetConfig
from evaluator.models import Dialogue, Message
from evaluator.targets.request import RequestTemplate

DIALOGUE = Dialogue(
    history=(Message("user", "退款多久到账？"), Message("assistant", "3-5个工作日。")),
    id="conv-1",
)


def test_a_default_contract_turn_carries_history_and_conversation_id() -> None:
    """The body is the question's body plus the earlier turns and the conversation id."""
    template = RequestTemplate.from_config("http://127.0.0.1:9/rag")

    body = json.loads(template.build("那支付宝呢？", 5, DIALOGUE).content or b"")

    assert {
        "question": "那支付宝呢？",
        "top_k": 5,
        "history": [
            {"role": "user", "content": "退款多久到账？"},
            {"role": "assistant", "content": "3-5个工作日。"},
        ],
        "conversation_id": "conv-1",
    } == body


def test_a_question_of_its_own_is_sent_as_before() -> None:
    """Without a dialogue the default contract's body is exactly question and top_k."""
    template = RequestTemplate.from_config("http://127.0.0.1:9/rag")

    assert b'{"question": "q", "top_k": 5}' == template.build("q", 5).content


def test_a_template_places_the_conversation_placeholders() -> None:
    """{history} and {messages} are lists, {conversation_id} a string, in text its text."""
    template = RequestTemplate.from_config(
        "http://127.0.0.1:9/chat",
        body={"m": "{messages}", "h": "{history}", "s": "s-{conversation_id}"},
    )

    body = json.loads(template.build("那支付宝呢？", 5, DIALOGUE).content or b"")

    assert {
        "m": [
            {"role": "user", "content": "退款多久到账？"},
            {"role": "assistant", "content": "3-5个工作日。"},
            {"role": "user", "content": "那支付宝呢？"},
        ],
        "h": [
            {"role": "user", "content": "退款多久到账？"},
            {"role": "assistant", "content": "3-5个工作日。"},
        ],
        "s": "s-conv-1",
    } == body


def test_a_question_of_its_own_is_a_conversation_of_one_turn() -> None:
    """Without a dialogue {history} is empty, {messages} the question alone, and each
    request gets a fresh {conversation_id}."""
    template = RequestTemplate.from_config(
        "http://127.0.0.1:9/chat",
        body={"m": "{messages}", "h": "{history}", "s": "{conversation_id}"},
        params={"session": "{conversation_id}"},
    )

    first, second = template.build("q", 5), template.build("q", 5)
    bodies = [json.loads(r.content or b"") for r in (first, second)]

    assert [[{"role": "user", "content": "q"}], []] == [bodies[0]["m"], bodies[0]["h"]]
    assert bodies[0]["s"] != bodies[1]["s"]
    assert bodies[0]["s"] == first.url.query["session"]


@pytest.mark.parametrize(
    ("conversation", "request_", "message"),
    [
        (
            {"id": "a[", "name": "X-Id"},
            {},
            "invalid JMESPath expression",
        ),
        (
            {"id": "id", "name": "X Id"},
            {},
            "the header name is not an HTTP token",
        ),
        (
            {"id": "id", "send": "body", "name": "session"},
            {"method": "GET", "params": {"q": "{question}"}},
            "conversation.send = 'body' needs a JSON object body to add the id to",
        ),
    ],
)
def test_a_bad_conversation_setting_names_itself(
    conversation: dict[str, str], request_: dict[str, object], message: str
) -> None:
    """The configuration stops at start naming what is wrong in [targets.conversation]."""
    with pytest.raises(ValidationError) as caught:
        HttpTargetConfig.model_validate(
            {"url": "http://127.0.0.1:9/rag", "conversation": conversation, "request": request_}
        )

    assert message in str(caught.value)

"""How a conversation's turn becomes a request: the default contract adds the history and
the conversation id; a question of its own is sent as it always was."""

from __future__ import annotations

import json

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

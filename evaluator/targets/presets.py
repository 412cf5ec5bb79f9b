"""Presets: what a target of a well-known kind sends and where its fields are.

``openai-chat``: an OpenAI-compatible chat completions endpoint (``POST .../chat/completions``),
which many RAG frameworks serve. The question is the user message (a conversation's turn
sends the earlier turns as the messages before it, as chat clients do); the answer is
``choices[0].message.content``, or streamed (``"stream": true``) the assembled
``choices[0].delta.content`` of each server-sent event, complete at ``data: [DONE]`` or at a
close after the chunk whose ``finish_reason`` is set (vLLM, llama.cpp and others send no
``[DONE]``); token usage is ``usage.prompt_tokens`` and ``usage.completion_tokens``, null
meaning "not reported" (a streamed answer's usage comes in its last event when
``stream_options.include_usage`` is asked for, which the preset does). Retrieved ids and
citations are wherever the service puts its sources: set ``response.ids`` (and
``citations`` or ``citation_markers``) in the target's configuration; until then retrieval
and citation metrics are n/a.

``openai-responses``: the Responses API (``POST .../responses``). The question is the
``input`` (a conversation's turn: the earlier turns as input messages, then the question);
the answer is the ``output_text`` parts of the ``message`` output items; the retrieved ids
are the ``file_search_call`` results (asked for with ``include:
["file_search_call.results"]``), with their texts and scores; the citations are the
``file_citation`` (file id) and ``url_citation`` (url) annotations of the answer; usage is
``usage.input_tokens`` and ``usage.output_tokens``; an answer without a ``file_search_call``
reports no retrieval (``retrieved_when``: its retrieval metrics are n/a, not 0). Streamed,
the answer is the ``response.output_text.delta`` events and the fields are read from
``response.completed`` (or ``response.incomplete``, an answer cut at its token limit).

Every field given in the target's ``[targets.response]`` overrides the preset's, and a
``[targets.streaming]`` table overrides the preset's streaming settings key by key.

A preset is one entry of :data:`PRESETS`: its body, its response mapping (and the mapping of
a streamed answer's fields event when it differs) and how it reads a streamed answer. The
configuration accepts ``kind = "<name>"`` for every entry and the factory applies it; nothing
else names a preset (``tests/targets/test_presets.py`` adds one through the table alone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pydantic import JsonValue

__all__ = ["PRESETS", "Preset"]


@dataclass(frozen=True)
class Preset:
    """What a target of one well-known kind sends and where its fields are."""

    #: what it is, for the configuration reference and messages
    description: str
    #: the request body for a model name and whether a streamed answer is asked for
    body: Callable[[str, bool], JsonValue]
    #: the body of a conversation's turn: the earlier turns where the API takes them
    #: (chat messages, input items), the question last
    turn_body: Callable[[str, bool], JsonValue]
    #: the response mapping (JMESPath per field) of a JSON body
    response: Mapping[str, str]
    #: how a streamed answer is read (the ``[targets.streaming]`` keys)
    streaming: Mapping[str, str]
    #: the mapping of a streamed answer's fields event, when not ``response``
    streamed_response: Mapping[str, str] | None = None

    def mapping(self, stream: bool) -> dict[str, str]:
        """The response mapping of a streamed (``stream``) or a JSON answer, a copy."""
        if stream and self.streamed_response is not None:
            return dict(self.streamed_response)
        return dict(self.response)


#: the response mapping of the preset (``ids`` empty until the configuration says where)
_OPENAI_CHAT_RESPONSE: dict[str, str] = {
    "ids": "`[]`",
    "answer": "choices[0].message.content",
    "input_tokens": "usage.prompt_tokens",
    "output_tokens": "usage.completion_tokens",
}

#: how the preset reads a streamed answer
_OPENAI_CHAT_STREAMING: dict[str, str] = {
    "format": "sse",
    "content": "choices[0].delta.content",
    "done": "[DONE]",
    # many servers (vLLM, llama.cpp, Ollama's OpenAI API) close after the chunk whose
    # finish_reason is set, without [DONE]: that close is a complete answer
    "finish": "choices[0].finish_reason",
}

_MESSAGE_PARTS = "output[?type=='message'].content[]"
_RESULTS = "output[?type=='file_search_call'].results[][]"

#: the Responses API's fields, in a non-streamed body (streamed: under ``response``)
_OPENAI_RESPONSES_RESPONSE: dict[str, str] = {
    "ids": f"{_RESULTS}.file_id",
    "texts": f"{_RESULTS}.text",
    "scores": f"{_RESULTS}.score",
    "answer": f"{_MESSAGE_PARTS} | [?type=='output_text'].text | join('', @)",
    "citations": f"{_MESSAGE_PARTS}[].annotations[][] | map(&(file_id || url), @)",
    "input_tokens": "usage.input_tokens",
    "output_tokens": "usage.output_tokens",
    # an answer without file search did no retrieval the API reports: retrieval n/a, not 0
    "retrieved_when": "output[?type=='file_search_call']",
}

_FINAL = "type == 'response.completed' || type == 'response.incomplete'"

#: streamed: the deltas, up to the final event (``incomplete``: cut at max_output_tokens,
#: still an answer), which carries the whole response
_OPENAI_RESPONSES_STREAMING: dict[str, str] = {
    "format": "sse",
    "content": "type == 'response.output_text.delta' && delta || ''",
    "fields_from": _FINAL,
    "finish": _FINAL,
}


def _chat_body(model: str, stream: bool, messages: JsonValue = None) -> JsonValue:
    """A chat completion of the question as the user's message (usage asked for in a
    stream); ``messages``: a conversation's, in its place."""
    body: dict[str, JsonValue] = {
        "model": model,
        "messages": [{"role": "user", "content": "{question}"}] if messages is None else messages,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _chat_turn(model: str, stream: bool) -> JsonValue:
    """A conversation's turn as chat clients send it: the earlier turns as messages, then
    the question as the user's."""
    return _chat_body(model, stream, "{messages}")


def _responses_body(model: str, stream: bool, turn: bool = False) -> JsonValue:
    """A response to the question as the input, the file search results included; a
    conversation's turn sends the earlier turns as input items before it."""
    return {
        "model": model,
        "input": "{messages}" if turn else "{question}",
        "include": ["file_search_call.results"],
        "stream": stream,
    }


def _responses_turn(model: str, stream: bool) -> JsonValue:
    """A conversation's turn: the earlier turns as input messages, the question last."""
    return _responses_body(model, stream, turn=True)


#: the Responses API's fields when streamed: response.completed carries the whole response
#: object under "response"
_OPENAI_RESPONSES_STREAMED: dict[str, str] = {
    name: f"response.{expression}" if not expression.startswith("`") else expression
    for name, expression in _OPENAI_RESPONSES_RESPONSE.items()
}

#: every preset, by the ``kind`` that picks it
PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        "openai-chat": Preset(
            description="an OpenAI-compatible chat completions endpoint",
            body=_chat_body,
            turn_body=_chat_turn,
            response=_OPENAI_CHAT_RESPONSE,
            streaming=_OPENAI_CHAT_STREAMING,
        ),
        "openai-responses": Preset(
            description="the OpenAI Responses API",
            body=_responses_body,
            turn_body=_responses_turn,
            response=_OPENAI_RESPONSES_RESPONSE,
            streaming=_OPENAI_RESPONSES_STREAMING,
            streamed_response=_OPENAI_RESPONSES_STREAMED,
        ),
    }
)

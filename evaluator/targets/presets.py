"""Presets: what a target of a well-known kind sends and where its fields are.

``openai-chat``: an OpenAI-compatible chat completions endpoint (``POST .../chat/completions``),
which many RAG frameworks serve. The question is the user message; the answer is
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
``input``; the answer is the ``output_text`` parts of the ``message`` output items; the
retrieved ids are the ``file_search_call`` results (asked for with
``include: ["file_search_call.results"]``), with their texts and scores; the citations are
the ``file_citation`` (file id) and ``url_citation`` (url) annotations of the answer; usage
is ``usage.input_tokens`` and ``usage.output_tokens``. Streamed, the answer is the
``response.output_text.delta`` events and the fields are read from ``response.completed``
(or ``response.incomplete``, an answer cut at its token limit).

Every field given in the target's ``[targets.response]`` overrides the preset's, and a
``[targets.streaming]`` table overrides the preset's streaming settings key by key.
"""

from __future__ import annotations

from pydantic import JsonValue

__all__ = [
    "KINDS",
    "OPENAI_CHAT_RESPONSE",
    "OPENAI_CHAT_STREAMING",
    "OPENAI_RESPONSES_RESPONSE",
    "OPENAI_RESPONSES_STREAMING",
    "preset_body",
    "preset_response",
    "preset_streaming",
]

#: the kinds with a preset
KINDS = ("openai-chat", "openai-responses")

#: the response mapping of the preset (``ids`` empty until the configuration says where)
OPENAI_CHAT_RESPONSE: dict[str, str] = {
    "ids": "`[]`",
    "answer": "choices[0].message.content",
    "input_tokens": "usage.prompt_tokens",
    "output_tokens": "usage.completion_tokens",
}

#: how the preset reads a streamed answer
OPENAI_CHAT_STREAMING: dict[str, str] = {
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
OPENAI_RESPONSES_RESPONSE: dict[str, str] = {
    "ids": f"{_RESULTS}.file_id",
    "texts": f"{_RESULTS}.text",
    "scores": f"{_RESULTS}.score",
    "answer": f"{_MESSAGE_PARTS} | [?type=='output_text'].text | join('', @)",
    "citations": f"{_MESSAGE_PARTS}[].annotations[][] | map(&(file_id || url), @)",
    "input_tokens": "usage.input_tokens",
    "output_tokens": "usage.output_tokens",
}

_FINAL = "type == 'response.completed' || type == 'response.incomplete'"

#: streamed: the deltas, up to the final event (``incomplete``: cut at max_output_tokens,
#: still an answer), which carries the whole response
OPENAI_RESPONSES_STREAMING: dict[str, str] = {
    "format": "sse",
    "content": "type == 'response.output_text.delta' && delta || ''",
    "fields_from": _FINAL,
    "finish": _FINAL,
}


def preset_body(kind: str, model: str, stream: bool) -> JsonValue:
    """The request body of ``kind``: the question, for ``model``."""
    body: dict[str, JsonValue]
    if kind == "openai-responses":
        body = {
            "model": model,
            "input": "{question}",
            "include": ["file_search_call.results"],
            "stream": stream,
        }
        return body
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "{question}"}],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def preset_response(kind: str, stream: bool) -> dict[str, str]:
    """The response mapping of ``kind``'s preset (a streamed one reads its fields event)."""
    if kind == "openai-responses":
        if not stream:
            return dict(OPENAI_RESPONSES_RESPONSE)
        # response.completed carries the whole response object under "response"
        return {
            name: f"response.{expression}" if not expression.startswith("`") else expression
            for name, expression in OPENAI_RESPONSES_RESPONSE.items()
        }
    return dict(OPENAI_CHAT_RESPONSE)


def preset_streaming(kind: str) -> dict[str, str]:
    """The streaming settings of ``kind``'s preset."""
    return dict(OPENAI_RESPONSES_STREAMING if kind == "openai-responses" else OPENAI_CHAT_STREAMING)

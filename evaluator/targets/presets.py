"""Presets: what a target of a well-known kind sends and where its fields are.

``openai-chat``: an OpenAI-compatible chat completions endpoint (``POST .../chat/completions``),
which many RAG frameworks serve. The question is the user message; the answer is
``choices[0].message.content``, or streamed (``"stream": true``) the assembled
``choices[0].delta.content`` of each server-sent event up to ``data: [DONE]``; token usage is
``usage.prompt_tokens`` and ``usage.completion_tokens`` (a streamed answer's usage comes in
its last event when ``stream_options.include_usage`` is asked for, which the preset does).
Retrieved ids and citations are wherever the service puts its sources: set
``response.ids`` (and ``citations``) in the target's configuration; every field given there
overrides the preset's.
"""

from __future__ import annotations

from pydantic import JsonValue

__all__ = ["OPENAI_CHAT_RESPONSE", "OPENAI_CHAT_STREAMING", "openai_chat_body"]

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


def openai_chat_body(model: str, stream: bool) -> JsonValue:
    """The request body: the question as the user message, for ``model``."""
    body: dict[str, JsonValue] = {
        "model": model,
        "messages": [{"role": "user", "content": "{question}"}],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body

"""Reading a judge's response as hostile input: bounded, and never a verdict by default.

A chat completion is decoded (within the client's byte cap) by the border's JSON reader, as a
target's body is (:func:`evaluator.border.loads`: nesting bounded, lone surrogates replaced),
its first choice's content is taken, and one JSON object is read from it: the whole content
when it is JSON (a server that honoured ``response_format``), else the first balanced
``{...}`` in the text (a model that wrapped its JSON in prose or a code fence). Anything
else, and any verdict missing a field or holding the wrong type, is
:class:`~evaluator.judge.errors.JudgeMalformedError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluator import border
from evaluator.bounds import clip
from evaluator.judge.errors import JudgeMalformedError

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_DEPTH",
    "Completion",
    "bounded_text",
    "extract_object",
    "parse_completion",
    "require_bool",
    "require_list",
]

#: a verdict is a few hundred characters; more is a judge gone astray (or an attack)
MAX_CONTENT_CHARS = 65_536
#: nesting a verdict needs (object > list > object); deeper is refused before json.loads
MAX_DEPTH = 8
#: ``{`` positions tried as an object's start: each is a scan, so hostile text of many
#: unclosed braces costs a bounded number of them
MAX_STARTS = 16


class _TooDeep(Exception):
    """An object nests deeper than :data:`MAX_DEPTH`: refused whole, not searched inside."""


@dataclass(frozen=True, slots=True)
class Completion:
    """What a chat completion said: its text and the usage it reported (when it did)."""

    content: str
    input_tokens: int | None = None
    output_tokens: int | None = None


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9:
        return value
    return None


def parse_completion(body: bytes) -> Completion:
    """The content and usage of an OpenAI chat-completions response body.

    Raises:
        JudgeMalformedError: not JSON, not a chat completion, or no text content.
    """
    try:
        # the border's JSON reader, as a target's body: nesting bounded, every string's lone
        # surrogates replaced (a reason holding one failed the report's write)
        data = border.loads(body)
    except ValueError:
        raise JudgeMalformedError("judge response is not JSON") from None
    if not isinstance(data, dict):
        raise JudgeMalformedError("judge response is not a JSON object")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        _content(data), _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    )


def _content(data: dict[str, Any]) -> str:
    """The first choice's message text, bounded.

    Raises:
        JudgeMalformedError: no choice, no message text, or too much of it.
    """
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise JudgeMalformedError("judge response has no choices")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or not content.strip():
        raise JudgeMalformedError("judge response has no message content")
    if len(content) > MAX_CONTENT_CHARS:
        raise JudgeMalformedError(f"judge content is longer than {MAX_CONTENT_CHARS} characters")
    return content


def _balanced_end(text: str, start: int) -> int | None:
    """The index after the ``}`` closing the ``{`` at ``start`` (strings respected), or None
    when it is not closed.

    Raises:
        _TooDeep: it nests deeper than :data:`MAX_DEPTH`.
    """
    depth = 0
    i = start
    while i < len(text):
        char = text[i]
        if char == '"':
            after = _string_end(text, i + 1)
            if after is None:
                return None
            i = after
            continue
        if char in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                raise _TooDeep
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                return i + 1 if depth == 0 else None
        i += 1
    return None


def _string_end(text: str, start: int) -> int | None:
    """The index after the ``"`` closing a JSON string whose characters begin at ``start``
    (backslash escapes respected), or None when it is not closed."""
    escaped = False
    for i in range(start, len(text)):
        if escaped:
            escaped = False
        elif text[i] == "\\":
            escaped = True
        elif text[i] == '"':
            return i + 1
    return None


def extract_object(content: str) -> dict[str, Any]:
    """The one JSON object ``content`` holds: all of it, or its first balanced object.

    Raises:
        JudgeMalformedError: no JSON object could be read (or it nests too deep).
    """
    text = content.strip()[:MAX_CONTENT_CHARS]
    start = text.find("{")
    for _ in range(MAX_STARTS):
        if start == -1:
            break
        try:
            end = _balanced_end(text, start)
        except _TooDeep:
            raise JudgeMalformedError(f"judge content nests deeper than {MAX_DEPTH}") from None
        if end is not None:
            try:
                # the content is JSON inside JSON: its own escapes pass the border too
                value = border.loads(text[start:end])
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    raise JudgeMalformedError("judge content holds no JSON object")


def require_bool(verdict: dict[str, Any], name: str) -> bool:
    """``verdict[name]`` as a bool; a missing or non-boolean value is no verdict."""
    value = verdict.get(name)
    if not isinstance(value, bool):
        raise JudgeMalformedError(f"verdict field {name!r} is missing or not true/false")
    return value


def require_list(verdict: dict[str, Any], name: str, limit: int) -> list[Any]:
    """``verdict[name]`` as a list of at most ``limit`` items."""
    value = verdict.get(name)
    if not isinstance(value, list):
        raise JudgeMalformedError(f"verdict field {name!r} is missing or not a list")
    if len(value) > limit:
        raise JudgeMalformedError(f"verdict field {name!r} has more than {limit} items")
    return value


def bounded_text(value: object, limit: int = 500) -> str:
    """A verdict's free text (a reason, a claim) as a one-line string of at most ``limit``."""
    if not isinstance(value, str):
        return ""
    return clip(" ".join(value.split()), limit)

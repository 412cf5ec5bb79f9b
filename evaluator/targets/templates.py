"""The request template grammar: the placeholders (``{question}``, ``{k}``, a conversation's
``{history}``, ``{messages}`` and ``{conversation_id}``) and ``${NAME}``
environment references, shared by the configuration (to validate) and the HTTP target (to
render). Dependency-free, so loading a config does not import the HTTP stack.

A placeholder is an entry of :data:`PLACEHOLDERS`; a request gives each its value
(:meth:`evaluator.targets.request.RequestTemplate.build`). A body string that is exactly
``"{name}"`` becomes the value itself (``"{k}"`` the integer K); inside longer text the
value's text is substituted (``"top-{k}"`` gives ``"top-5"``), a string as it is and any
other value as its JSON.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from pydantic import JsonValue

from evaluator.errors import ConfigError

__all__ = [
    "DEFAULT_BODY",
    "DEFAULT_TURN_BODY",
    "ENV_REFERENCE",
    "PLACEHOLDER",
    "PLACEHOLDERS",
    "Values",
    "env_reference_problem",
    "mentions_question",
    "placeholder_values",
    "placeholders_in",
    "render_body",
    "render_text",
    "resolve_env",
]

#: every placeholder of a request template: its name -> what it stands for. A new one is an
#: entry here and its value in :func:`placeholder_values`.
PLACEHOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "question": "the case's question, a string",
        "k": "the retrieval cutoff K, an integer",
        "history": (
            "a conversation's earlier turns, oldest first: a list of "
            '{"role": "user" or "assistant", "content": text} ([] for a question of its own)'
        ),
        "messages": (
            "the history and then the question, as chat messages "
            '(the question\'s {"role": "user", "content": question} last)'
        ),
        "conversation_id": (
            "an id fresh per conversation and per run, the same in each of its turns "
            "(a question of its own: fresh per question)"
        ),
    }
)

#: a placeholder in a template string, ``{question}``, its name the first group
PLACEHOLDER = re.compile(r"\{(" + "|".join(map(re.escape, PLACEHOLDERS)) + r")\}")
#: a template string that is exactly one placeholder -> the placeholder's name (a plain
#: dict, never changed: looked up for every body string of every request, where a
#: MappingProxyType's ``get`` costs 270 interpreter instructions more a lookup)
_WHOLE: dict[str, str] = {f"{{{name}}}": name for name in PLACEHOLDERS}
#: the values of one request's placeholders, by name
Values = Mapping[str, JsonValue]
#: ``${NAME}``: an environment variable
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: the default contract's request body
DEFAULT_BODY: JsonValue = {"question": "{question}", "top_k": "{k}"}
#: the default contract's request body for a conversation's turn
DEFAULT_TURN_BODY: JsonValue = {
    "question": "{question}",
    "top_k": "{k}",
    "history": "{history}",
    "conversation_id": "{conversation_id}",
}


def env_reference_problem(value: str) -> str | None:
    """Why ``value`` holds a malformed ``${...}`` reference, or None when it is well formed."""
    stripped = ENV_REFERENCE.sub("", value)
    if "${" in stripped:
        return "malformed environment reference: write ${NAME} (letters, digits, underscores)"
    return None


def resolve_env(
    value: str,
    where: str,
    *,
    found: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    hint: str = "",
) -> str:
    """``value`` with its ``${NAME}`` references read from ``environ`` (the process's when
    None); each value read goes to ``found``.

    Raises:
        ConfigError: a variable is unset or empty: the message names it, ``where`` and
            ``hint``, never a value.
    """
    env = os.environ if environ is None else environ

    def lookup(match: re.Match[str]) -> str:
        resolved = env.get(match.group(1))
        if not resolved:
            raise ConfigError(f"{where}: environment variable {match.group(1)} is not set{hint}")
        if found is not None:
            found.append(resolved)
        return resolved

    return ENV_REFERENCE.sub(lookup, value)


def mentions_question(template: JsonValue) -> bool:
    """Whether the question is sent anywhere in a template (strings, lists, object values):
    as ``{question}``, or inside ``{messages}``, whose last message it is."""
    return not placeholders_in(template).isdisjoint(_CARRY_QUESTION)


#: the placeholders whose value holds the question
_CARRY_QUESTION = frozenset({"question", "messages"})


def placeholders_in(template: JsonValue) -> frozenset[str]:
    """The names of the placeholders a template uses (strings, lists, object values)."""
    if isinstance(template, str):
        return frozenset(m.group(1) for m in PLACEHOLDER.finditer(template))
    if isinstance(template, list):
        return frozenset().union(*map(placeholders_in, template))
    if isinstance(template, dict):
        return frozenset().union(*map(placeholders_in, template.values()))
    return frozenset()


def placeholder_values(
    question: str,
    k: int,
    history: Sequence[tuple[str, str]] = (),
    conversation_id: str = "",
) -> Values:
    """The value of each placeholder of :data:`PLACEHOLDERS` for one request: ``history``
    is the earlier turns as (role, content), oldest first."""
    earlier: list[JsonValue] = [{"role": role, "content": content} for role, content in history]
    return {
        "question": question,
        "k": k,
        "history": earlier,
        "messages": [*earlier, {"role": "user", "content": question}],
        "conversation_id": conversation_id,
    }


def render_text(template: str, values: Values) -> str:
    """Substitute every placeholder in one string with its value's text, in a single pass."""
    return PLACEHOLDER.sub(lambda m: _text(values[m.group(1)]), template)


def _text(value: JsonValue) -> str:
    """A value as text inside a longer string: a string as it is, anything else its JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render_body(template: JsonValue, values: Values) -> JsonValue:
    """The body for one request: placeholders substituted in every string value.

    Object keys are left alone; numbers, booleans and nulls pass through unchanged.
    """
    if isinstance(template, str):
        whole = _WHOLE.get(template)
        if whole is not None:
            return values[whole]
        return render_text(template, values)
    if isinstance(template, dict):  # before list: a body is an object
        # a loop, not a comprehension: in Python 3.11 a comprehension is a function made and
        # called each time, 1,300 interpreter instructions of the default contract's request
        rendered: dict[str, JsonValue] = {}
        for key, value in template.items():
            rendered[key] = render_body(value, values)
        return rendered
    if isinstance(template, list):
        return [render_body(v, values) for v in template]
    return template

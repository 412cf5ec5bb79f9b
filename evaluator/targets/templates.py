"""The request template grammar: ``{question}``/``{k}`` placeholders and ``${NAME}``
environment references, shared by the configuration (to validate) and the HTTP target (to
render). Dependency-free, so loading a config does not import the HTTP stack.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pydantic import JsonValue

from evaluator.errors import ConfigError

__all__ = [
    "DEFAULT_BODY",
    "ENV_REFERENCE",
    "PLACEHOLDER",
    "env_reference_problem",
    "mentions_question",
    "render_body",
    "render_text",
    "resolve_env",
]

#: ``{question}`` or ``{k}``
PLACEHOLDER = re.compile(r"\{(question|k)\}")
#: ``${NAME}``: an environment variable
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: the default contract's request body
DEFAULT_BODY: JsonValue = {"question": "{question}", "top_k": "{k}"}


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
    """Whether ``{question}`` occurs anywhere in a template (strings, lists, object values)."""
    if isinstance(template, str):
        return any(m.group(1) == "question" for m in PLACEHOLDER.finditer(template))
    if isinstance(template, list):
        return any(mentions_question(v) for v in template)
    if isinstance(template, dict):
        return any(mentions_question(v) for v in template.values())
    return False


def render_text(template: str, question: str, k: int) -> str:
    """Substitute ``{question}`` and ``{k}`` in one string, in a single pass."""
    return PLACEHOLDER.sub(lambda m: question if m.group(1) == "question" else str(k), template)


def render_body(template: JsonValue, question: str, k: int) -> JsonValue:
    """The body for one question: placeholders substituted in every string value.

    Object keys are left alone; numbers, booleans and nulls pass through unchanged.
    """
    if isinstance(template, str):
        if template == "{k}":
            return k
        if template == "{question}":
            return question
        return render_text(template, question, k)
    if isinstance(template, list):
        return [render_body(v, question, k) for v in template]
    if isinstance(template, dict):
        return {key: render_body(v, question, k) for key, v in template.items()}
    return template

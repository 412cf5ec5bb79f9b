"""Request templates: how one question becomes an HTTP request, secrets included.

Two kinds of placeholder (the grammar is in :mod:`evaluator.targets.templates`):

- ``{question}``, ``{k}`` and a conversation's ``{history}``, ``{messages}`` and
  ``{conversation_id}`` (the table ``PLACEHOLDERS``), in query-parameter values and in the
  strings of the JSON body template. A body value that is exactly ``"{k}"`` becomes the
  integer K, exactly ``"{question}"`` the question string and exactly ``"{history}"`` the
  list of earlier messages; inside a longer string each is substituted as text
  (``"top-{k}"`` gives ``"top-5"``). Substitution is a single pass over the parsed template
  and the body is serialised as JSON afterwards, so a question holding quotes, backslashes
  or ``{k}`` can neither break the JSON nor be substituted again. A conversation's turn is
  rendered from ``turn_body`` (the default contract's and the presets' add the history),
  every other request from ``body``.
- ``${NAME}``, in header and query-parameter values: the environment variable ``NAME``, read
  once when the target is built. Such values, and every value of a header or parameter whose
  name looks secret (``Authorization``, ``api_key``...), are secrets: held as
  :class:`pydantic.SecretStr`, added to the request only as it leaves (so the request that
  :meth:`RequestTemplate.build` returns, and ``probe`` shows, never holds them), masked when
  shown and registered with :mod:`evaluator.redaction`, which removes them from everything
  that leaves the process.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import quote, urlsplit

import msgspec
from pydantic import JsonValue, SecretStr
from yarl import URL

from evaluator import border
from evaluator._version import __version__
from evaluator.errors import ConfigError
from evaluator.models import Dialogue
from evaluator.redaction import (
    MASK,
    Redactor,
    derived_secrets,
    is_secret_name,
    register_secrets,
)
from evaluator.targets.templates import (
    DEFAULT_BODY,
    DEFAULT_TURN_BODY,
    ENV_REFERENCE,
    Values,
    placeholder_values,
    placeholders_in,
    render_body,
    render_text,
    resolve_env,
)

__all__ = ["MASK", "OutgoingRequest", "Redactor", "RequestTemplate", "encode_body"]


class OutgoingRequest(msgspec.Struct, frozen=True):
    """One request as built for a question, without its secrets (added as it leaves).

    ``own_headers`` are this request's alone (its trace header, a conversation's id): the
    template's constant headers (:attr:`RequestTemplate.constant_headers`) are the
    session's, sent with every request of the target.
    """

    method: str
    url: URL
    own_headers: dict[str, str]
    content: bytes | None = None


def encode_body(body: JsonValue) -> bytes:
    """A rendered body as the JSON sent: the text of ``json.dumps(body,
    ensure_ascii=False)`` (its separators, its escapes, UTF-8), made in C by msgspec, numbers
    in their shortest form (``1e16`` where json.dumps writes ``1e+16``: the same number). NaN
    and Infinity are not JSON: the configuration refuses them in a body template, and no
    placeholder's value is a float.

    The standard library's encoder builds an encoder object per call: 17,000 interpreter
    instructions a request for the default contract's body, against 2,000 here (callgrind).

    Raises:
        UnicodeEncodeError: a string holds a lone surrogate (as json.dumps's text would).
    """
    return msgspec.json.format(msgspec.json.encode(body), indent=0)


#: the placeholders whose values only a conversation gives
_CONVERSATION_NAMES = frozenset({"history", "messages", "conversation_id"})


_Plain = tuple[tuple[str, str], ...]
_Secret = tuple[tuple[str, SecretStr], ...]


def _split_entries(
    entries: Mapping[str, str],
    section: str,
    found: list[str],
    environ: Mapping[str, str] | None,
) -> tuple[_Plain, _Secret]:
    """A section's entries (``params`` or ``headers``) split into plain and secret ones: a
    value with ``${NAME}``, or any value of a secret-looking name, is a secret, its
    references read from ``environ`` (each value read goes to ``found``). Each value passes
    the border's rule for its section.

    Raises:
        ConfigError: a variable unset or empty, or a value the border refuses, naming where.
    """
    plain: list[tuple[str, str]] = []
    secret: list[tuple[str, SecretStr]] = []
    for name, value in entries.items():
        where = f"request.{section}.{name}"
        if ENV_REFERENCE.search(value) or is_secret_name(name):
            value = resolve_env(
                value,
                where,
                found=found,
                environ=environ,
                hint=" (or empty); export it before starting evaluator",
            )
            secret.append((name, SecretStr(value)))
        else:
            plain.append((name, value))
        problem = (
            border.header_problem(name, value)
            if section == "headers"
            else border.text_problem(value)
        )
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")
    return tuple(plain), tuple(secret)


def _bodies(method: str, body: JsonValue, turn_body: JsonValue) -> tuple[JsonValue, JsonValue]:
    """The body and a conversation's turn body: without a body a POST sends the default
    contract's, and the default contract's turn carries its history."""
    if body is None and method == "POST":
        body = DEFAULT_BODY
    if turn_body is None and body == DEFAULT_BODY:
        turn_body = DEFAULT_TURN_BODY
    return body, turn_body


#: what every request accepts: the codings :mod:`evaluator.targets.decode` decodes, bounded
ACCEPT_ENCODING = "gzip, deflate, br"


@dataclass(frozen=True)
class RequestTemplate:
    """A request with placeholders, and the secrets to add to it as it leaves.

    Build it with :meth:`from_config`; :meth:`build` makes the request for one question.
    ``params`` and ``headers`` hold the plain entries, ``secret_params`` and
    ``secret_headers`` the resolved secret ones.
    """

    method: str
    url: str
    params: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: JsonValue = None
    #: the body of a conversation's turn (None: ``body``, whose placeholders say where the
    #: history goes)
    turn_body: JsonValue = None
    secret_params: tuple[tuple[str, SecretStr], ...] = ()
    secret_headers: tuple[tuple[str, SecretStr], ...] = ()
    #: the environment values inside them (a token without its "Bearer ")
    env_values: tuple[SecretStr, ...] = ()
    #: parsed once: URL parsing per request was a tenth of a case's client CPU
    _url: URL = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_url", URL(self.url))

    @classmethod
    def from_config(
        cls,
        url: str,
        *,
        method: str = "POST",
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: JsonValue = None,
        turn_body: JsonValue = None,
        environ: Mapping[str, str] | None = None,
    ) -> RequestTemplate:
        """Resolve ``${NAME}`` references and split secret entries from plain ones.

        Without a ``body``, a POST sends the default contract's (and a conversation's turn
        the default contract's with its history); ``turn_body`` is a preset's.

        Raises:
            ConfigError: a referenced environment variable is unset or empty (the message
                names the variable and where it is used, never a value).
        """
        found: list[str] = []
        plain_params, secret_params = _split_entries(params or {}, "params", found, environ)
        plain_headers, secret_headers = _split_entries(headers or {}, "headers", found, environ)
        body, turn_body = _bodies(method, body, turn_body)
        template = cls(
            method=method,
            url=url,
            params=plain_params,
            headers=plain_headers,
            body=body,
            turn_body=turn_body,
            secret_params=secret_params,
            secret_headers=secret_headers,
            env_values=tuple(SecretStr(v) for v in found),
        )
        # from here on, whatever leaves the process is redacted of these (see redaction),
        # and of the url's userinfo (user:password, password), never of the url itself
        register_secrets([*template.secrets(), *derived_secrets(url)])
        return template

    @property
    def is_default(self) -> bool:
        """Whether this is the default contract's request (POST url {question, top_k})."""
        return (
            self.method == "POST"
            and self.body == DEFAULT_BODY
            and not (self.params or self.headers or self.secret_params or self.secret_headers)
        )

    def secrets(self) -> tuple[str, ...]:
        """Every secret value, whole and the environment values inside, for redaction."""
        whole = [v for _, v in (*self.secret_params, *self.secret_headers)]
        return tuple(v.get_secret_value() for v in (*whole, *self.env_values))

    @cached_property
    def constant_headers(self) -> Mapping[str, str]:
        """The plain headers every request of the template sends (the secret ones are added
        as a request leaves): the HTTP target's session sends them, so a request does not
        carry a copy of them."""
        headers = {
            "User-Agent": f"evaluator/{__version__}",
            "Accept-Encoding": ACCEPT_ENCODING,
            **dict(self.headers),
        }
        if self.body is not None:
            headers.setdefault("Content-Type", "application/json")
        return headers

    def _template(self, turn: bool) -> JsonValue:
        """The body template of a request: a conversation's ``turn`` from ``turn_body`` (when
        there is one), every other request from ``body``."""
        return self.body if not turn or self.turn_body is None else self.turn_body

    @cached_property
    def _names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The placeholders a question's request uses, and a conversation turn's (its body
        template's and the parameters'): only those are given values. The default contract's
        turn body holds ``{conversation_id}``; its questions of their own must not pay for a
        fresh id (4 µs of ``uuid4`` per case) that their body never sends."""
        params: list[JsonValue] = [v for _, v in self.params]
        return (
            placeholders_in([self._template(False), params]),
            placeholders_in([self._template(True), params]),
        )

    def values(self, question: str, k: int, dialogue: Dialogue | None = None) -> Values:
        """The values of the placeholders the request uses, for one question (a
        conversation's turn: with its ``dialogue``)."""
        names = self._names[dialogue is not None]
        if names.isdisjoint(_CONVERSATION_NAMES):  # most requests: nothing to make
            return {"question": question, "k": k}
        if dialogue is None:
            # a question of its own is a conversation of one turn: a fresh id
            fresh = uuid.uuid4().hex if "conversation_id" in names else ""
            return placeholder_values(question, k, conversation_id=fresh)
        history = [(m.role, m.content) for m in dialogue.history]
        return placeholder_values(question, k, history, dialogue.id)

    def render_content(
        self, question: str, k: int, dialogue: Dialogue | None = None, values: Values | None = None
    ) -> bytes | None:
        """The request body for one question (None without a body template): a
        conversation's turn from ``turn_body`` (when there is one)."""
        template = self._template(dialogue is not None)
        if template is None:
            return None
        if values is None:
            values = self.values(question, k, dialogue)
        return encode_body(render_body(template, values))

    def build(self, question: str, k: int, dialogue: Dialogue | None = None) -> OutgoingRequest:
        """The request for one question (a conversation's turn: with its ``dialogue``),
        without its secrets (the transport adds them)."""
        url = self._url
        values = self.values(question, k, dialogue)
        if self.params:
            url = url.extend_query(
                [(name, render_text(value, values)) for name, value in self.params]
            )
        content = self.render_content(question, k, dialogue, values)
        return OutgoingRequest(self.method, url, {}, content)

    def describe(self, request: OutgoingRequest) -> str:
        """``request`` as text, with every secret shown as ``***`` (for ``evaluator probe``)."""
        url = request.url
        if self.secret_params:
            url = url.update_query({name: MASK for name, _ in self.secret_params})
        shown = str(url).replace(quote(MASK, safe=""), MASK)
        lines = [f"{request.method} {shown}"]
        secret_names = {name.lower() for name, _ in self.secret_headers}
        for name, value in {**self.constant_headers, **request.own_headers}.items():
            if name.lower() not in secret_names:
                lines.append(f"{name}: {MASK if is_secret_name(name) else value}")
        lines += [f"{name}: {MASK}" for name, _ in self.secret_headers]
        if request.content:
            lines += ["", request.content.decode("utf-8", errors="replace")]
        return "\n".join(lines)

    def identity(self) -> dict[str, Any]:
        """What identifies the request for the config hash: templates, secrets as ``***``."""
        parts = urlsplit(self.url)
        out: dict[str, Any] = {"url": f"{parts.scheme}://{parts.netloc}{parts.path}"}
        if self.is_default:
            return out
        out["method"] = self.method
        out["params"] = sorted([*self.params, *((name, MASK) for name, _ in self.secret_params)])
        out["headers"] = sorted(
            [
                *((name.lower(), value) for name, value in self.headers),
                *((name.lower(), MASK) for name, _ in self.secret_headers),
            ]
        )
        out["body"] = self.body
        return out

"""Secret redaction where data leaves the process, in every form a secret travels in.

A target's secrets (each ``${VAR}`` value and each credential header or parameter, whole)
are registered when its request template is built. Whatever then leaves the process goes
through the process-wide :func:`redactor`: the report writer (files, ``/reports/latest``),
the log renderer, and the command-line output. Producers do not redact, with one
exception: a producer that *cuts* text (an error message capped to one line, a stored answer
capped in length) redacts before cutting, so a cut never leaves half a secret that the
egress pass could no longer recognise.

A secret is recognised raw, URL-quoted (with and without ``/`` kept, ``quote_plus``,
JavaScript's ``encodeURIComponent``, twice, upper- or lower-case hex), JSON-escaped (with
and without ``\\/``, ASCII-escaped or not, Go's ``\\u0026``/``\\u003c``/``\\u003e``),
HTML/XML-escaped, as the hex of its bytes, upper- or lower-cased, and base64/base64url of
itself or of any text holding it (the three alignments of a value inside a longer base64
text: ``Basic base64(user:password)`` included). A second pattern, run only on text holding
``\\u``, ``&#`` or ``%``, finds a secret whose characters are each written any of those
ways, mixed (``\\u`` escaping of every character, numeric character references).

A registered credential also brings its parts: the token of ``Bearer <token>``, the
decoded ``user:password`` and the password of ``Basic <base64>``, and the ``user:password``
and password of a URL's userinfo (:func:`derived_secrets`). All forms are
matched by one compiled regular expression shaped as a prefix tree (see :func:`trie_pattern`),
which the standard library's engine scans about five times faster than a flat alternation
of the same words; an Aho-Corasick library would do the same work with one more dependency.

Example::

    register_secrets(["tok-1"])
    redactor().redact_text("bad token tok-1")          # 'bad token ***'
    redactor().redact_json({"answer": "tok-1"})        # {'answer': '***'}
"""

from __future__ import annotations

import base64
import binascii
import html
import io
import json
import re
from collections.abc import Iterable
from typing import Any, TextIO, cast
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from evaluator import process_state

__all__ = [
    "MASK",
    "MAX_ENCODED_SECRET_CHARS",
    "RedactingStream",
    "Redactor",
    "derived_secrets",
    "encoded_forms",
    "is_secret_name",
    "redactor",
    "register_secrets",
    "trie_pattern",
]

#: what a secret is shown as
MASK = "***"

#: base64 fragments shorter than this are not matched: they would hit ordinary text
_MIN_BASE64_FRAGMENT = 6
#: upper- and lower-cased forms only of secrets this long (short ones hit ordinary words)
_MIN_CASED = 8
#: parts of a credential (a Basic password, a userinfo password) shorter than this are not
#: registered on their own: they would mask ordinary words
_MIN_PART = 4
#: what text must hold for the character-wise pattern to run at all
_CHARWISE_MARKERS = ("\\u", "\\U", "&#", "%")
_MARKER = re.compile(r"\\[uU]|&#|%")
#: the longest way one character is written in the character-wise pattern (a surrogate
#: pair escaped and JSON-encoded again, ``\\\\ud83d\\\\ude00``, is 14)
_MAX_CHAR_FORM = 16
#: longest secret redacted in every encoded form; a longer one is redacted as given only
MAX_ENCODED_SECRET_CHARS = 4096
_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _lower_hex(text: str) -> str:
    return _PERCENT.sub(lambda m: m.group(0).lower(), text)


def _base64_fragments(secret: bytes) -> set[str]:
    """The base64 characters fixed by ``secret`` alone, at each of the three alignments.

    Base64 encodes 3 bytes as 4 characters, so inside a longer text a value starts at byte
    offset 0, 1 or 2 of a group; the characters whose 6 bits all come from the value are the
    same whatever surrounds it.
    """
    out: set[str] = set()
    n = len(secret)
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret).decode()
        first = -(-8 * offset // 6)  # ceil: the first character holding no padding bit
        last = (8 * (offset + n)) // 6  # exclusive: characters entirely inside the value
        fragment = encoded[first:last]
        if len(fragment) >= _MIN_BASE64_FRAGMENT:
            out.add(fragment)
    whole = base64.b64encode(secret).decode()
    out.update({whole, whole.rstrip("=")})
    return out


def encoded_forms(secret: str) -> set[str]:
    """Every form of ``secret`` that redaction recognises (empty for an empty secret)."""
    if not secret:
        return set()
    forms = {secret}
    percent = {
        quote(secret, safe=""),
        quote(secret),  # "/" kept
        quote_plus(secret),
        quote_plus(secret, safe="/"),
        quote(secret, safe="!~*'()"),  # JavaScript's encodeURIComponent
    }
    percent |= {quote(p, safe="") for p in list(percent)} | {quote(p) for p in list(percent)}
    forms |= percent | {_lower_hex(p) for p in percent}
    for ensure_ascii in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ensure_ascii)[1:-1]
        forms |= {escaped, escaped.replace("/", "\\/")}
        # Go's encoding/json escapes &, < and > by default
        go = escaped.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        forms |= {go, go.replace("/", "\\/")}
    for quote_chars in (True, False):
        escaped = html.escape(secret, quote=quote_chars)
        forms |= {escaped, escaped.replace("&#x27;", "&#39;"), escaped.replace("&#x27;", "&apos;")}
    raw_hex = secret.encode().hex()
    forms |= {raw_hex, raw_hex.upper()}
    if len(secret) >= _MIN_CASED:
        forms |= {secret.lower(), secret.upper()}
    raw = secret.encode()
    for fragment in _base64_fragments(raw):
        forms |= {fragment, fragment.replace("+", "-").replace("/", "_")}
    return forms | _escaped_again(forms)


def _escaped_again(forms: set[str]) -> set[str]:
    """Each form holding a backslash or a quote as JSON writes it once more: a target's answer
    holding a PHP or Go dump (``tok\\/en``, ``\\u0026``) is JSON-encoded again by the report
    writer and the log renderer, whose egress pass scans the encoded text, where every
    backslash of the dump is doubled."""
    again: set[str] = set()
    for form in forms:
        if "\\" in form or '"' in form:
            again |= {json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]}
    return again


def _hex_any_case(digits: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in digits)


def _char_alternatives(char: str) -> str:
    """A regex for one character written as itself, ``\\uXXXX`` (a surrogate pair beyond
    the BMP), ``&#NNN;``, ``&#xHH;`` (leading zeros allowed) or ``%HH`` (its UTF-8 bytes),
    hex digits in either case."""
    code = ord(char)
    utf16 = char.encode("utf-16-be")
    units = [utf16[i : i + 2].hex() for i in range(0, len(utf16), 2)]
    escapes = [
        # one backslash as a service writes it, two once JSON-encoded again at our egress
        "".join(r"\\{1,2}[uU]" + _hex_any_case(unit) for unit in units),
        f"&#0{{0,4}}{code};",
        f"&#[xX]0{{0,4}}{_hex_any_case(f'{code:x}')};",
        "".join("%" + _hex_any_case(f"{b:02x}") for b in char.encode()),
    ]
    return "(?:" + "|".join([re.escape(char), *escapes]) + ")"


def charwise_pattern(secret: str) -> str:
    """A regex for ``secret`` with each character in any of :func:`_char_alternatives`."""
    return "".join(_char_alternatives(c) for c in secret)


_SECRET_NAMES = frozenset(
    {"authorization", "proxyauthorization", "cookie", "key", "signature", "sig", "code"}
)
_SECRET_SUFFIXES = (
    "key",  # X-Functions-Key, X-Auth-Key, api_key, Ocp-Apim-Subscription-Key
    "signature",  # X-Amz-Signature
    "credential",  # X-Amz-Credential
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "accesskey",
    "subscriptionkey",
)


def is_secret_name(name: str) -> bool:
    """Whether a header or parameter called ``name`` carries a secret whatever its value.

    ``Authorization``, ``Cookie``, ``key``, ``sig``, ``code`` and names ending in key,
    token, secret, password, signature or credential (``X-API-Key``, ``X-Functions-Key``,
    ``access_token``, ``X-Amz-Signature``), separators ignored.
    """
    normalised = name.lower().replace("-", "").replace("_", "")
    return normalised in _SECRET_NAMES or normalised.endswith(_SECRET_SUFFIXES)


def derived_secrets(secret: str) -> set[str]:
    """The parts of a credential that travel on their own: the token of ``Bearer X``, the
    decoded ``user:password`` and the password of ``Basic <base64>``, the ``user:password``
    and the password of a URL's userinfo (decoded), and the value of each query parameter of
    a URL whose name says it is a secret (``?api_key=...&sig=...``, decoded)."""
    found = _scheme_secrets(secret)
    if "://" in secret and "?" in secret:
        found |= _query_secrets(secret)
    if "://" in secret and "@" in secret:
        found |= _userinfo_secrets(secret)
    return found


def _scheme_secrets(secret: str) -> set[str]:
    """The token of ``Bearer X`` (or ``Token X``); the decoded ``user:password`` and the
    password of ``Basic <base64>``."""
    scheme, _, rest = secret.strip().partition(" ")
    rest = rest.strip()
    if scheme.lower() in ("bearer", "token") and len(rest) >= _MIN_PART:
        return {rest}
    if scheme.lower() != "basic" or not rest:
        return set()
    try:
        decoded = base64.b64decode(rest + "=" * (-len(rest) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return set()
    _user, sep, password = decoded.partition(":")
    if not sep:
        return set()
    return {decoded, password} if len(password) >= _MIN_PART else {decoded}


def _userinfo_secrets(url: str) -> set[str]:
    """The decoded ``user:password`` and the password of a URL's userinfo."""
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username or "", parts.password or ""
    except ValueError:
        return set()
    if not password:
        return set()
    user, password = unquote(user), unquote(password)
    return (
        {f"{user}:{password}", password} if len(password) >= _MIN_PART else {f"{user}:{password}"}
    )


def _query_secrets(url: str) -> set[str]:
    """The values of the secret-named query parameters of ``url`` (a target URL given whole,
    ``--target-url 'http://host/rag?api_key=...'``)."""
    try:
        query = urlsplit(url.strip()).query
    except ValueError:
        return set()
    return {
        value
        for name, value in parse_qsl(query, keep_blank_values=False)
        if is_secret_name(name) and len(value) >= _MIN_PART
    }


def trie_pattern(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words``, longest first at each position.

    The words share their prefixes (``ab|ac`` becomes ``a(?:b|c)``), so at each position of
    the text the engine tests one character against one set instead of every word in turn.
    """
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def build(node: dict[str, Any]) -> str:
        # a run of single-child nodes is walked, not recursed: one secret of 60,000
        # characters was a RecursionError; recursion is only per branching node
        run = []
        while True:
            ends = "" in node
            children = [(char, child) for char, child in node.items() if char]
            if len(children) != 1 or ends:
                break
            run.append(re.escape(children[0][0]))
            node = children[0][1]
        prefix = "".join(run)
        if not children:
            return prefix
        group = "(?:" + "|".join(re.escape(char) + build(child) for char, child in children) + ")"
        # greedy: the longer word is tried first, the shorter one is the fallback
        return prefix + (group + "?" if ends else group)

    return build(root)


def _forms(secrets: Iterable[str]) -> set[str]:
    """Every encoded form of each secret; beyond the bound only the secret as given (its
    encoded forms and per-character pattern compiled for a minute: a 60,000-character header
    value at check)."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= encoded_forms(secret) if len(secret) <= MAX_ENCODED_SECRET_CHARS else {secret}
    return forms


def _charwise(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """The character-wise pattern of the secrets within the bound, longest first (a secret
    holding another is masked whole); None without one."""
    charwise = [
        charwise_pattern(s)
        for s in sorted(secrets, key=len, reverse=True)
        if len(s) <= MAX_ENCODED_SECRET_CHARS
    ]
    return re.compile("|".join(charwise)) if charwise else None


class Redactor:
    """Replaces known secrets, in all their :func:`encoded_forms`, with ``***``.

    Immutable: registering a secret builds a new one. Calling it is :meth:`redact_text`.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        given = {s for s in secrets if s}
        for secret in list(given):
            given |= derived_secrets(secret)
        self.secrets = frozenset(given)
        forms = _forms(self.secrets)
        # a form containing another is replaced whole: the pattern prefers the longest
        self._pattern = re.compile(trie_pattern(sorted(forms))) if forms else None
        self._charwise = _charwise(self.secrets)
        #: how far from an escape a character-wise match can reach, either way
        self._reach = _MAX_CHAR_FORM * max(
            (len(s) for s in self.secrets if len(s) <= MAX_ENCODED_SECRET_CHARS), default=0
        )
        #: the most characters one masked form spans: text cut at a point with this many
        #: characters after it holds every form that starts before the point, whole
        self.span = max(self._reach, max(map(len, forms), default=0))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        return self.redact_text(text)

    def redact_text(self, text: str) -> str:
        """``text`` with every secret form replaced by ``***``."""
        if self._pattern is None:
            return text
        text = self._pattern.sub(MASK, text)
        if self._charwise is not None and any(m in text for m in _CHARWISE_MARKERS):
            text = self._charwise_sub(text)
        return text

    def _charwise_sub(self, text: str) -> str:
        """The character-wise pattern, run only around the escapes: a match holds at least
        one, and reaches at most ``_reach`` characters from it, so the windows around the
        escapes (merged where they touch) hold every match."""
        assert self._charwise is not None
        windows: list[list[int]] = []
        for marker in _MARKER.finditer(text):
            low, high = max(0, marker.start() - self._reach), marker.start() + self._reach
            if windows and low <= windows[-1][1]:
                windows[-1][1] = high
            else:
                windows.append([low, high])
        out, at = [], 0
        for low, high in windows:
            out += [text[at:low], self._charwise.sub(MASK, text[low:high])]
            at = high
        out.append(text[at:])
        return "".join(out)

    def redact_json(self, data: Any) -> Any:
        """A JSON-ready value with every string (keys included) redacted.

        The common case, no secret anywhere, costs one ``json.dumps`` and one scan and
        returns ``data`` itself; the JSON-escaped forms make that scan exact.
        """
        if self._pattern is None:
            return data
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=True, default=str)
        except (TypeError, ValueError, RecursionError):
            return self._walk(data)
        if self._pattern.search(text) is None and not (
            self._charwise is not None
            and any(m in text for m in _CHARWISE_MARKERS)
            and self._charwise.search(text) is not None
        ):
            return data
        return self._walk(data)

    def _walk(self, data: Any) -> Any:
        if isinstance(data, str):
            return self.redact_text(data)
        if isinstance(data, dict):
            return {
                (self.redact_text(k) if isinstance(k, str) else k): self._walk(v)
                for k, v in data.items()
            }
        if isinstance(data, list | tuple):
            return [self._walk(v) for v in data]
        return data


# the process's redactor lives in evaluator.process_state; it starts with no secrets
process_state.redactor.change(lambda held: Redactor() if held is None else held)


def register_secrets(secrets: Iterable[str]) -> Redactor:
    """Add ``secrets`` to the process-wide redactor; returns the new one.

    Secrets are never removed: after a configuration reload an old token may still sit in
    a report or a message on its way out.
    """
    fresh = {s for s in secrets if s}

    def grown(held: Redactor) -> Redactor:
        return held if fresh <= held.secrets else Redactor(held.secrets | fresh)

    return cast(Redactor, process_state.redactor.change(grown))


def redactor() -> Redactor:
    """The process-wide redactor (every secret registered so far)."""
    return cast(Redactor, process_state.redactor.get())


def redact_registered(text: str) -> str:
    """``text`` with every secret registered in this process so far masked."""
    return redactor().redact_text(text)


class RedactingStream(io.TextIOBase):
    """A text stream that redacts each write before passing it on (CLI stdout/stderr).

    ``print`` writes its text in one call, so a secret is never split across writes.
    """

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(redactor().redact_text(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.inner.encoding

"""The one border for text and numbers from outside: what a target, a golden set, a report
read back or an expanded setting says is made safe to hold here, before anything keeps it.

- **Text** (:func:`text`, :func:`value`): a lone UTF-16 surrogate (``"\\ud83d"`` without its
  pair, what a JavaScript service sends when it cuts a string inside an emoji) is legal JSON
  but cannot be encoded as UTF-8, so a report, a history row or a log line holding it fails
  to be written. Each one becomes U+FFFD and is counted (:func:`surrogates_replaced`, the
  daemon's ``rag_eval_text_replaced_surrogates_total``).
- **Terminal and log lines** (:func:`printable`): control characters are shown escaped, so an
  id holding ``\\n`` or ``\\x1b[2J`` cannot start a forged line nor clear a screen;
  :func:`json_line` does the same for JSON printed to a terminal.
- **Numbers** (:func:`number`): finite and within a stated range, or a :class:`ValueError`
  naming the field (the caller makes it its own error kind).
- **JSON** (:func:`loads`): nesting is bounded on every path (a :class:`ValueError`, never a
  ``RecursionError`` reaching a caller), and every string of the value passes :func:`value`.

Pure functions of their arguments but for one process-wide counter (kept in
:mod:`evaluator.process_state`) and :func:`read_file`
(inputs named on the command line or in the config: regular files within a size cap).
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from urllib.parse import urlsplit

import msgspec

from evaluator import process_state

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER",
    "MAX_SETTINGS_BYTES",
    "count_replaced",
    "header_problem",
    "json_line",
    "loads",
    "number",
    "printable",
    "read_file",
    "surrogates_replaced",
    "text",
    "text_problem",
    "url_problem",
    "value",
]

#: deepest JSON nesting the standard library's path reads (msgspec's own, in C, is near the
#: interpreter's recursion limit): far beyond any real body, well within the stack
MAX_JSON_DEPTH = 256


def surrogates_replaced() -> int:
    """Lone surrogates replaced by U+FFFD in this process so far (the count is
    :data:`evaluator.process_state.surrogates_replaced`)."""
    return process_state.surrogates_replaced.get()


def _count(n: int) -> None:
    process_state.surrogates_replaced.change(lambda replaced: replaced + n)


def count_replaced(n: int) -> None:
    """Add ``n`` surrogates replaced elsewhere: by a child process that decoded a large body
    (:mod:`evaluator.targets.offload`), whose own counter the daemon's metric never sees."""
    _count(n)


def text(s: str) -> str:
    """``s`` with each lone surrogate replaced by U+FFFD (and counted); a surrogate pair left
    in a ``str`` becomes the character it encodes."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return s
    # through UTF-16: pairs join into their character, lone halves fail and are replaced
    fixed = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    _count(fixed.count("\ufffd") - s.count("\ufffd"))
    return fixed


def value(obj: object) -> object:
    """A decoded JSON value with every string (keys too) through :func:`text`.

    Containers are rebuilt only when one of their strings changed (the check alone is the
    common case). Recursive: callers pass values whose nesting :func:`loads` bounded.
    """
    if isinstance(obj, str):
        return text(obj)
    if not isinstance(obj, (list, dict)) or _clean(obj):
        return obj
    return _rebuild(obj)


def _clean(obj: object) -> bool:
    """Whether no string in ``obj`` holds a surrogate (iterative: a check costs no stack)."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _has_surrogate(item):
                return False
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return True


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _rebuild(obj: object) -> object:
    if isinstance(obj, str):
        return text(obj)
    if isinstance(obj, list):
        return [_rebuild(item) for item in obj]
    if isinstance(obj, dict):
        return {_rebuild(k): _rebuild(v) for k, v in obj.items()}
    return obj


_decode = msgspec.json.Decoder().decode


def loads(content: bytes | str) -> object:
    """``json.loads(content)`` with its strings through :func:`value` and its nesting bounded.

    msgspec decodes it in C when it can; what msgspec refuses and the standard library reads
    (``NaN``, a lone surrogate, a number beyond float range, a BOM) goes to
    :func:`json.loads`, so a body means the same whichever decoder read it.

    Raises:
        ValueError: not JSON, or nested deeper than :data:`MAX_JSON_DEPTH`.
    """
    try:
        return _decode(content)
    except (msgspec.MsgspecError, RecursionError):
        pass
    if _deeper_than(content, MAX_JSON_DEPTH):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        decoded = json.loads(content)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    return value(decoded)


#: a JSON string (skipped whole, escapes included) or one bracket. Possessive: the pattern
#: with a plain ``*`` over one character at a time kept a backtracking mark per character,
#: 357 MiB to skip one 3 MB string of a body msgspec refuses (NDJSON, a NaN); each run of
#: plain characters is one step now and nothing is kept (the closing quote can match neither
#: alternative, so no backtracking could find another match)
_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')


def _deeper_than(content: bytes | str, limit: int) -> bool:
    """Whether the brackets outside strings nest deeper than ``limit`` (one linear scan)."""
    raw = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(raw):
        char = raw[match.start()]  # its first byte: a string's text is never copied
        if char in _OPENING:
            depth += 1
            if depth > limit:
                return True
        elif char in _CLOSING:
            depth -= 1
    return False


_OPENING = frozenset(b"[{")
_CLOSING = frozenset(b"]}")


#: the largest number from outside that is taken, unless a caller states a smaller range:
#: far beyond any count, duration or cost, and a sum of millions of them stays finite (a
#: cost of 1e308 per case overflowed the gate's sum)
MAX_NUMBER = 1e15


def number(x: object, what: str, *, low: float = 0.0, high: float = MAX_NUMBER) -> float:
    """``x`` as a finite float within ``[low, high]``.

    Raises:
        ValueError: not a number (booleans are not), not finite, or out of range; the
            message names ``what``.
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{what} is {type(x).__name__}, expected a number")
    try:
        f = float(x)
    except OverflowError:
        raise ValueError(f"{what} is beyond float range") from None
    if not math.isfinite(f) or not low <= f <= high:
        shown = repr(x)
        shown = shown if len(shown) <= 40 else f"{shown[:40]}..."
        raise ValueError(f"{what} is {shown}, expected a number from {low:g} to {high:g}")
    return f


# C0 controls but tab, DEL, C1 controls, and the line and paragraph separators a terminal
# or a log viewer may break at
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def printable(s: str) -> str:
    """``s`` fit for one terminal or log line: control characters shown as escapes
    (``\\n``, ``\\x1b``), lone surrogates replaced."""
    return _CONTROL.sub(_escape, text(s))


def _escape(match: re.Match[str]) -> str:
    return json.dumps(match.group())[1:-1] if match.group() in "\n\r" else repr(match.group())[1:-1]


# what json.dumps(ensure_ascii=False) leaves raw and a terminal or log viewer acts on or
# breaks a line at: DEL, C1 controls (U+0085 is NEL), the line and paragraph separators
_JSON_RAW_CONTROL = re.compile("[\x7f-\x9f\u2028\u2029]")


def json_line(encoded: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``, which escapes only C0) with
    the other control characters and line separators escaped too, as ``\\u0085``: the
    same JSON value, and one line on a terminal whatever its strings hold."""
    return _JSON_RAW_CONTROL.sub(_json_escape, encoded)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


# RFC 9110 token characters: what a field name may hold
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# a field value: visible characters, spaces and tabs (obs-text allowed), no CR, LF or NUL
_FIELD_VALUE_BAD = re.compile("[\x00-\x08\x0a-\x1f\x7f]")


def text_problem(value: str) -> str | None:
    """Why a configured value (after ``${ENV}`` expansion) is not text that can be sent, or
    None: a lone surrogate, which is what Python makes of environment bytes that are not
    UTF-8 (it could be encoded in no request, so every case would fail). The reason never
    quotes the value: it may be a secret."""
    if value.isascii() or not _has_surrogate(value):
        return None
    at = next(i for i, c in enumerate(value) if "\ud800" <= c <= "\udfff")
    return f"the value is not UTF-8 text (undecodable bytes at offset {at})"


def header_problem(name: str, value: str) -> str | None:
    """Why a request header cannot be sent as configured (after ``${ENV}`` expansion), or
    None. The reason never quotes the value: it may be a secret."""
    if not _TOKEN.fullmatch(name):
        return "the header name is not an HTTP token (no spaces, separators or controls)"
    problem = text_problem(value)
    if problem is not None:
        return problem
    bad = _FIELD_VALUE_BAD.search(value)
    if bad is not None:
        return (
            f"the value holds the control character {bad.group()!r} at offset {bad.start()} "
            "(CR, LF and other controls cannot be sent in a header)"
        )
    return None


def url_problem(url: str) -> str | None:
    """What is wrong with a configured endpoint URL (a target's, the judge's, the OTLP
    collector's) that a request would only find out later, or None: the scheme, a port that
    is not a number, out of range or 0, a broken IPv6 host, no host, whitespace. A URL that
    passes can be requested (aiohttp's ``ValueError`` on it was an internal error)."""
    if not url.startswith(("http://", "https://")):
        return f"url {url!r} must start with http:// or https://"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number or out of range
    except ValueError as exc:
        return f"url {url!r} is not a valid URL: {exc}"
    if not parts.hostname:
        return f"url {url!r} has no host"
    if port == 0:
        return f"url {url!r}: port 0 cannot be connected to"
    if any(c.isspace() for c in url):
        return f"url {url!r} contains whitespace"
    return None


#: most bytes read of a golden set or report given on the command line or in the config
MAX_INPUT_BYTES = 1 << 30
#: most bytes read of a configuration or gates file
MAX_SETTINGS_BYTES = 16 << 20


def read_file(path: str | os.PathLike[str], max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """A file's bytes, only from a regular file of at most ``max_bytes`` (the border's one
    piece of I/O: a FIFO in a golden set's place blocked the reader forever, ``/dev/zero``
    read gigabytes).

    Opened without blocking (a FIFO's open waits for a writer), checked, then read.

    Raises:
        OSError: unreadable, not a regular file, or larger than ``max_bytes`` (``strerror``
            says which).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket)", path)
        if st.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", path)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while being read
        raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", path)
    return data

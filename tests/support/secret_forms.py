"""Every encoding a secret must not leave the process in, written out independently of
:mod:`evaluator.redaction` (so a test does not check the implementation against itself)."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus


def _every_char_escaped(secret: str) -> str:
    """JSON with every character as ``\\uXXXX`` (UTF-16 units), as some encoders write it."""
    units = secret.encode("utf-16-be")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def _html(secret: str) -> str:
    table = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}
    return "".join(table.get(c, c) for c in secret)


def _encode_uri_component(secret: str) -> str:
    """JavaScript's encodeURIComponent: A-Z a-z 0-9 - _ . ! ~ * ' ( ) kept, the rest %XX."""
    keep = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()")
    return "".join(c if c in keep else "".join(f"%{b:02X}" for b in c.encode()) for c in secret)


__all__ = ["leaked_forms", "secret_forms"]


def secret_forms(secret: str) -> dict[str, str]:
    """Name -> form: raw, URL-quoted (``/`` kept or not), quote_plus, JSON with ``\\/``,
    base64 and base64url, double URL-encoding, HTML, hex, case changes, and each form holding
    a backslash or a quote JSON-encoded once more (``-in-json``)."""
    raw = secret.encode()
    forms = {
        "raw": secret,
        "quote": quote(secret, safe=""),
        "quote-slash-kept": quote(secret),
        "quote_plus": quote_plus(secret),
        "json": json.dumps(secret)[1:-1],
        "json-escaped-slash": json.dumps(secret)[1:-1].replace("/", "\\/"),
        "base64": base64.b64encode(raw).decode(),
        "base64-unpadded": base64.b64encode(raw).decode().rstrip("="),
        "base64url": base64.urlsafe_b64encode(raw).decode(),
        "double-quote": quote(quote(secret, safe=""), safe=""),
        "double-quote-slash-kept": quote(quote(secret)),
        "json-every-char-escaped": _every_char_escaped(secret),
        "json-every-char-escaped-upper": _every_char_escaped(secret).upper().replace("\\U", "\\u"),
        "json-go": json.dumps(secret)[1:-1]
        .replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e"),
        "html": _html(secret),
        "xml-apos": _html(secret).replace("&#x27;", "&apos;"),
        "html-decimal-refs": "".join(f"&#{ord(c)};" for c in secret),
        "html-hex-refs": "".join(f"&#x{ord(c):X};" for c in secret),
        "encodeURIComponent": _encode_uri_component(secret),
        "hex": secret.encode().hex(),
        "hex-upper": secret.encode().hex().upper(),
        "upper": secret.upper(),
        "lower": secret.lower(),
    }
    # a form holding a backslash or a quote (a PHP or Go dump in an answer) as it reads in a
    # JSON report or log line: JSON-encoded once more, every backslash doubled
    again = {
        f"{name}-in-json": json.dumps(form)[1:-1]
        for name, form in forms.items()
        if "\\" in form or '"' in form
    }
    return {**forms, **again}


def leaked_forms(text: str, secrets: dict[str, str]) -> list[str]:
    """``where:secret-name:form-name`` for each form of each secret found in ``text``.

    ``secrets`` maps a name to a value; a value whose form is the value itself (no
    character to encode) is checked once.
    """
    found = []
    for name, secret in secrets.items():
        for form_name, form in secret_forms(secret).items():
            if form in text:
                found.append(f"{name}:{form_name}")
    return found

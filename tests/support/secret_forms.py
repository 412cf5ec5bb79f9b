"""Every encoding a secret must not leave the process in, written out independently of
:mod:`evaluator.redaction` (so a test does not check the implementation against itself)."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

__all__ = ["leaked_forms", "secret_forms"]


def secret_forms(secret: str) -> dict[str, str]:
    """Name -> form: raw, URL-quoted (``/`` kept or not), quote_plus, JSON with ``\\/``,
    base64 and base64url, and double URL-encoding."""
    raw = secret.encode()
    return {
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
    }


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

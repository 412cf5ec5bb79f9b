"""Who may use the daemon's HTTP surface: the Host allow-list and the pages' token.

Two rules, applied by one aiohttp middleware before any handler:

- **Host.** A request whose ``Host`` is not an allowed name is refused with 403, so a web
  page that rebinds its own DNS name to this address (DNS rebinding) cannot read the
  daemon through a browser. IP literals are always allowed: a rebinding page's origin is
  its own name, never an IP, and kubelet probes and Prometheus (scraping by pod IP) send
  the IP. So are ``localhost``, the bind address and this machine's host name (a pod's).
  A request without a Host header (HTTP/1.0: not a browser) is allowed.
- **Token.** With a token configured, the pages (``/``, ``/case``), ``/cases`` and
  ``/reports/latest`` (answers and evidence) need ``Authorization: Bearer <token>`` or
  Basic credentials whose password is the token (what a browser prompts for on 401).
  ``/metrics``, ``/healthz`` and ``/readyz`` never need it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

from evaluator import border
from evaluator.errors import ConfigError
from evaluator.redaction import register_secrets
from evaluator.targets.templates import resolve_env

__all__ = ["OPEN_PATHS", "Access", "host_pattern", "resolve_token"]

#: always served without the token: what Prometheus and the kubelet need, and the runbook
#: (shipped documentation, where an alert's link leads on-call)
OPEN_PATHS = frozenset({"/metrics", "/healthz", "/readyz", "/runbook"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_pattern(pattern: str) -> re.Pattern[str]:
    """An allowed-host pattern as a regex: a leading ``*.`` matches one or more whole labels,
    any other ``*`` part of one label (``rag-evaluator-*`` never matches ``x.attacker.com``).
    """
    pattern = pattern.lower()
    if pattern == "*":
        return re.compile(r".+")
    prefix = ""
    if pattern.startswith("*."):
        prefix, pattern = r"(?:[^.]+\.)+", pattern[2:]
    body = r"[^.]*".join(re.escape(part) for part in pattern.split("*"))
    return re.compile(prefix + body)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _host_of(header: str) -> str:
    """The host name of a Host header, lower case, without port or brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def resolve_token(token: str | None, where: str = "server.token") -> str | None:
    """The token with its ``${NAME}`` read from the environment, registered as a secret.

    Raises:
        ConfigError: a referenced variable is not set, naming it and ``where``.
    """
    if token is None:
        return None
    resolved = resolve_env(token, where)
    # what a client sends it in: a token no Authorization header can hold locks every page
    # (and undecodable bytes could not even be registered for redaction)
    problem = border.header_problem("Authorization", f"Bearer {resolved}")
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    register_secrets([resolved])
    return resolved


class Access:
    """The allow-list and token of one daemon; :meth:`middleware` enforces them."""

    def __init__(self, allowed_hosts: Iterable[str], token: str | None, bind_host: str) -> None:
        names = {"localhost", socket.gethostname().lower(), bind_host.lower().strip("[]")}
        self._patterns = [host_pattern(p) for p in (*allowed_hosts, *names) if p]
        self._token = token

    def host_allowed(self, header: str | None) -> bool:
        if header is None or not header.strip():
            return True
        host = _host_of(header)
        if _is_ip(host) or host.endswith(".localhost"):
            return True
        return any(p.fullmatch(host) for p in self._patterns)

    def _authorised(self, header: str | None) -> bool:
        if self._token is None:
            return True
        if not header:
            return False
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer":
            given = value
        elif scheme.lower() == "basic":
            try:
                given = base64.b64decode(value, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                return False
        else:
            return False
        return hmac.compare_digest(given.encode("utf-8"), self._token.encode("utf-8"))

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.host_allowed(request.headers.get("Host")):
            return web.json_response(
                {"error": "Host not allowed: add it to [server] allowed_hosts"}, status=403
            )
        if request.path not in OPEN_PATHS and not self._authorised(
            request.headers.get("Authorization")
        ):
            return web.json_response(
                {"error": "this page needs the [server] token"},
                status=401,
                headers={"WWW-Authenticate": 'Basic realm="evaluator", charset="UTF-8"'},
            )
        return await handler(request)

"""The HTTP transport under :class:`~evaluator.targets.http.HttpTarget`: aiohttp's
``ClientSession``, made here and only here, and the secrets added to a request as it leaves.

aiohttp is used directly: it was already the connection pool under httpx (through
httpx-aiohttp), and httpx's request building plus the bridge were half of a case's client CPU
(``tests/benchmarks/bench_runner.py``). The session is made with

- ``auto_decompress=False``: aiohttp's decompression has no output limit, so the body is
  decoded by :mod:`evaluator.targets.decode` within ``max_response_bytes``;
- ``trust_env=False``: proxies and ``.netrc`` from the environment would send requests (and
  their credentials) somewhere the configuration does not say;
- a pool of ``max_connections`` sockets, kept alive between runs.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Sequence

import aiohttp
from pydantic import SecretStr
from yarl import URL

from evaluator.targets.request import OutgoingRequest

__all__ = ["SecretInjector", "make_session"]


def make_session(
    *,
    max_connections: int,
    connect_timeout: float,
    read_timeout: float | None,
    verify: ssl.SSLContext | bool = True,
    trace_configs: Sequence[aiohttp.TraceConfig] = (),
) -> aiohttp.ClientSession:
    """The production session; call inside the event loop that will use it.

    ``verify`` True checks certificates against the default CA store (which honours
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), an :class:`ssl.SSLContext` against its own CAs,
    False not at all. The whole-call deadline is the caller's
    (:mod:`evaluator.targets.deadline`): aiohttp's ``total`` would not cover the time spent
    decoding. ``read_timeout`` None: no silence bound of aiohttp's own (the caller's
    deadline is the bound).
    """
    tls: ssl.SSLContext | bool = verify
    if verify is True:
        tls = _default_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, ssl=tls)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_read=read_timeout),
        auto_decompress=False,
        trust_env=False,
        raise_for_status=False,
        trace_configs=list(trace_configs) or None,
    )


@functools.cache
def _default_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """The default CA store's context, once per process and store (the arguments, the
    environment that names it, are the cache key): loading the store takes about 130 ms of
    the event loop, which a context per target (each session is made on its first query)
    paid once per target, so a daemon of 16 jobs stalled ``/healthz`` for 2 s. A context is
    shared safely by every connection."""
    return ssl.create_default_context()


class SecretInjector:
    """Adds secret headers and query parameters to a request just as it leaves.

    The :class:`~evaluator.targets.request.OutgoingRequest` that is built, shown by
    ``probe`` and kept for messages never holds a secret; only the URL and headers handed to
    aiohttp for the wire do.
    """

    def __init__(
        self,
        *,
        headers: Sequence[tuple[str, SecretStr]] = (),
        params: Sequence[tuple[str, SecretStr]] = (),
    ) -> None:
        self._headers = tuple(headers)
        self._params = tuple(params)

    def wire(self, request: OutgoingRequest) -> tuple[URL, dict[str, str]]:
        """The URL and headers to send for ``request``, secrets included."""
        if not (self._headers or self._params):
            return request.url, request.headers
        url = request.url
        if self._params:
            url = url.update_query({n: v.get_secret_value() for n, v in self._params})
        headers = dict(request.headers)
        for name, value in self._headers:
            headers[name] = value.get_secret_value()
        return url, headers

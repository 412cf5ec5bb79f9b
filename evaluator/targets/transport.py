"""The HTTP transport under :class:`~evaluator.targets.http.HttpTarget`: aiohttp's
``ClientSession``, made here and only here, and the secrets added to a request as it leaves.

aiohttp is used directly: it was already the connection pool under httpx (through
httpx-aiohttp), and httpx's request building plus the bridge were half of a case's client CPU
(``tests/benchmarks/bench_runner.py``). The session is made with

- ``auto_decompress=False``: aiohttp's decompression has no output limit, so the body is
  decoded by :mod:`evaluator.targets.decode` within ``max_response_bytes``;
- ``trust_env=False``: proxies and ``.netrc`` from the environment would send requests (and
  their credentials) somewhere the configuration does not say;
- a pool of ``max_connections`` sockets, kept alive between runs;
- the target's constant headers (:attr:`~evaluator.targets.request.RequestTemplate.
  constant_headers`: ``User-Agent``, ``Accept-Encoding``, the configured plain headers,
  ``Content-Type``) as its default headers, merged by aiohttp with each request's own (its
  trace header): a copy of them handed over with every request, converted and merged by
  aiohttp in Python, cost 7,100 interpreter instructions a case (callgrind, 810k to 803k in
  the zero-latency benchmark). Secret headers are not among them: they stay added
  per request, as it leaves (:class:`SecretInjector`). The session only ever sends to its
  target, never following a redirect.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence

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
    headers: Mapping[str, str],
    verify: ssl.SSLContext | bool = True,
) -> aiohttp.ClientSession:
    """The production session; call inside the event loop that will use it.

    ``verify`` True checks certificates against the default CA store (which honours
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), an :class:`ssl.SSLContext` against its own CAs,
    False not at all. True is aiohttp's own verified context, made once per process: a
    context of our own per session loaded the CA store (~150 certificates) again for every
    run, 27% of the daemon's CPU in a run of 300 cases at 50 ms.

    The whole-call deadline is the caller's
    (:mod:`evaluator.targets.deadline`): aiohttp's ``total`` would not cover the time spent
    decoding. ``read_timeout`` None: no silence bound of aiohttp's own (the caller's
    deadline is the bound). ``headers`` go with every request (before each request's own).
    """
    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, ssl=verify)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_read=read_timeout),
        auto_decompress=False,
        trust_env=False,
        raise_for_status=False,
        headers=headers,
    )


class SecretInjector:
    """Adds secret headers and query parameters to a request just as it leaves.

    The :class:`~evaluator.targets.request.OutgoingRequest` that is built, shown by
    ``probe`` and kept for messages never holds a secret; only the URL and headers handed to
    aiohttp for the wire do. The secret headers come after the request's own, as they
    always did (the constant ones are the session's, sent before both).
    """

    def __init__(
        self,
        *,
        headers: Sequence[tuple[str, SecretStr]] = (),
        params: Sequence[tuple[str, SecretStr]] = (),
    ) -> None:
        self._headers = tuple(headers)
        self._params = tuple(params)
        # the last URL given and its form with the secret parameters: a template without
        # per-question parameters gives the same URL object every time, so its wire form is
        # built once (a new URL per request was 4 us of yarl's query encoding and caches)
        self._last: tuple[URL, URL] | None = None

    def wire(self, request: OutgoingRequest) -> tuple[URL, dict[str, str]]:
        """The URL and the headers beyond the session's to send for ``request``, secrets
        included."""
        if not (self._headers or self._params):
            return request.url, request.own_headers
        url = request.url
        if self._params:
            last = self._last
            if last is None or last[0] is not url:
                wired = url.update_query({n: v.get_secret_value() for n, v in self._params})
                last = self._last = (url, wired)
            url = last[1]
        headers = dict(request.own_headers)
        for name, value in self._headers:
            headers[name] = value.get_secret_value()
        return url, headers

"""The HTTP transport under :class:`~evaluator.targets.http.HttpTarget`: the one place that
chooses it, so switching (httpx's own, httpx2, another) is a change to this module.

httpx keeps the API (and respx / ``httpx.MockTransport`` in tests); requests go out through
aiohttp's connection pool via ``httpx_aiohttp.AiohttpTransport``. Measured at concurrency
50 on a zero-latency loopback endpoint (``tests/benchmarks/bench_transport.py``), this
transport is about six times plain httpx and about 0.4 of bare aiohttp (figures in the
README's "Performance"): httpx's own pool would add queueing time to the latency we
measure (encode/httpx#3215).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence

import httpx
from httpx_aiohttp import AiohttpTransport
from pydantic import SecretStr

__all__ = ["SecretInjectingTransport", "make_transport"]


def make_transport(
    *, max_connections: int, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncBaseTransport:
    """The production transport: aiohttp's pool with at most ``max_connections`` sockets."""
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    # trust_env here only lets SSL_CERT_FILE / SSL_CERT_DIR pick the CA bundle (httpx's
    # create_ssl_context); aiohttp's session is made without it, so no proxy from the env
    return AiohttpTransport(verify=verify, limits=limits, trust_env=True)


class SecretInjectingTransport(httpx.AsyncBaseTransport):
    """Adds secret headers and query parameters to each request just as it leaves.

    The request that httpx builds, logs (``HTTP Request: GET ...``) and attaches to the
    response never holds a secret; only the copy handed to the inner transport does.
    """

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        *,
        headers: Sequence[tuple[str, SecretStr]] = (),
        params: Sequence[tuple[str, SecretStr]] = (),
    ) -> None:
        self._inner = inner
        self._headers = tuple(headers)
        self._params = tuple(params)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not (self._headers or self._params):
            return await self._inner.handle_async_request(request)
        url = request.url
        if self._params:
            url = url.copy_merge_params({n: v.get_secret_value() for n, v in self._params})
        headers = request.headers.copy()
        for name, value in self._headers:
            headers[name] = value.get_secret_value()
        outgoing = httpx.Request(
            request.method,
            url,
            headers=headers,
            content=request.content,
            extensions=request.extensions,
        )
        return await self._inner.handle_async_request(outgoing)

    async def aclose(self) -> None:
        await self._inner.aclose()

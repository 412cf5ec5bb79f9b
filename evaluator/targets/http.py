"""HTTP target: a RAG endpoint reached over HTTP, in the default contract or a mapped shape.

One call is: wait for admission (concurrency, rate), then under a whole-call deadline send
the request, stream the body up to the size cap, decode JSON and map it. Every failure
becomes a :class:`~evaluator.errors.TargetError` of the shared taxonomy:

========================== ============================================== =========
kind                       when                                           retried
========================== ============================================== =========
``connect``                refused, DNS, connect timeout, reset before    yes
                           the response; reset while reading the body     no
``timeout``                no response within ``read`` silence, or not    no
                           complete within the whole-call deadline
``http_status``            non-2xx (429/502/503/504 retried, honouring    429, 5xx
                           ``Retry-After``)                               gateway
``response_too_large``     body beyond ``max_response_bytes``             no
``bad_response``           invalid JSON, mapped field missing or mistyped no
========================== ============================================== =========

Messages never hold a secret: the request's secrets are redacted from every message,
including body snippets of error responses that echo the request back.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from evaluator.errors import (
    BadResponseError,
    ResponseTooLargeError,
    TargetConnectError,
    TargetError,
    TargetHTTPStatusError,
    TargetTimeout,
)
from evaluator.models import Case, TargetResponse
from evaluator.targets.admission import Admission
from evaluator.targets.base import default_target_name, parse_default_response
from evaluator.targets.mapping import ResponseMapper
from evaluator.targets.request import Redactor, RequestTemplate
from evaluator.targets.transport import SecretInjectingTransport, make_transport

__all__ = [
    "MAX_RESPONSE_BYTES",
    "HttpOptions",
    "HttpTarget",
    "ProbeResult",
    "default_target_name",
    "parse_retry_after",
]

#: default response size cap
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: how much of an error body is read, and how much of it a message shows
_SNIPPET_READ = 8 * 1024
_SNIPPET_SHOWN = 200


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delay-seconds or an HTTP-date.

    Returns None when absent or unreadable; a date in the past gives 0.
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0)


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """Timeouts and limits of one HTTP target.

    ``deadline`` bounds a whole attempt (connect, send, every byte of the body): httpx
    has only per-operation timeouts (encode/httpx#1450). ``read_timeout`` bounds silence
    while waiting for or reading the response (default: the deadline).
    """

    deadline: float = 30.0
    connect_timeout: float = 5.0
    read_timeout: float | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES
    max_connections: int = 100
    requests_per_second: float | None = None
    verify: ssl.SSLContext | bool = True


@dataclass
class ProbeResult:
    """What ``evaluator probe`` shows: the request (masked), the raw response, the mapping."""

    request: str = ""
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 0.0
    response: TargetResponse | None = None
    error: TargetError | None = None


class HttpTarget:
    """A RAG endpoint reached over HTTP.

    Example::

        target = HttpTarget("http://127.0.0.1:8900/rag", options=HttpOptions(deadline=30))
        response = await target.query(case, k=5)
        await target.aclose()

    Args:
        url: the endpoint.
        name: the ``target`` label; default ``host:port``.
        request: how a question becomes a request; default the default contract.
        mapper: where the fields sit in the response; default the default contract.
        options: timeouts and limits.
        transport: the httpx transport (tests pass ``httpx.MockTransport``); default
            :func:`~evaluator.targets.transport.make_transport`.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        request: RequestTemplate | None = None,
        mapper: ResponseMapper | None = None,
        options: HttpOptions | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self.name = name or default_target_name(url)
        self.template = request or RequestTemplate.from_config(url)
        self.mapper = mapper
        self.options = options or HttpOptions()
        self._parse: Callable[[object], TargetResponse] = mapper or parse_default_response
        self._redact = Redactor(self.template.secrets())
        self._admission = Admission(self.options.max_connections, self.options.requests_per_second)
        inner = transport or make_transport(
            max_connections=self.options.max_connections, verify=self.options.verify
        )
        read = self.options.read_timeout or self.options.deadline
        self._client = httpx.AsyncClient(
            transport=SecretInjectingTransport(
                inner, headers=self.template.secret_headers, params=self.template.secret_params
            ),
            timeout=httpx.Timeout(
                connect=self.options.connect_timeout, read=read, write=read, pool=None
            ),
            follow_redirects=False,
            # proxies and .netrc from the environment would bypass the transport above
            trust_env=False,
        )

    @property
    def retrieval_only(self) -> bool:
        """Whether the mapping has no answer expression."""
        return self.mapper is not None and self.mapper.retrieval_only

    def identity(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"kind": "http", **self.template.identity()}
        if self.mapper is not None:
            out["response"] = self.mapper.identity()
        return out

    async def query(self, case: Case, k: int) -> TargetResponse:
        return await self._call(case, k, None)

    async def probe(self, case: Case, k: int) -> ProbeResult:
        """One call, keeping the request, raw response and mapped fields for display."""
        result = ProbeResult()
        try:
            result.response = await self._call(case, k, result)
        except TargetError as exc:
            result.error = exc
        result.body = self._redact(result.body.decode("utf-8", errors="replace")).encode()
        return result

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call(self, case: Case, k: int, trace: ProbeResult | None) -> TargetResponse:
        request = self.template.build(self._client, case.question, k)
        if trace is not None:
            trace.request = self.template.describe(request)
        async with self._admission.slot():
            started = time.perf_counter()
            deadline = asyncio.timeout(self.options.deadline)
            try:
                async with deadline:
                    content = await self._exchange(request, trace)
            except TimeoutError:
                if not deadline.expired():
                    raise
                raise TargetTimeout(
                    f"{self.name} did not complete its response within "
                    f"{self.options.deadline:g}s (timeout_seconds)"
                ) from None
            finally:
                if trace is not None:
                    trace.seconds = time.perf_counter() - started
        try:
            body = json.loads(content)
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            raise BadResponseError(
                f"response is not valid JSON ({exc}); it starts with {self._snippet(content)!r}"
            ) from None
        try:
            return self._parse(body)
        except BadResponseError as exc:
            redacted = self._redact(exc.message)
            if redacted == exc.message:
                raise
            raise BadResponseError(redacted) from None

    async def _exchange(self, request: httpx.Request, trace: ProbeResult | None) -> bytes:
        with self._failures(reading_body=False):
            response = await self._client.send(request, stream=True)
        try:
            if trace is not None:
                trace.status, trace.headers = response.status_code, dict(response.headers)
            if not 200 <= response.status_code < 300:
                raise await self._status_error(response, trace)
            content = await self._read_capped(response)
            if trace is not None:
                trace.body = content
            return content
        finally:
            # closes the connection when the body was not read to the end; a failure to
            # close must not replace the outcome of the call
            with contextlib.suppress(Exception):
                await response.aclose()

    async def _read_capped(self, response: httpx.Response) -> bytes:
        cap = self.options.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise ResponseTooLargeError(
                f"response of {int(declared)} bytes is larger than max_response_bytes ({cap})"
            )
        received = bytearray()
        with self._failures(reading_body=True):
            async for chunk in response.aiter_bytes():
                received += chunk
                if len(received) > cap:
                    raise ResponseTooLargeError(
                        f"response is larger than max_response_bytes ({cap}); stopped reading"
                    )
        return bytes(received)

    async def _status_error(
        self, response: httpx.Response, trace: ProbeResult | None
    ) -> TargetHTTPStatusError:
        status = response.status_code
        received = bytearray()
        # the status is the error: a broken or endless error body only loses the snippet
        with contextlib.suppress(Exception):
            async for chunk in response.aiter_bytes():
                received += chunk
                if len(received) >= _SNIPPET_READ:
                    break
        if trace is not None:
            trace.body = bytes(received)
        message = f"HTTP {status} from {self.name}"
        location = response.headers.get("location")
        if 300 <= status < 400 and location:
            message += f" (redirect to {self._redact(location)}: set the target's url to it)"
        snippet = self._snippet(bytes(received))
        if snippet:
            message += f": {snippet}"
        return TargetHTTPStatusError(
            message,
            status=status,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )

    def _snippet(self, content: bytes) -> str:
        """The start of a body for a message: whitespace collapsed, secrets redacted first."""
        text = " ".join(content[:_SNIPPET_READ].decode("utf-8", errors="replace").split())
        text = self._redact(text)
        return text if len(text) <= _SNIPPET_SHOWN else text[:_SNIPPET_SHOWN] + "..."

    @contextmanager
    def _failures(self, *, reading_body: bool) -> Iterator[None]:
        """Turn whatever the HTTP stack raises into the error taxonomy."""
        try:
            yield
        except TargetError:
            raise
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, reading_body=reading_body) from None
        except Exception as exc:
            # the target's boundary: an exception the transport did not map (a garbled
            # response, say) must fail this case, not the run
            if isinstance(exc, TimeoutError):
                raise TargetTimeout(f"{self.name}: {self._describe(exc)}") from None
            raise self._connection_lost(exc, reading_body=reading_body) from None

    def _describe(self, exc: BaseException) -> str:
        # httpx_aiohttp maps aiohttp's errors onto httpx's and keeps the original as the
        # cause, which says what happened (a refused connection arrives as ConnectTimeout)
        cause = exc.__cause__ or exc
        text = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        return self._redact(text)

    def _transport_error(self, exc: httpx.HTTPError, *, reading_body: bool) -> TargetError:
        if isinstance(exc.__cause__, ssl.SSLError) or isinstance(exc.__context__, ssl.SSLError):
            error = TargetConnectError(
                f"TLS with {self.name} failed: {self._describe(exc)}; for a private CA set "
                f"tls.ca_bundle"
            )
            error.transient = False  # a certificate does not fix itself between attempts
            return error
        if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError):
            return TargetConnectError(f"cannot connect to {self.name}: {self._describe(exc)}")
        if isinstance(exc, httpx.TimeoutException):
            read = self.options.read_timeout or self.options.deadline
            return TargetTimeout(
                f"{self.name} sent nothing for {read:g}s (read timeout; {self._describe(exc)})"
            )
        return self._connection_lost(exc, reading_body=reading_body)

    def _connection_lost(self, exc: BaseException, *, reading_body: bool) -> TargetError:
        if not reading_body:
            return TargetConnectError(
                f"connection to {self.name} failed before a response: {self._describe(exc)}"
            )
        error = TargetConnectError(
            f"connection to {self.name} lost mid-response: {self._describe(exc)}"
        )
        error.transient = False  # the request was served: a retry would hide the fault
        return error

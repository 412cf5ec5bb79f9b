"""HTTP target: a RAG endpoint reached over HTTP, in the default contract or a mapped shape.

One call is: wait for admission (concurrency, rate), then under a whole-call deadline send
the request over aiohttp, read the raw body up to the size cap, decode its
``Content-Encoding`` chain within the same cap (:mod:`evaluator.targets.decode`), then
decode JSON and map it (off the event loop for large bodies). The latency the runner reports
ends when the last byte arrived, not after decoding and mapping. Every failure becomes a
:class:`~evaluator.errors.TargetError` of the shared taxonomy:

========================== ============================================== =========
kind                       when                                           retried
========================== ============================================== =========
``connect``                refused, DNS, connect timeout, reset before    yes
                           the response; reset while reading the body     no
``timeout``                no response within ``read`` silence, or not    no
                           complete within the whole-call deadline
``http_status``            non-2xx (429/502/503/504 retried, honouring    429, 5xx
                           ``Retry-After``)                               gateway
``response_too_large``     body beyond ``max_response_bytes``, before or  no
                           after decoding
``bad_response``           invalid JSON, mapped field missing or          no
                           mistyped, garbled HTTP (bad status line,
                           invalid chunk, header overflow), an encoding
                           that cannot be decoded or stacks too deep
``out_of_memory``          memory ran out while reading or decoding       no
========================== ============================================== =========

Messages never hold a secret: the request's secrets are redacted from every message,
including body snippets of error responses that echo the request back.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from random import getrandbits
from typing import Any

import aiohttp
import msgspec
from aiohttp.http_exceptions import ContentLengthError, HttpProcessingError

from evaluator import border, process_state
from evaluator.errors import (
    BadResponseError,
    ResponseMemoryError,
    StreamInterruptedError,
    TargetConnectError,
    TargetError,
    TargetHTTPStatusError,
    TargetTimeout,
)
from evaluator.models import Case, Delivery, Dialogue, TargetResponse
from evaluator.targets import figures, offload
from evaluator.targets.admission import Admission, record_received, record_trace
from evaluator.targets.base import (
    HistorySource,
    decode_default_response,
    default_target_name,
    parse_default_response,
)
from evaluator.targets.body import check_declared_length, read_body
from evaluator.targets.conversation import ConversationIds
from evaluator.targets.deadline import Deadlines
from evaluator.targets.decode import BodyDecoder, parse_content_encoding
from evaluator.targets.mapping import NOWHERE, ResponseMapper, Usage
from evaluator.targets.request import OutgoingRequest, Redactor, RequestTemplate
from evaluator.targets.server_timing import parse_server_timing
from evaluator.targets.streaming import StreamAssembler, StreamSpec
from evaluator.targets.transport import SecretInjector, make_session

__all__ = [
    "MAX_RESPONSE_BYTES",
    "OFFLOAD_BYTES",
    "STREAM_STEP",
    "HttpOptions",
    "HttpTarget",
    "ProbeResult",
    "decode_json",
    "default_target_name",
    "parse_retry_after",
]

#: default response size cap
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: bodies at least this large are decoded in a child process (:mod:`evaluator.targets.offload`),
#: so a heavy but legal response (350,000 ids, 1.3 M U+FDFA) holds neither the event loop that
#: serves /healthz nor the GIL it needs
OFFLOAD_BYTES = 256 * 1024
#: the usage of a response whose tokens are not mapped
_NO_USAGE = Usage(None, None)
#: how much of an error body is read, and how much of it a message shows
_SNIPPET_READ = 8 * 1024
_SNIPPET_SHOWN = 200
#: bytes of a stream framed and parsed on the event loop between two yields to it: 16 kB of
#: the tiniest events (``data: {}``, 10 bytes) are 1,600 events, a few milliseconds of work
STREAM_STEP = 16 * 1024


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

    ``deadline`` bounds a whole attempt (connect, send, every byte of the body, decoding):
    aiohttp's timeouts are per operation, so a slowly dripping body is bounded by a deadline
    around the attempt (:mod:`evaluator.targets.deadline`: ``asyncio.timeout``'s semantics,
    one timer for all of the target's calls). ``read_timeout`` bounds silence while waiting for
    or reading the response (default: the deadline).
    """

    deadline: float = 30.0
    connect_timeout: float = 5.0
    read_timeout: float | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES
    max_connections: int = 100
    requests_per_second: float | None = None
    verify: ssl.SSLContext | bool = True
    #: hits read per response, whatever the contract (the target's max_ranked_ids: the one
    #: way it reaches the parsing; None reads all)
    max_ranked_ids: int | None = None


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


@dataclass(slots=True)
class _Arrival:
    """What one exchange brought: the body (or the assembled stream) and when it came.

    Not frozen: it lives for one call, and a frozen init costs a setattr call per field.
    """

    content: bytes
    stream: StreamAssembler | None
    headers_at: float
    received_at: float
    server_timing: dict[str, float]


class _Observer:
    """The recording hook of a call: does nothing, so the run's hot path has no branches.

    ``probe`` passes a :class:`_Recorder`, which keeps what it shows.
    """

    __slots__ = ()

    def request(self, template: RequestTemplate, request: OutgoingRequest) -> None:
        pass

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        pass

    def body(self, content: bytes) -> None:
        pass

    def elapsed(self, seconds: float) -> None:
        pass


class _Recorder(_Observer):
    __slots__ = ("result",)

    def __init__(self, result: ProbeResult) -> None:
        self.result = result

    def request(self, template: RequestTemplate, request: OutgoingRequest) -> None:
        self.result.request = template.describe(request)

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        self.result.status, self.result.headers = status, dict(headers)

    def body(self, content: bytes) -> None:
        self.result.body = content

    def elapsed(self, seconds: float) -> None:
        self.result.seconds = seconds


_SILENT = _Observer()


class HttpTarget:
    """A RAG endpoint reached over HTTP.

    Example::

        target = HttpTarget("http://127.0.0.1:8900/rag", options=HttpOptions(deadline=30))
        response = await target.query(case, k=5)
        await target.aclose()

    The aiohttp session is made on first use, in the event loop of the call (a target is
    built before the loop starts); tests talk to a real loopback server.

    Args:
        url: the endpoint.
        name: the ``target`` label; default ``host:port``.
        request: how a question becomes a request; default the default contract.
        mapper: where the fields sit in the response; default the default contract.
        options: timeouts and limits.
        history: where a conversation's history takes its answers from.
        conversation: a stateful service's conversation id: where read, where sent back.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        request: RequestTemplate | None = None,
        mapper: ResponseMapper | None = None,
        options: HttpOptions | None = None,
        streaming: StreamSpec | None = None,
        server_timing: bool = True,
        trace_header: str | None = "traceparent",
        prices: tuple[float, float] | None = None,
        kind: str = "http",
        history: HistorySource = "service",
        conversation: ConversationIds | None = None,
    ) -> None:
        self.url = url
        self.name = name or default_target_name(url)
        self.template = request or RequestTemplate.from_config(url)
        self.options = options or HttpOptions()
        # the mapping reads as far as the options say, like the default contract
        self.mapper = None if mapper is None else mapper.limited(self.options.max_ranked_ids)
        self.streaming = streaming
        self.kind = kind
        #: where a conversation's history takes its answers from
        self.history: HistorySource = history
        #: a service that keeps the conversation: its id read and sent back (None: not one)
        self.conversation = conversation
        self._server_timing = server_timing
        self._trace_header = trace_header
        #: price per input token and per output token
        self._prices = None if prices is None else (prices[0] / 1000, prices[1] / 1000)
        #: the default contract's parser (a target without a mapping)
        self._parse: Callable[[object], TargetResponse] = functools.partial(
            parse_default_response, max_ranked_ids=self.options.max_ranked_ids
        )
        #: the mapping the fields are read with: the target's, without its answer when
        #: streamed (None: the default contract)
        self._fields_mapper = self.mapper
        if streaming is not None and self.mapper is not None and "answer" in self.mapper:
            # a streamed answer is the assembled content, whatever the mapping says
            self._fields_mapper = self.mapper.without("answer")
        self._redact = Redactor(self.template.secrets())
        self._admission = Admission(self.options.max_connections, self.options.requests_per_second)
        self._deadlines = Deadlines(self.options.deadline)
        self._secrets = SecretInjector(
            headers=self.template.secret_headers, params=self.template.secret_params
        )
        self._session: aiohttp.ClientSession | None = None

    @property
    def retrieval_only(self) -> bool:
        """Whether the mapping has no answer expression (a streamed answer always has one)."""
        if self.streaming is not None:
            return False
        return self.mapper is not None and self.mapper.retrieval_only

    @property
    def ranks(self) -> bool:
        """Whether the target's ids are mapped (the default contract has its own)."""
        return self.mapper is None or self.mapper.ranks

    @property
    def cites(self) -> bool:
        """Whether the target's citations are mapped (the default contract has its own)."""
        return self.mapper is None or self.mapper.cites

    def identity(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, **self.template.identity()}
        if self.history != "service":  # the default leaves every earlier hash as it was
            out["history"] = self.history
        if self.conversation is not None:
            out["conversation"] = self.conversation.identity()
        if self.mapper is not None:
            out["response"] = self.mapper.identity()
        if self.streaming is not None:
            out["streaming"] = self.streaming.identity()
        return out

    def query(
        self, case: Case, k: int, dialogue: Dialogue | None = None
    ) -> Coroutine[Any, Any, TargetResponse]:
        # the call's own coroutine, not one awaiting it: a frame less on every case
        return self._call(case, k, _SILENT, dialogue)

    async def probe(self, case: Case, k: int) -> ProbeResult:
        """One call, keeping the request, raw response and mapped fields for display."""
        result = ProbeResult()
        try:
            result.response = await self._call(case, k, _Recorder(result))
        except TargetError as exc:
            result.error = exc
        result.body = self._redact(result.body.decode("utf-8", errors="replace")).encode()
        return result

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def _open(self) -> aiohttp.ClientSession:
        session = self._session
        if session is None or session.closed:
            options = self.options
            read = options.read_timeout
            session = self._session = make_session(
                max_connections=options.max_connections,
                connect_timeout=options.connect_timeout,
                # a silence as long as the whole-call deadline cannot end before it: only a
                # shorter read timeout needs aiohttp's timer, re-armed on every chunk read
                read_timeout=read if read is not None and read < options.deadline else None,
                headers=self.template.constant_headers,
                verify=options.verify,
            )
        return session

    async def _call(
        self, case: Case, k: int, observer: _Observer, dialogue: Dialogue | None = None
    ) -> TargetResponse:
        request, trace_id = self._request_for(case, k, dialogue)
        observer.request(self.template, request)
        admission = self._admission
        await admission.enter()
        try:
            started = time.perf_counter()
            deadline = self._deadlines.new()
            try:
                with deadline:
                    arrival = await self._exchange(request, observer)
            except TimeoutError:
                if not deadline.expired():
                    raise
                raise TargetTimeout(
                    f"{self.name} did not complete its response within "
                    f"{self.options.deadline:g}s (timeout_seconds)"
                ) from None
            finally:
                observer.elapsed(time.perf_counter() - started)
        finally:
            admission.leave()
        # the latency ends with the last byte: parsing and mapping are evaluator's time
        record_received(arrival.received_at)
        content = arrival.content
        if arrival.stream is not None:
            response, usage = self._map_stream(arrival.stream)
            body: object = arrival.stream.fields_event
        else:
            common = self._common(content, dialogue)
            if common is not None:
                return self._delivered(common, _NO_USAGE, arrival, started, trace_id)
            body = await self._decoded(content)
            response, usage = self._fields(body)
        if dialogue is not None and self.conversation is not None:
            response = self._with_service_id(response, body, dialogue)
        return self._delivered(response, usage, arrival, started, trace_id)

    def _common(self, content: bytes, dialogue: Dialogue | None) -> TargetResponse | None:
        """The body read by the default contract's typed decoder
        (:func:`~evaluator.targets.base.decode_default_response`, one C pass), or None when
        the general path reads it: a mapped target's body, a large one (decoded off the
        loop), a stateful conversation's turn (its id is read from the body), a body
        outside the contract's common shape."""
        if (
            self._fields_mapper is not None
            or len(content) >= OFFLOAD_BYTES
            or (dialogue is not None and self.conversation is not None)
        ):
            return None
        return decode_default_response(content, max_ranked_ids=self.options.max_ranked_ids)

    async def _decoded(self, content: bytes) -> object:
        """The body's JSON through the border.

        Raises:
            BadResponseError: not JSON, or nested absurdly deep.
        """
        try:
            # a large body's JSON is decoded in a child process (a thread of this one held
            # the GIL, and so the event loop, for each decode); the mapping, which walks
            # the decoded value without copying its strings, stays here
            return (
                await offload.decode_off_process(content)
                if len(content) >= OFFLOAD_BYTES
                else decode_json(content)
            )
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            raise BadResponseError(
                f"response is not valid JSON ({exc}); it starts with {self._snippet(content)!r}"
            ) from None

    def _request_for(
        self, case: Case, k: int, dialogue: Dialogue | None
    ) -> tuple[OutgoingRequest, str | None]:
        """The request for one case (a turn's: with the id a stateful service gave its
        conversation sent back), and the trace id sent with it (None: no trace header)."""
        request = self.template.build(case.question, k, dialogue)
        conversation = self.conversation
        if conversation is not None and dialogue is not None and dialogue.service_id:
            request = conversation.sent_back(request, dialogue.service_id)
        if self._trace_header is None:
            return request, None
        # a fresh trace per case attempt, sampled: the service's trace of this golden case
        trace_id, span_id = _trace_ids()
        request.own_headers[self._trace_header] = f"00-{trace_id}-{span_id}-01"
        record_trace(trace_id, span_id)
        return request, trace_id

    def _with_service_id(
        self, response: TargetResponse, body: object, dialogue: Dialogue
    ) -> TargetResponse:
        """``response`` with the conversation id a stateful service answered with (kept from
        the turn before when it answered none)."""
        assert self.conversation is not None  # the caller's check
        service_id = self.conversation.read(body, dialogue.service_id)
        return msgspec.structs.replace(response, conversation_id=service_id)

    def _delivered(
        self,
        response: TargetResponse,
        usage: Usage,
        arrival: _Arrival,
        started: float,
        trace_id: str | None,
    ) -> TargetResponse:
        """The mapped response, its timings merged with the header's, and what the delivery
        measured."""
        timings = response.timings
        if arrival.server_timing:
            # the body's own stage timings win over the header's for the same name
            timings = {**arrival.server_timing, **timings}
        input_tokens, output_tokens, tokens_out_of_range = usage
        stream = arrival.stream
        ttft, output_tokens, counted = _streamed(stream, started, output_tokens)
        delivery = Delivery(
            ttfb_seconds=arrival.headers_at - started,
            ttft_seconds=ttft,
            last_byte_seconds=arrival.received_at - started,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tokens_counted=counted,
            streamed=stream is not None,
            trace_id=trace_id,
            cost=self._cost(input_tokens, output_tokens),
        )
        out_of_range = response.out_of_range
        if tokens_out_of_range:
            out_of_range = figures.in_order((*out_of_range, *tokens_out_of_range))
        return msgspec.structs.replace(
            response, timings=timings, delivery=delivery, out_of_range=out_of_range
        )

    def _cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The tokens at the target's prices (None without prices or without any count)."""
        if self._prices is None or (input_tokens is None and output_tokens is None):
            return None
        return (input_tokens or 0) * self._prices[0] + (output_tokens or 0) * self._prices[1]

    def _map_stream(self, stream: StreamAssembler) -> tuple[TargetResponse, Usage]:
        event = stream.fields_event
        if event is None:
            raise BadResponseError(
                f"no stream event matched streaming.fields_from after {stream.events} event(s)"
            )
        response, usage = self._fields(event, stream.found)
        answer = stream.answer
        citations = response.citations
        if self.mapper is not None and self.mapper.markers is not None:
            citations += self.mapper.cited_in(answer)
        return msgspec.structs.replace(response, answer=answer, citations=citations), usage

    def _fields(
        self, body: object, found: Mapping[str, object] = NOWHERE
    ) -> tuple[TargetResponse, Usage]:
        """The mapped fields of ``body``; a field in ``found`` (a stream's field -> the last
        event where it matched) is read from its event."""
        mapper = self._fields_mapper
        usage: Usage
        try:
            if mapper is None:
                response, usage = self._parse(body), _NO_USAGE
            else:
                response, usage = mapper(body, found), mapper.tokens(body, found)
        except BadResponseError as exc:
            redacted = self._redact(exc.message)
            if redacted == exc.message:
                raise
            raise BadResponseError(redacted) from None
        return response, usage

    async def _exchange(self, request: OutgoingRequest, observer: _Observer) -> _Arrival:
        url, headers = self._secrets.wire(request)
        session = self._open()
        # try/except rather than a context manager per phase: this runs for every case
        try:
            response = await session.request(
                request.method,
                url,
                headers=headers,
                data=request.content,
                allow_redirects=False,
            )
        except TargetError:
            raise
        except Exception as exc:
            raise self._failure(exc, reading_body=False) from None
        headers_at = time.perf_counter()
        try:
            observer.response(response.status, response.headers)
            if not 200 <= response.status < 300:
                raise await self._status_error(response, observer)
            timing = (
                parse_server_timing(response.headers.getall("Server-Timing", ()))
                if self._server_timing
                else {}
            )
            stream = (
                None
                if self.streaming is None
                else StreamAssembler(
                    self.streaming,
                    None if self._fields_mapper is None else self._fields_mapper.matching,
                )
            )
            try:
                content, received_at = await self._read_capped(response, stream)
            except TargetError:
                raise
            except Exception as exc:
                raise self._failure(exc, reading_body=True, streaming=stream is not None) from None
            observer.body(content)
            return _Arrival(content, stream, headers_at, received_at, timing)
        finally:
            # returns the connection to the pool after a complete body, closes it otherwise
            # (try/except: a suppress() context manager per case costs more than the release)
            try:  # noqa: SIM105 (a failed release must not hide the outcome)
                response.release()
            except Exception:
                pass

    def _read_capped(
        self, response: aiohttp.ClientResponse, stream: StreamAssembler | None
    ) -> Awaitable[tuple[bytes, float]]:
        """The decoded body within the cap, and when its last byte arrived; a stream's
        events go to ``stream`` as they arrive.

        Not a coroutine itself: it checks the declared length and returns the coroutine that
        reads (a plain body's, the common case, without a frame awaiting it).
        """
        cap = self.options.max_response_bytes
        headers = response.headers
        check_declared_length(headers, cap)
        codings = parse_content_encoding(headers.get("Content-Encoding"))
        if stream is None:
            return read_body(response.content, codings, cap)
        return _read_stream(response.content, codings, cap, stream)

    async def _status_error(
        self, response: aiohttp.ClientResponse, observer: _Observer
    ) -> TargetHTTPStatusError:
        status = response.status
        received = bytearray()
        # the status is the error: a broken or endless error body only loses the snippet
        with contextlib.suppress(Exception):
            decoder = BodyDecoder(
                parse_content_encoding(response.headers.get("Content-Encoding")), _SNIPPET_READ
            )
            while len(received) < _SNIPPET_READ and (chunk := await response.content.readany()):
                for piece in decoder.feed(chunk):
                    received += piece
        observer.body(bytes(received))
        message = f"HTTP {status} from {self.name}"
        location = response.headers.get("Location")
        if 300 <= status < 400 and location:
            message += f" (redirect to {self._redact(location)}: set the target's url to it)"
        snippet = self._snippet(bytes(received))
        if snippet:
            message += f": {snippet}"
        return TargetHTTPStatusError(
            message,
            status=status,
            retry_after=parse_retry_after(response.headers.get("Retry-After")),
        )

    def _snippet(self, content: bytes) -> str:
        """The start of a body for a message: whitespace collapsed, secrets redacted first."""
        text = " ".join(content[:_SNIPPET_READ].decode("utf-8", errors="replace").split())
        text = self._redact(text)
        return text if len(text) <= _SNIPPET_SHOWN else text[:_SNIPPET_SHOWN] + "..."

    def _failure(
        self, exc: Exception, *, reading_body: bool, streaming: bool = False
    ) -> TargetError:
        """What the HTTP stack raised (anything but a TargetError), in the error taxonomy."""
        if isinstance(exc, MemoryError):
            return ResponseMemoryError(
                f"ran out of memory while reading the response of {self.name}"
            )
        if isinstance(exc, ssl.SSLError | aiohttp.ClientSSLError):
            error = TargetConnectError(
                f"TLS with {self.name} failed: {self._describe(exc)}; for a private CA set "
                f"tls.ca_bundle"
            )
            error.transient = False  # a certificate does not fix itself between attempts
            return error
        if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError):
            return TargetConnectError(f"cannot connect to {self.name}: {self._describe(exc)}")
        if isinstance(exc, aiohttp.ServerTimeoutError):
            read = self.options.read_timeout or self.options.deadline
            return TargetTimeout(
                f"{self.name} sent nothing for {read:g}s (read timeout; {self._describe(exc)})"
            )
        if isinstance(exc, aiohttp.ClientResponseError):
            # raised by aiohttp's parser only (we never ask it to raise for a status)
            return self._garbled(exc)
        if isinstance(exc, aiohttp.ClientPayloadError):
            if _body_cut_short(exc):
                return self._connection_lost(exc, reading_body=True, streaming=streaming)
            return self._garbled(exc)
        if isinstance(exc, TimeoutError):
            return TargetTimeout(f"{self.name}: {self._describe(exc)}")
        # the target's boundary: an exception the stack did not map must fail this case,
        # not the run
        return self._connection_lost(exc, reading_body=reading_body, streaming=streaming)

    def _describe(self, exc: BaseException) -> str:
        # the parser's own exception says what was wrong; aiohttp's wrapper repeats the
        # request (headers included), so it is never shown
        cause = exc.__cause__ if isinstance(exc.__cause__, HttpProcessingError) else exc
        if isinstance(cause, HttpProcessingError):
            text = cause.message.split("\n", 1)[0].strip() or type(cause).__name__
        elif isinstance(cause, aiohttp.ClientResponseError):
            text = f"{type(cause).__name__}: {cause.message}"
        else:
            text = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        text = " ".join(text.split())
        return self._redact(text if len(text) <= _SNIPPET_SHOWN else text[:_SNIPPET_SHOWN] + "...")

    def _garbled(self, exc: BaseException) -> BadResponseError:
        # a server that does not speak HTTP will not start speaking it on a retry
        return BadResponseError(f"garbled HTTP response from {self.name}: {self._describe(exc)}")

    def _connection_lost(
        self, exc: BaseException, *, reading_body: bool, streaming: bool = False
    ) -> TargetError:
        if streaming:
            return StreamInterruptedError(
                f"stream from {self.name} cut mid-way: {self._describe(exc)}"
            )
        if not reading_body:
            return TargetConnectError(
                f"connection to {self.name} failed before a response: {self._describe(exc)}"
            )
        error = TargetConnectError(
            f"connection to {self.name} lost mid-response: {self._describe(exc)}"
        )
        error.transient = False  # the request was served: a retry would hide the fault
        return error


def _body_cut_short(exc: aiohttp.ClientPayloadError) -> bool:
    """Whether a payload error is the connection ending early, not a malformed body."""
    cause = exc.__cause__
    if cause is None or isinstance(cause, OSError | ContentLengthError):
        return True
    # the chunked parser's end-of-stream complaint ("Not enough data to satisfy transfer
    # length header"), as opposed to a malformed chunk
    return isinstance(cause, HttpProcessingError) and cause.message.startswith("Not enough data")


async def _feed(stream: StreamAssembler, chunk: bytes, at: float) -> None:
    """``stream.feed``, in steps of :data:`STREAM_STEP` bytes with the event loop let run
    between two steps; the steps of a read larger than one step, and a step that ends a
    large line, in a worker thread.

    A read can bring a quarter of a megabyte at once and the next read return at once:
    190,000 tiny events framed and parsed in one go held /healthz for 1.25 s. Steps with a
    yield between them bound one stream's hold on the loop, not the loop's: each of N
    streams reading such bursts ran a step in every turn of the loop, and four at once held
    /healthz for 460 ms. A burst's steps are therefore framed in the one thread that frames
    streams, where every stream's bursts queue and the loop waits for none of them (it takes
    the GIL back within the switch interval). A line ends in one split, decode and JSON parse
    of all of it (a 3 MB event held the event loop for tens of milliseconds), so the step
    that ends a line of :data:`OFFLOAD_BYTES` or more is framed off the loop too, as a large
    plain body is mapped off it. The small reads of a stream that trickles in, the usual
    case, are framed on the loop: a thread's hand-over would cost more than their framing.
    """
    burst = len(chunk) > STREAM_STEP
    start = 0
    while start < len(chunk):
        room = STREAM_STEP - stream.unpaced
        step = chunk[start : start + room] if start or len(chunk) > room else chunk
        start += len(step)
        if burst or (stream.pending_bytes + len(step) >= OFFLOAD_BYTES and _ends_a_line(step)):
            # one thread frames them, one at a time (see evaluator.process_state.worker)
            framer = process_state.worker("streams")
            await asyncio.get_running_loop().run_in_executor(framer, stream.feed, step, at)
        else:
            stream.feed(step, at)
        if stream.finished:
            return
        stream.unpaced += len(step)
        if stream.unpaced >= STREAM_STEP:
            stream.unpaced = 0
            await asyncio.sleep(0)


def _ends_a_line(data: bytes) -> bool:
    return b"\n" in data or b"\r" in data


def _streamed(
    stream: StreamAssembler | None, started: float, output_tokens: int | None
) -> tuple[float | None, int | None, bool]:
    """A streamed answer's time to first token, and its output tokens: those reported, else
    the count of its content events (``True``: counted, not reported)."""
    if stream is None:
        return None, output_tokens, False
    ttft = None if stream.first_token_at is None else stream.first_token_at - started
    if output_tokens is None and stream.content_events:
        return ttft, stream.content_events, True
    return ttft, output_tokens, False


async def _read_stream(
    content: aiohttp.StreamReader, codings: tuple[str, ...], cap: int, stream: StreamAssembler
) -> tuple[bytes, float]:
    """A streamed body: read as any body, each piece fed to ``stream``, the read complete at
    the stream's end marker; a body that ends first closes the stream (a cut unless it ended
    after its finish marker)."""

    async def fed(piece: bytes, at: float) -> bool:
        await _feed(stream, piece, at)
        return stream.finished

    body, received_at = await read_body(content, codings, cap, fed)
    stream.close(received_at)  # nothing to do when it finished at its end marker
    return body, received_at


def decode_json(content: bytes) -> object:
    """A body's JSON through the border (:func:`evaluator.border.loads`): decoded by msgspec
    in C when it can, its strings safe to hold, its nesting bounded.

    Raises:
        ValueError: not JSON, or nested too deep.
    """
    return border.loads(content)


def _trace_ids() -> tuple[str, str]:
    """A fresh W3C trace id and parent span id (hex, never all zeros, which means none).

    From :func:`random.getrandbits`: ids must be unique, not secret, and two ``os.urandom``
    calls per case were a measurable share of its client CPU.
    """
    # bytes.hex of the fixed-width big-endian bytes: the same zero-padded lowercase hex as
    # format(n, "032x"), at a fifth of the cost
    return (getrandbits(128) or 1).to_bytes(16).hex(), (getrandbits(64) or 1).to_bytes(8).hex()

"""The judge's HTTP client: OpenAI-compatible chat completions over the product's one HTTP
client (aiohttp), with its own connection pool, concurrency limit, timeout and retry policy;
the retries are the product's one retry loop (:mod:`evaluator.retry`) and the body is read by
its one capped reader (:mod:`evaluator.targets.body`).

Judge traffic never shares the target's session, limits or metrics. Each request asks for
the verdict's JSON schema as ``response_format``; a server that refuses it (400 or 422 with
it in the request: llama.cpp's older servers, some proxies) is asked again without it, and
so for the rest of the client's life, its verdict then read from the text.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from evaluator._version import __version__
from evaluator.errors import ConfigError, ResponseTooLargeError
from evaluator.judge.checks import check as judged_check
from evaluator.judge.errors import (
    JudgeConnectError,
    JudgeError,
    JudgeHTTPStatusError,
    JudgeMalformedError,
    JudgeTimeout,
    JudgeTooLargeError,
)
from evaluator.judge.parse import Completion, extract_object, parse_completion
from evaluator.judge.prompts import messages
from evaluator.judge.settings import JudgeConfig
from evaluator.redaction import redactor
from evaluator.retry import call_with_retries
from evaluator.run_options import RetryPolicy
from evaluator.targets.body import check_declared_length, read_body
from evaluator.targets.http import parse_retry_after
from evaluator.targets.request import RequestTemplate

__all__ = ["Answered", "JudgeClient", "judge_headers", "retry_policy"]

#: the first back-off's scale and the longest wait between two judge calls (seconds)
_BACKOFF_INITIAL = 0.2
_BACKOFF_MAX = 2.0


def judge_headers(config: JudgeConfig) -> dict[str, str]:
    """The judge's request headers with ``${NAME}`` resolved; the secrets are registered
    with the process-wide redactor (the very path a target's headers take).

    Raises:
        ConfigError: a referenced variable is unset; the message names ``judge.headers``.
    """
    try:
        template = RequestTemplate.from_config(config.url, headers=config.headers, body={})
    except ConfigError as exc:
        raise ConfigError(f"judge.{exc}".replace("judge.request.", "judge.")) from None
    headers = dict(template.headers)
    headers.update({k: v.get_secret_value() for k, v in template.secret_headers})
    return headers


@dataclass(frozen=True, slots=True)
class Answered:
    """One judge call that returned a verdict object (not yet read against its check)."""

    verdict: dict[str, Any]
    completion: Completion
    latency_seconds: float
    attempts: int


class JudgeClient:
    """Asks one OpenAI-compatible endpoint for verdicts; use as an async context manager."""

    def __init__(self, config: JudgeConfig, *, headers: Mapping[str, str] | None = None) -> None:
        self.config = config
        self._headers = {
            "User-Agent": f"evaluator/{__version__} (judge)",
            "Content-Type": "application/json",
            "Accept-Encoding": "identity",
            **(judge_headers(config) if headers is None else headers),
        }
        self._limit = asyncio.Semaphore(config.concurrency)
        self._retry = retry_policy(config)
        #: a judge that answered 429 with Retry-After is sent nothing until it has passed
        self._pause = _Pause()
        self._session: aiohttp.ClientSession | None = None
        #: False once the server refused ``response_format``
        self.schema_accepted = True

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.config.concurrency),
                timeout=aiohttp.ClientTimeout(total=self.config.timeout_seconds),
                auto_decompress=False,
            )
        return self._session

    def _body(self, check: str, data: dict[str, Any], schema: bool, sample: int | None) -> bytes:
        body: dict[str, Any] = {
            "model": self.config.model,
            "temperature": self.config.temperature,
            "messages": messages(check, data),
        }
        if sample is not None:
            # a repeated verdict says which sample it is (OpenAI's `seed`): a model that
            # samples deterministically per seed gives each sample its own draw, and the same
            # draw when the run is repeated
            body["seed"] = sample
        if schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": f"{check}_verdict", "schema": judged_check(check).schema},
            }
        # the judge is outside: what leaves for it is redacted here, as a report is where it
        # is written (the subjects are already; the rest is the rubric and our settings)
        return redactor().redact_text(json.dumps(body, ensure_ascii=False)).encode()

    async def ask(self, check: str, data: dict[str, Any], sample: int | None = None) -> Answered:
        """The judge's verdict object for ``check`` on ``data``, retried when transient
        (:func:`evaluator.retry.call_with_retries` with the judge's :func:`retry_policy`).
        ``sample``: which of a repeated verdict's samples this is (sent as ``seed``).

        Raises:
            JudgeError: the call failed (its kind says how), or no JSON object came back.
        """
        async with self._limit:
            (verdict, completion, seconds), attempts = await call_with_retries(
                lambda: self._attempt(check, data, sample), self._retry
            )
        return Answered(verdict, completion, seconds, attempts)

    async def _attempt(
        self, check: str, data: dict[str, Any], sample: int | None
    ) -> tuple[dict[str, Any], Completion, float]:
        """One call: the verdict object, the completion, and the call's seconds. It waits
        out a pause the judge asked for (a 429's ``Retry-After``) before it is sent."""
        await self._pause.wait_out()
        started = time.perf_counter()
        try:
            completion = await self._call(check, data, sample)
        except JudgeHTTPStatusError as exc:
            if exc.status == 429 and exc.retry_after is not None:
                self._pause.extend(min(exc.retry_after, self.config.max_retry_after_seconds))
            raise
        try:
            verdict = extract_object(completion.content)
        except JudgeError as exc:
            # answered, and paid for: the usage counts though no verdict could be read
            exc.completion, exc.latency_seconds = completion, time.perf_counter() - started
            raise
        return verdict, completion, time.perf_counter() - started

    async def _call(self, check: str, data: dict[str, Any], sample: int | None) -> Completion:
        try:
            reply = await self._post(self._body(check, data, self.schema_accepted, sample))
            if reply.refuses_schema and self.schema_accepted:
                self.schema_accepted = False  # and for every later call of this client
                reply = await self._post(self._body(check, data, False, sample))
        except TimeoutError:
            raise JudgeTimeout(
                f"judge did not answer within {self.config.timeout_seconds} s"
            ) from None
        except aiohttp.ClientError as exc:
            raise JudgeConnectError(
                redactor().redact_text(f"judge unreachable: {type(exc).__name__}: {exc}")[:300]
            ) from None
        if not 200 <= reply.status < 300:
            snippet = redactor().redact_text(reply.content[:200].decode("utf-8", "replace"))
            if reply.location is not None:
                to = redactor().redact_text(reply.location[:200])
                snippet = f"redirect to {to}, not followed: set the judge's url to it"
            raise JudgeHTTPStatusError(
                f"judge answered HTTP {reply.status}: {' '.join(snippet.split())}",
                status=reply.status,
                retry_after=reply.retry_after,
            )
        return parse_completion(reply.content)

    async def _post(self, body: bytes) -> _Reply:
        cap = self.config.max_response_bytes
        # never redirected: a redirect would carry the judge's headers and the answers to
        # whichever origin it names (as a target's client, it says where to and stops)
        post = self._open().post(
            self.config.url, data=body, headers=self._headers, allow_redirects=False
        )
        async with post as r:
            if r.headers.get("Content-Encoding", "identity").lower() not in ("identity", ""):
                # asked for identity: a judge that compresses anyway is not one to trust
                raise JudgeMalformedError("judge response is compressed though not asked to be")
            try:
                check_declared_length(r.headers, cap)
                content, _ = await read_body(r.content, (), cap)
            except ResponseTooLargeError:
                raise JudgeTooLargeError(f"judge response is larger than {cap} bytes") from None
            location = r.headers.get("Location") if 300 <= r.status < 400 else None
            return _Reply(
                r.status, content, parse_retry_after(r.headers.get("Retry-After")), location
            )


class _Pause:
    """A time before which no call goes to the judge: a 429's ``Retry-After`` holds back
    every call of the client, not only the one it answered (the others would be refused
    too, each costing an attempt of its retries)."""

    def __init__(self) -> None:
        self._until = 0.0

    def extend(self, seconds: float) -> None:
        """No call before ``seconds`` from now (a later pause already set stands)."""
        self._until = max(self._until, time.monotonic() + max(seconds, 0.0))

    async def wait_out(self) -> None:
        """Return once the pause has passed (at once when there is none)."""
        left = self._until - time.monotonic()
        if left > 0:
            await asyncio.sleep(left)
            await self.wait_out()  # extended while it slept


@dataclass(frozen=True, slots=True)
class _Reply:
    """What one POST to the judge brought back."""

    status: int
    content: bytes
    #: the seconds its ``Retry-After`` asked to wait, or None
    retry_after: float | None
    #: where a redirect pointed (never followed), or None
    location: str | None = None

    @property
    def refuses_schema(self) -> bool:
        """A 400 or 422 naming ``response_format``: the server does not take the schema
        (llama.cpp's older servers, some proxies)."""
        return self.status in (400, 422) and b"response_format" in self.content


def retry_policy(config: JudgeConfig) -> RetryPolicy:
    """How the judge's transient failures are retried: ``retries`` extra attempts, waits
    from 0.2 s growing to at most 2 s (a judge call is retried a few times at most), a
    ``Retry-After`` honoured as asked, up to ``max_retry_after_seconds``."""
    return RetryPolicy(
        retries=config.retries,
        backoff_initial=_BACKOFF_INITIAL,
        backoff_max=_BACKOFF_MAX,
        retry_after_max=config.max_retry_after_seconds,
    )

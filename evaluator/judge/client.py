"""The judge's HTTP client: OpenAI-compatible chat completions over the product's one HTTP
client (aiohttp), with its own connection pool, concurrency limit, timeout and retries.

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
from evaluator.errors import ConfigError
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
from evaluator.targets.request import RequestTemplate

__all__ = ["Answered", "JudgeClient", "judge_headers"]

#: back-off before retry n (seconds): short, a judge call is retried at most a few times
_BACKOFF = (0.2, 0.5, 1.0, 2.0)


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

    def _body(self, check: str, data: dict[str, Any], schema: bool) -> bytes:
        body: dict[str, Any] = {
            "model": self.config.model,
            "temperature": 0,
            "messages": messages(check, data),
        }
        if schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": f"{check}_verdict", "schema": judged_check(check).schema},
            }
        return json.dumps(body, ensure_ascii=False).encode()

    async def ask(self, check: str, data: dict[str, Any]) -> Answered:
        """The judge's verdict object for ``check`` on ``data``, retried when transient.

        Raises:
            JudgeError: the call failed (its kind says how), or no JSON object came back.
        """
        async with self._limit:
            attempt = 0
            while True:
                attempt += 1
                started = time.perf_counter()
                try:
                    completion = await self._call(check, data)
                    verdict = extract_object(completion.content)
                except JudgeError as exc:
                    if not exc.transient or attempt > self.config.retries:
                        raise
                    await asyncio.sleep(_BACKOFF[min(attempt - 1, len(_BACKOFF) - 1)])
                    continue
                return Answered(verdict, completion, time.perf_counter() - started, attempt)

    async def _call(self, check: str, data: dict[str, Any]) -> Completion:
        try:
            status, content = await self._post(self._body(check, data, self.schema_accepted))
            if status in (400, 422) and self.schema_accepted and b"response_format" in content:
                self.schema_accepted = False  # and for every later call of this client
                status, content = await self._post(self._body(check, data, False))
        except TimeoutError:
            raise JudgeTimeout(
                f"judge did not answer within {self.config.timeout_seconds} s"
            ) from None
        except aiohttp.ClientError as exc:
            raise JudgeConnectError(
                redactor().redact_text(f"judge unreachable: {type(exc).__name__}: {exc}")[:300]
            ) from None
        if not 200 <= status < 300:
            snippet = redactor().redact_text(content[:200].decode("utf-8", "replace"))
            raise JudgeHTTPStatusError(
                f"judge answered HTTP {status}: {' '.join(snippet.split())}", status=status
            )
        return parse_completion(content)

    async def _post(self, body: bytes) -> tuple[int, bytes]:
        cap = self.config.max_response_bytes
        async with self._open().post(self.config.url, data=body, headers=self._headers) as r:
            declared = r.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > cap:
                raise JudgeTooLargeError(f"judge response is larger than {cap} bytes")
            if r.headers.get("Content-Encoding", "identity").lower() not in ("identity", ""):
                # asked for identity: a compressed body is not decoded past the cap here
                raise JudgeMalformedError("judge response is compressed though not asked to be")
            chunks: list[bytes] = []
            size = 0
            while chunk := await r.content.readany():
                size += len(chunk)
                if size > cap:
                    raise JudgeTooLargeError(f"judge response is larger than {cap} bytes")
                chunks.append(chunk)
            return r.status, b"".join(chunks)

"""HTTP target speaking the default contract: ``POST url {"question", "top_k"}``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from evaluator.errors import (
    BadResponseError,
    TargetConnectError,
    TargetHTTPStatusError,
    TargetTimeout,
)
from evaluator.models import Case, TargetResponse
from evaluator.targets.base import parse_default_response

__all__ = ["HttpTarget", "default_target_name"]


def default_target_name(url: str) -> str:
    """The default ``target`` label: the URL's ``host:port``."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


class HttpTarget:
    """A RAG endpoint reached over HTTP.

    Example::

        target = HttpTarget("http://127.0.0.1:8900/rag", timeout=30.0)
        response = await target.query(case, k=5)
        await target.aclose()
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        timeout: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.name = name or default_target_name(url)
        self._timeout = timeout
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout))
        self._owns_client = client is None

    def identity(self) -> Mapping[str, Any]:
        parts = urlsplit(self.url)
        # query strings may carry keys: only scheme, host and path identify the target
        return {"kind": "http", "url": f"{parts.scheme}://{parts.netloc}{parts.path}"}

    async def query(self, case: Case, k: int) -> TargetResponse:
        try:
            response = await self._client.post(
                self.url, json={"question": case.question, "top_k": k}
            )
        except httpx.TimeoutException as exc:
            raise TargetTimeout(
                f"no answer within {self._timeout:g}s ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise TargetConnectError(
                f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            ) from exc
        if response.status_code >= 400 or response.status_code < 200:
            raise TargetHTTPStatusError(
                f"HTTP {response.status_code} from {self.name}", status=response.status_code
            )
        try:
            body = json.loads(response.content)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadResponseError(f"response is not valid JSON: {exc}") from exc
        return parse_default_response(body)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

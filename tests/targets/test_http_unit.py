"""HttpTarget edge cases through the transport seam (respx), Retry-After, and real TLS."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from evaluator.config import TargetConfig
from evaluator.errors import TargetError
from evaluator.factory import build_target
from evaluator.models import TargetResponse
from evaluator.targets.http import HttpTarget, parse_retry_after
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import GOOD_BODY, case

URL = "http://rag.test/v1/search"


def _query(config: TargetConfig, router: respx.Router, **env: str) -> TargetResponse:
    async def go() -> TargetResponse:
        target = build_target(
            config, environ=env, transport=httpx.MockTransport(router.async_handler)
        )
        try:
            return await target.query(case("How long?"), 4)
        finally:
            await target.aclose()

    return asyncio.run(go())


def _error(config: TargetConfig, router: respx.Router) -> TargetError:
    with pytest.raises(TargetError) as info:
        _query(config, router)
    return info.value


class TestRequests:
    """What goes on the wire for each request configuration (respx through the seam)."""

    def test_get_with_params_and_secret(self) -> None:
        """GET puts the question and K in the query; secrets join it only on the wire."""
        router = respx.Router(assert_all_called=True)
        route = router.get(URL).mock(return_value=httpx.Response(200, json=[{"id": "a"}]))
        config = TargetConfig(
            url=URL,
            request={
                "method": "GET",
                "params": {"q": "{question}", "n": "{k}", "key": "${K}"},
                "headers": {"X-Team": "eval"},
            },
            response={"ids": "[].id"},
        )
        assert ("a",) == _query(config, router, K="s3").ranked_ids
        sent = route.calls.last.request
        assert {"q": "How long?", "n": "4", "key": "s3"} == dict(sent.url.params)
        assert "eval" == sent.headers["x-team"]
        assert b"" == sent.content

    def test_post_body_template(self) -> None:
        """The body template is rendered with K as an integer and sent as JSON."""
        router = respx.Router()
        route = router.post(URL).mock(return_value=httpx.Response(200, json={"hits": []}))
        config = TargetConfig(
            url=URL,
            request={"body": {"input": {"text": "{question}"}, "top_k": "{k}", "debug": True}},
            response={"ids": "hits[].id"},
        )
        _query(config, router)
        sent = route.calls.last.request
        assert {"input": {"text": "How long?"}, "top_k": 4, "debug": True} == json.loads(
            sent.content
        )
        assert "application/json" == sent.headers["content-type"]


class TestResponses:
    """Status handling and body limits, unit level."""

    def test_redirect_is_not_followed(self) -> None:
        """A 3xx is an http_status error that says where to point the url."""
        router = respx.Router()
        router.post(URL).mock(
            return_value=httpx.Response(301, headers={"Location": "https://rag.test/v1/search"})
        )
        error = _error(TargetConfig(url=URL), router)
        assert ("http_status", 301) == (error.kind, getattr(error, "status", None))
        assert "redirect to https://rag.test/v1/search" in error.message

    def test_declared_length_over_cap(self) -> None:
        """A Content-Length beyond the cap fails before the body is read."""
        router = respx.Router()
        router.post(URL).mock(
            return_value=httpx.Response(200, headers={"Content-Length": "999999999"}, content=b"{}")
        )
        error = _error(TargetConfig(url=URL), router)
        assert "response of 999999999 bytes is larger" in error.message

    @pytest.mark.parametrize(
        ("raised", "kind", "transient"),
        [
            (httpx.ConnectError("refused"), "connect", True),
            (httpx.ConnectTimeout("slow connect"), "connect", True),
            (httpx.ReadTimeout("silent"), "timeout", False),
            (httpx.RemoteProtocolError("Server disconnected"), "connect", True),
            (RuntimeError("a transport bug"), "connect", True),
            (TimeoutError(), "timeout", False),
        ],
        ids=lambda x: type(x).__name__ if isinstance(x, BaseException) else str(x),
    )
    def test_transport_errors(self, raised: Exception, kind: str, transient: bool) -> None:
        """Whatever the transport raises becomes a target error of the taxonomy."""
        router = respx.Router()
        router.post(URL).mock(side_effect=raised)
        error = _error(TargetConfig(url=URL), router)
        assert (kind, transient) == (error.kind, error.transient)

    def test_absurdly_deep_json(self) -> None:
        """A body nested beyond the parser's recursion limit is a bad_response, not a crash."""
        router = respx.Router()
        router.post(URL).mock(
            return_value=httpx.Response(200, content=b"[" * 100_000 + b"]" * 100_000)
        )
        error = _error(TargetConfig(url=URL), router)
        assert "bad_response" == error.kind

    def test_gzip_body(self) -> None:
        """A compressed body is decoded before it is parsed."""
        import gzip

        router = respx.Router()
        router.post(URL).mock(
            return_value=httpx.Response(
                200,
                headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
                content=gzip.compress(json.dumps(GOOD_BODY).encode()),
            )
        )
        assert ("refund-policy", "faq") == _query(TargetConfig(url=URL), router).ranked_ids


NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class TestRetryAfter:
    """Retry-After as delay-seconds or an HTTP-date."""

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ("3", 3.0),
            (" 0.5 ", 0.5),
            ("-4", 0.0),
            (format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90.0),
            (format_datetime(NOW - timedelta(seconds=90), usegmt=True), 0.0),
            ("Sun, 01 Mar 2026 12:00:10 GMT", 10.0),
            ("soon", None),
            ("nan", None),
            ("", None),
            (None, None),
        ],
    )
    def test_parse(self, value: str | None, expected: float | None) -> None:
        assert expected == parse_retry_after(value, now=NOW)

    def test_http_date_on_the_wire(self) -> None:
        """A 429 with an HTTP-date is retried after (about) the time it names."""
        router = respx.Router()
        when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
        router.post(URL).mock(side_effect=[httpx.Response(429, headers={"Retry-After": when})])
        error = _error(TargetConfig(url=URL), router)
        retry_after = getattr(error, "retry_after", None)
        assert retry_after is not None and 28 <= retry_after <= 30
        assert error.transient


def _openssl() -> str:
    path = shutil.which("openssl")
    if path is None:
        pytest.skip("openssl not installed")
    return path


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A self-signed certificate for 127.0.0.1 (its own CA)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [_openssl(), "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    yield cert, key


class TestTls:
    """Certificates are verified by default; a CA bundle trusts a private CA."""

    def _run(self, certificate: tuple[Path, Path], tls: dict[str, Any]) -> TargetResponse:
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_context.load_cert_chain(*certificate)
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY), ssl_context=server_context) as srv:
            target = build_target(TargetConfig(url=srv.url, tls=tls))
            assert isinstance(target, HttpTarget)

            async def go() -> TargetResponse:
                try:
                    return await target.query(case("q"), 3)
                finally:
                    await target.aclose()

            return asyncio.run(go())

    def test_untrusted_certificate_refused(self, certificate: tuple[Path, Path]) -> None:
        """A self-signed certificate fails verification: not retried, says what to do."""
        with pytest.raises(TargetError) as info:
            self._run(certificate, {})
        assert ("connect", False) == (info.value.kind, info.value.transient)
        assert "tls.ca_bundle" in info.value.message

    def test_ca_bundle(self, certificate: tuple[Path, Path]) -> None:
        """Trusting the certificate through ca_bundle makes the call succeed."""
        response = self._run(certificate, {"ca_bundle": str(certificate[0])})
        assert ("refund-policy", "faq") == response.ranked_ids

    def test_verify_off(self, certificate: tuple[Path, Path]) -> None:
        """verify = false accepts any certificate (for a lab, never the default)."""
        assert self._run(certificate, {"verify": False}).answer is not None

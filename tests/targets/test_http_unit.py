"""HttpTarget edge cases against loopback servers, Retry-After, and real TLS."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.errors import TargetError
from evaluator.factory import build_http_target, build_target
from evaluator.models import TargetResponse
from evaluator.targets.http import HttpTarget, parse_retry_after
from tests.support.loopback import LoopbackServer, Reply
from tests.support.ports import free_port
from tests.support.rawhttp import RawServer
from tests.targets.helpers import GOOD_BODY, case, dataset, query_error, query_once, run_config


@pytest.mark.e2e
class TestRequests:
    """What goes on the wire for each request configuration."""

    def test_get_with_params_and_secret(self) -> None:
        """GET puts the question and K in the query; secrets join it only on the wire."""
        with LoopbackServer(lambda _r: Reply(body=[{"id": "a"}])) as server:
            config = HttpTargetConfig(
                url=server.url,
                request={
                    "method": "GET",
                    "params": {"q": "{question}", "n": "{k}", "key": "${K}"},
                    "headers": {"X-Team": "eval"},
                },
                response={"ids": "[].id"},
            )
            assert ("a",) == query_once(config, K="s3").ranked_ids
        assert [{"q": "How long?", "n": "4", "key": "s3"}] == server.requests
        assert "eval" == server.request_headers[0]["X-Team"]
        assert server.request_lines[0].startswith("GET /rag?q=How")

    def test_post_body_template(self) -> None:
        """The body template is rendered with K as an integer and sent as JSON."""
        with LoopbackServer(lambda _r: Reply(body={"hits": []})) as server:
            config = HttpTargetConfig(
                url=server.url,
                request={"body": {"input": {"text": "{question}"}, "top_k": "{k}", "debug": True}},
                response={"ids": "hits[].id"},
            )
            query_once(config)
        assert [{"input": {"text": "How long?"}, "top_k": 4, "debug": True}] == server.requests
        assert "application/json" == server.request_headers[0]["Content-Type"]

    @pytest.mark.parametrize("method", ["POST", "GET"])
    def test_secret_param_on_every_request(self, method: str) -> None:
        """A ${VAR} query parameter is on every request of one target: with the template's
        one URL (POST, its wire form built once) and with a URL per question (GET)."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            params = {"key": "${K}", **({"q": "{question}"} if method == "GET" else {})}
            config = HttpTargetConfig(url=server.url, request={"method": method, "params": params})
            report, _ = run_config(config, dataset(["one", "two", "three"]), environ={"K": "s3"})
        assert report.summary.error_count == 0
        keys = [line.split("?", 1)[1] for line in server.request_lines]
        assert all("key=s3" in query for query in keys), keys
        if method == "GET":
            assert sorted(q for r in server.requests for q in [r["q"]]) == ["one", "three", "two"]

    def test_secret_header_only_on_the_wire(self) -> None:
        """A ${VAR} header reaches the server; the target keeps no copy of it in its request."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            config = HttpTargetConfig(
                url=server.url, request={"headers": {"Authorization": "Bearer ${TOKEN}"}}
            )
            query_once(config, TOKEN="t-789")
        assert "Bearer t-789" == server.request_headers[0]["Authorization"]


class TestResponses:
    """Status handling and body limits, unit level."""

    @pytest.mark.e2e
    def test_redirect_is_not_followed(self) -> None:
        """A 3xx is an http_status error that says where to point the url."""
        reply = Reply(status=301, headers={"Location": "https://rag.test/v1/search"}, raw=b"")
        with LoopbackServer(lambda _r: reply) as server:
            error = query_error(HttpTargetConfig(url=server.url))
        assert ("http_status", 301) == (error.kind, getattr(error, "status", None))
        assert "redirect to https://rag.test/v1/search" in error.message

    @pytest.mark.e2e
    def test_declared_length_over_cap(self) -> None:
        """A Content-Length beyond the cap fails before the body is read."""
        raw = b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n{}"
        with RawServer(raw) as server:
            error = query_error(HttpTargetConfig(url=server.url))
        assert "response of 999999999 bytes is larger" in error.message

    @pytest.mark.e2e
    @pytest.mark.parametrize(
        ("raw", "kind", "transient"),
        [
            (b"", "connect", True),  # closed before any response
            (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{", "connect", False),
        ],
        ids=["closed-before-response", "closed-mid-body"],
    )
    def test_connection_ends(self, raw: bytes, kind: str, transient: bool) -> None:
        """A connection that ends before or inside the response is a connect error."""
        with RawServer(raw) as server:
            error = query_error(HttpTargetConfig(url=server.url))
        assert (kind, transient) == (error.kind, error.transient)

    @pytest.mark.e2e
    @pytest.mark.parametrize(
        ("raw", "says"),
        [
            (b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}", "Bad status line"),
            (b"hello\r\n\r\n", "Bad status line"),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n",
                "chunk",
            ),
            (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n{}", "8190 bytes"),
        ],
        ids=["status-line", "not-http", "chunk-size", "header-overflow"],
    )
    def test_garbled_http_is_a_response_error(self, raw: bytes, says: str) -> None:
        """Garbled HTTP is bad_response, not a retried connect; the message names the fault
        and never repeats the request (aiohttp's wrapper would, secret headers included)."""
        with RawServer(raw) as server:
            config = HttpTargetConfig(
                url=server.url, request={"headers": {"Authorization": "Bearer ${TOKEN}"}}
            )
            with pytest.raises(TargetError) as info:
                query_once(config, TOKEN="t-0ken")
        error = info.value
        assert ("bad_response", False) == (error.kind, error.transient)
        assert "garbled HTTP response" in error.message
        assert says.lower() in error.message.lower()
        assert "t-0ken" not in error.message and "RequestInfo" not in error.message

    @pytest.mark.e2e
    def test_out_of_memory_while_reading(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A MemoryError while the body is read is its own kind, not connect (unit edge
        case: the decoder is made to raise, a real one would need the machine's memory)."""
        from evaluator.targets import decode

        def exhausted(self: object, data: bytes) -> Iterator[bytes]:
            raise MemoryError
            yield b""

        monkeypatch.setattr(decode.BodyDecoder, "feed", exhausted)
        reply = Reply(raw=gzip.compress(b"{}"), headers={"Content-Encoding": "gzip"})
        with LoopbackServer(lambda _r: reply) as server:
            error = query_error(HttpTargetConfig(url=server.url))
        assert ("out_of_memory", False) == (error.kind, error.transient)

    def test_refused(self) -> None:
        """Nothing listening: connect, retried."""
        error = query_error(HttpTargetConfig(url=f"http://127.0.0.1:{free_port()}/rag"))
        assert ("connect", True) == (error.kind, error.transient)
        assert "cannot connect" in error.message

    @pytest.mark.e2e
    def test_read_timeout(self) -> None:
        """Silence longer than the read timeout: timeout, not retried."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY, delay=1.0)) as server:
            error = query_error(
                HttpTargetConfig(url=server.url, timeout_seconds=5, read_timeout_seconds=0.2)
            )
        assert ("timeout", False) == (error.kind, error.transient)
        assert "sent nothing for 0.2s" in error.message

    @pytest.mark.e2e
    def test_silence_without_a_read_timeout_meets_the_deadline(self) -> None:
        """No read timeout set: a silent server is stopped by the whole-call deadline (the
        session keeps no silence timer of its own, which would only ever fire later)."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY, delay=2.0)) as server:
            error = query_error(HttpTargetConfig(url=server.url, timeout_seconds=0.3))
        assert ("timeout", False) == (error.kind, error.transient)
        assert "did not complete its response within 0.3s" in error.message

    def test_session_silence_timer_only_when_shorter_than_the_deadline(self) -> None:
        """The session's read-silence timer is set only when read_timeout_seconds is shorter
        than the case's deadline."""

        async def sock_read(**settings: float) -> float | None:
            target = build_target(HttpTargetConfig(url="http://127.0.0.1:9/rag", **settings))
            assert isinstance(target, HttpTarget)
            try:
                return target._open().timeout.sock_read
            finally:
                await target.aclose()

        assert asyncio.run(sock_read(timeout_seconds=5)) is None
        assert asyncio.run(sock_read(timeout_seconds=5, read_timeout_seconds=5)) is None
        assert 0.5 == asyncio.run(sock_read(timeout_seconds=5, read_timeout_seconds=0.5))

    @pytest.mark.e2e
    def test_absurdly_deep_json(self) -> None:
        """A body nested beyond the parser's recursion limit is a bad_response, not a crash."""
        deep = Reply(raw=b"[" * 100_000 + b"]" * 100_000)
        with LoopbackServer(lambda _r: deep) as server:
            error = query_error(HttpTargetConfig(url=server.url))
        assert "bad_response" == error.kind

    @pytest.mark.e2e
    def test_gzip_body(self) -> None:
        """A compressed body is decoded before it is parsed."""
        reply = Reply(
            raw=gzip.compress(json.dumps(GOOD_BODY).encode()),
            headers={"Content-Encoding": "gzip"},
        )
        with LoopbackServer(lambda _r: reply) as server:
            assert ("refund-policy", "faq") == query_once(
                HttpTargetConfig(url=server.url)
            ).ranked_ids

    @pytest.mark.e2e
    def test_large_body_is_parsed_off_the_loop(self) -> None:
        """A body above the off-loop threshold maps to the same response, its ranking read
        only as far as the target's max_ranked_ids."""
        body = {**GOOD_BODY, "retrieved": [{"id": f"d{i}"} for i in range(40_000)]}
        with LoopbackServer(lambda _r: Reply(body=body)) as server:
            response = query_once(HttpTargetConfig(url=server.url, max_ranked_ids=30_000))
            default = query_once(HttpTargetConfig(url=server.url))
        assert tuple(f"d{i}" for i in range(30_000)) == response.ranked_ids
        assert tuple(f"d{i}" for i in range(100)) == default.ranked_ids

    @pytest.mark.e2e
    def test_a_mapped_ranking_is_read_as_far_as_max_ranked_ids(self) -> None:
        """A mapped response reaches its cut by the same setting as the default contract:
        hits past max_ranked_ids are not read (the bad fourth hit is never checked)."""
        hits = [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": 1.5}]
        with LoopbackServer(lambda _r: Reply(body={"hits": hits})) as server:
            config = HttpTargetConfig(
                url=server.url, response={"ids": "hits[].id"}, max_ranked_ids=3
            )
            mapper = build_http_target(config).mapper
            assert mapper is not None and 3 == mapper.max_ranked_ids
            assert ("a", "b", "c") == query_once(config).ranked_ids


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
        """Retry-After is read as seconds or an HTTP date, a past or negative one as no wait, and
        anything else as no value."""
        assert expected == parse_retry_after(value, now=NOW)

    @pytest.mark.e2e
    def test_http_date_on_the_wire(self) -> None:
        """A 429 with an HTTP-date is read as the time it names."""
        when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
        reply = Reply(status=429, headers={"Retry-After": when}, raw=b"slow down")
        with LoopbackServer(lambda _r: reply) as server:
            error = query_error(HttpTargetConfig(url=server.url))
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


@pytest.mark.e2e
class TestTls:
    """Certificates are verified by default; a CA bundle trusts a private CA."""

    def _run(self, certificate: tuple[Path, Path], tls: dict[str, Any]) -> TargetResponse:
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_context.load_cert_chain(*certificate)
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY), ssl_context=server_context) as srv:
            target = build_target(HttpTargetConfig(url=srv.url, tls=tls))
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

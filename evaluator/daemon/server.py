"""HTTP endpoints of the daemon on aiohttp: /metrics, /healthz, /readyz, /reports/latest,
/cases, and the human pages (``/``, ``/case-table`` and ``/case``,
:mod:`evaluator.daemon.pages`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from evaluator.daemon.access import Access
from evaluator.daemon.exporter import Metrics
from evaluator.daemon.pages import StatusPages
from evaluator.errors import ConfigError
from evaluator.history.job import JobHistory
from evaluator.history.stability import Stability
from evaluator.report import RunReport, encode_report

__all__ = ["HttpEndpoints", "parse_listen", "pieces"]

#: a scrape encodes for at most this much CPU time before letting the event loop run...
_SLICE_SECONDS = 0.001
#: ...for at least this long, and as long after each piece of the body (a timer, not
#: ``sleep(0)``: see :meth:`HttpEndpoints._encode_in_slices`)...
_PAUSE_SECONDS = 0.001
#: ...and after this many slices encodes the rest in one go (bounded, whatever changes)
_MAX_SLICES = 100
#: the body is written this much at a time
_PIECE_BYTES = 128 * 1024


def pieces(parts: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The parts' bytes in order, cut and regrouped into pieces of ``size`` bytes (the last
    one shorter): a large part is cut, small ones travel together."""
    held: list[memoryview] = []
    filled = 0
    for part in parts:
        view = memoryview(part)
        while view:
            taken = view[: size - filled]
            held.append(taken)
            filled += len(taken)
            view = view[len(taken) :]
            if filled == size:
                yield b"".join(held)
                held, filled = [], 0
    if held:
        yield b"".join(held)


async def _send_in_pieces(
    request: web.Request, parts: Sequence[bytes], content_type: str
) -> web.StreamResponse:
    """The body, sent a piece at a time with the event loop free after each.

    With 100 jobs the body is about 1.7 MiB. Sent whole, it was first joined (a copy: 1 ms
    on a loaded 2-core machine) and handed to the socket in one write, whose system call
    carries the loopback transfer too: the event loop stalled up to 40 ms right after the
    handler returned (platform benchmark, loop lag sampled every 5 ms), while the slices
    before it stalled it 2-3 ms. Alone, aiohttp serving 1.8 MB to a client in another
    process held its loop up to 10.5 ms sent whole, 4.5 ms in 128 KiB pieces."""
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.content_length = sum(map(len, parts))
    await response.prepare(request)
    if request.method != "HEAD":  # a streamed body is ours to leave out (web.Response did it)
        for piece in pieces(parts, _PIECE_BYTES):
            await response.write(piece)
            await asyncio.sleep(_PAUSE_SECONDS)
    await response.write_eof()
    return response


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9464`` for IPv6) to a host and port.

    Raises:
        ConfigError: naming the bad value.
    """
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"listen {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9464")
    return host.strip("[]") or "0.0.0.0", int(port)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(data, ensure_ascii=False), status=status, content_type="application/json"
    )


def _select(
    request: web.Request, jobs: Mapping[tuple[str, str], Any]
) -> tuple[str, str] | web.Response:
    """The one job ``?target=..&dataset=..`` names (either may be left out when unambiguous),
    or the error response."""
    target, dataset = request.query.get("target"), request.query.get("dataset")
    matches = [
        key
        for key in jobs
        if (target is None or key[0] == target) and (dataset is None or key[1] == dataset)
    ]
    if len(matches) != 1:
        listed = [{"target": t, "dataset": d} for t, d in sorted(jobs)]
        why = "no such job" if not matches else "several jobs: pass ?target=..&dataset=.."
        return _json({"error": why, "jobs": listed}, 404 if not matches else 400)
    return matches[0]


class HttpEndpoints:
    """The daemon's web app; what it serves comes from callables, so it holds no state."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        runtime: CollectorRegistry,
        healthy: Callable[[], bool],
        ready: Callable[[], bool],
        latest_reports: Callable[[], Mapping[tuple[str, str], RunReport | None]],
        pages: StatusPages | None = None,
        histories: Callable[[], Mapping[tuple[str, str], JobHistory | None]] | None = None,
    ) -> None:
        self._metrics = metrics
        self.runtime = runtime
        self._healthy = healthy
        self._ready = ready
        self._latest = latest_reports
        self._pages = pages
        self._histories = histories or (dict)
        self._runner: web.AppRunner | None = None
        self.port = 0
        #: the Host allow-list and the pages' token (None: everything open, for tests)
        self.access: Access | None = None

    def app(self) -> web.Application:
        middlewares = [self.access.middleware] if self.access is not None else []
        app = web.Application(middlewares=middlewares)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
        app.router.add_get("/reports/latest", self.latest_report)
        if self._pages is not None:
            app.router.add_get("/", self._pages.status)
            app.router.add_get("/case", self._pages.case)
            app.router.add_get("/case-table", self._pages.cases)
            app.router.add_get("/runbook", self._pages.runbook)
        app.router.add_get("/cases", self.cases)
        return app

    async def metrics(self, request: web.Request) -> web.StreamResponse:
        # prometheus-client picks text or OpenMetrics (with exemplars) from the Accept header;
        # the evaluation metrics are kept encoded (only what changed is encoded again), the
        # few process metrics are encoded fresh every time
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        openmetrics = content_type.startswith("application/openmetrics-text")
        await self._encode_in_slices(openmetrics)
        # what changed during the last pause is encoded here (a few cells), so the body is the
        # state of this moment
        parts = self._metrics.exposition_parts(openmetrics=openmetrics)
        parts.append(encoder(self.runtime))
        return await _send_in_pieces(request, parts, content_type)

    async def _encode_in_slices(self, openmetrics: bool) -> None:
        """Encode what changed since the last scrape in slices, with the event loop free
        after each, the last one too: cases in flight, whose latency is what we measure, and
        /healthz wait one slice at most.

        Between slices a timer, not sleep(0): sleep(0) queued the next slice ahead of the
        task step that a response arriving meanwhile schedules, so that case's end was
        stamped two slices late (P95 +15 ms with 5 ms slices, platform benchmark)."""
        for _ in range(_MAX_SLICES):
            done = self._metrics.refresh(openmetrics=openmetrics, budget_seconds=_SLICE_SECONDS)
            await asyncio.sleep(_PAUSE_SECONDS)
            if done:
                return

    async def healthz(self, _request: web.Request) -> web.Response:
        ok = self._healthy()
        return _json({"status": "ok" if ok else "scheduler stopped"}, 200 if ok else 503)

    async def readyz(self, _request: web.Request) -> web.Response:
        ok = self._ready()
        return _json({"status": "ready" if ok else "loading"}, 200 if ok else 503)

    async def latest_report(self, request: web.Request) -> web.Response:
        reports = self._latest()
        key = _select(request, reports)
        if isinstance(key, web.Response):
            return key
        report = reports[key]
        if report is None:
            return _json({"error": "no run has finished yet"}, 404)
        # encoded as the file is, in a thread: a large report must not hold the event loop
        body = await asyncio.to_thread(encode_report, report)
        history = self._histories().get(key)
        if history is not None:
            # the stability lists and drift beside the report (not in the file on disk: they
            # are computed after it is written, from the history store)
            extra = json.dumps(history.to_dict(with_cases=False), ensure_ascii=False)
            body = body.rstrip()[:-1] + b',"history":' + extra.encode() + b"}"
        return web.Response(body=body, content_type="application/json")

    async def cases(self, request: web.Request) -> web.Response:
        """Per-case stability of a job: ``/cases?target=..&dataset=..[&class=flaky]``."""
        histories = self._histories()
        key = _select(request, histories)
        if isinstance(key, web.Response):
            return key
        history = histories[key]
        if history is None:
            return _json({"error": "no history yet: no complete run recorded"}, 404)
        data = {"target": key[0], "dataset": key[1], **history.to_dict()}
        wanted = request.query.get("class")
        if wanted is not None:
            known = [s.value for s in Stability]
            if wanted not in known:
                return _json({"error": f"unknown class {wanted!r}", "classes": known}, 400)
            data["cases"] = [c.to_dict() for c in history.cases if c.stability.value == wanted]
        return _json(data)

    async def start(self, host: str, port: int) -> None:
        """Bind and serve.

        Raises:
            ConfigError: the address cannot be bound (in use, not local).
        """
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

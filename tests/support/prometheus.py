"""Real processes on loopback for end-to-end tests: a Prometheus server and the daemon.

Everything binds to 127.0.0.1, lives in a temporary folder and is bounded in time.

API (all context managers stop what they started, even when the test fails)::

    require_binary("promtool") -> str       # its path; skips the test (fails when CI=true)
    check_metrics(text) -> CompletedProcess # `promtool check metrics` on a text exposition

    with DaemonProcess(["--dataset", f, "--target-url", u], workdir=tmp) as daemon:
        daemon.wait_ready()                 # /readyz answered 200 (bounded)
        daemon.address                      # "127.0.0.1:PORT", for a scrape config
        daemon.get("/metrics")              # an httpx.Response
        daemon.wait_for_log(lambda e: e["event"] == "run")
        result = daemon.stop()              # SIGTERM; result.returncode, result.logs (dicts)

    with PrometheusServer([daemon.address], workdir=tmp) as prom:   # scrapes every 1 s
        prom.query('rag_eval_mrr{dataset="golden"}')   # -> [{"metric": {...}, "value": [t, "0.5"]}]
        prom.wait_for("rag_eval_mrr", lambda result: len(result) == 1, timeout=20)

    # the deploy bundle's scrape job name and rules, evaluated every second
    with PrometheusServer(targets, workdir=tmp, job_name="rag-evaluator",
                          rule_files=[Path("deploy/prometheus/rules/recording.yml")]) as prom:
        prom.api("/api/v1/rules")           # the "data" of any GET endpoint of the HTTP API

``PrometheusServer`` skips the test when ``prometheus`` is not installed, and fails it
instead when the environment variable ``CI`` is ``"true"`` (CI must exercise it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import pytest

from tests.support.ports import free_port

__all__ = [
    "DaemonProcess",
    "DaemonResult",
    "PrometheusServer",
    "Pushgateway",
    "check_metrics",
    "parse_log_lines",
    "require_binary",
]

HOST = "127.0.0.1"
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))

QueryResult = list[dict[str, Any]]


def require_binary(name: str, package: str = "prometheus") -> str:
    """The path of ``name`` on PATH; skip the test when it is missing, or fail when CI=true."""
    path = shutil.which(name)
    if path is None:
        why = f"{name!r} is not installed (Debian package {package!r})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}; CI=true requires it")
        pytest.skip(why)
    return path


def check_metrics(text: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run ``promtool check metrics`` on a text-format exposition (exit 0 and no output: clean)."""
    promtool = require_binary("promtool")
    return subprocess.run(
        [promtool, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def _stop_process(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """SIGTERM, wait up to ``timeout``; SIGKILL after that. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


class PrometheusServer:
    """A real ``prometheus`` on 127.0.0.1 scraping ``targets`` (``host:port``) every second.

    Args:
        targets: what to scrape at ``/metrics`` (one scrape job).
        workdir: a folder of its own for the config, the TSDB and the server's log.
        scrape_interval: also used as the scrape timeout and the rule evaluation interval.
        start_timeout: seconds to wait for ``/-/ready``.
        job_name: the scrape job, i.e. the ``job`` label of every scraped series.
        honor_labels: keep the ``job`` and ``instance`` labels the target exposes, as a
            scrape of a Pushgateway must (a pushed group's ``job`` is its own).
        rule_files: rule files to load (absolute paths are safest: Prometheus resolves
            relative ones against its config file, in ``workdir``). A file that does not
            load makes :meth:`start` fail with Prometheus's message.
    """

    def __init__(
        self,
        targets: Sequence[str],
        *,
        workdir: Path,
        scrape_interval: str = "1s",
        start_timeout: float = 30.0,
        job_name: str = "evaluator",
        rule_files: Sequence[Path] = (),
        honor_labels: bool = False,
    ) -> None:
        self.targets = list(targets)
        self.honor_labels = honor_labels
        self.workdir = workdir
        self.scrape_interval = scrape_interval
        self.start_timeout = start_timeout
        self.job_name = job_name
        self.rule_files = [Path(p).resolve() for p in rule_files]
        self.port = 0
        self.log_path = workdir / "prometheus.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._client = httpx.Client(timeout=10.0)

    @property
    def url(self) -> str:
        """Prometheus's base URL."""
        return f"http://{HOST}:{self.port}"

    def _write_config(self) -> Path:
        config: dict[str, Any] = {
            "global": {
                "scrape_interval": self.scrape_interval,
                "scrape_timeout": self.scrape_interval,
                "evaluation_interval": self.scrape_interval,
            },
            "scrape_configs": [
                {
                    "job_name": self.job_name,
                    "honor_labels": self.honor_labels,
                    "static_configs": [{"targets": self.targets}],
                }
            ],
        }
        if self.rule_files:
            config["rule_files"] = [str(p) for p in self.rule_files]
        path = self.workdir / "prometheus.yml"
        path.write_text(json.dumps(config, indent=2), "utf-8")  # JSON is YAML
        return path

    def start(self) -> PrometheusServer:
        """Start Prometheus on a free port, retried when another process takes the port
        first."""
        binary = require_binary("prometheus")
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        for _attempt in range(3):  # another process may grab the free port first
            self.port = free_port()
            tsdb = self.workdir / f"tsdb-{self.port}"
            with self.log_path.open("ab") as log:
                self._proc = subprocess.Popen(
                    [
                        binary,
                        f"--config.file={config}",
                        f"--storage.tsdb.path={tsdb}",
                        f"--web.listen-address={HOST}:{self.port}",
                        "--storage.tsdb.retention.time=1h",
                        "--log.level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.workdir,
                )
            if self._wait_ready():
                return self
        self.stop()
        raise AssertionError(f"prometheus did not start:\n{_tail(self.log_path)}")

    def _wait_ready(self) -> bool:
        """True once /-/ready answers 200; False when the process died (port taken)."""
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                if self._client.get(f"{self.url}/-/ready").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise AssertionError(
            f"prometheus not ready within {self.start_timeout}s:\n{_tail(self.log_path)}"
        )

    def stop(self) -> None:
        """Stop Prometheus and close the client."""
        if self._proc is not None:
            _stop_process(self._proc, 10.0)
            self._proc = None
        self._client.close()

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.stop()

    def api(self, path: str, **params: str) -> Any:
        """The ``data`` of a GET on the HTTP API (``/api/v1/rules``, ``/api/v1/targets``...).

        Raises:
            AssertionError: the answer's status is not ``success``.
        """
        body = self._client.get(f"{self.url}{path}", params=params).json()
        assert "success" == body.get("status"), f"{path} {params}: {body}"
        return body["data"]

    def query(self, expr: str) -> QueryResult:
        """An instant query at now via ``/api/v1/query``; the ``data.result`` list.

        Raises:
            AssertionError: the query failed (bad PromQL, server error).
        """
        response = self._client.get(f"{self.url}/api/v1/query", params={"query": expr})
        body = response.json()
        assert "success" == body.get("status"), f"{expr}: {body}"
        assert body["data"]["resultType"] == "vector", f"{expr}: {body['data']['resultType']}"
        result: QueryResult = body["data"]["result"]
        return result

    def wait_for(
        self,
        expr: str,
        predicate: Callable[[QueryResult], bool] = bool,
        timeout: float = 20.0,
    ) -> QueryResult:
        """Query ``expr`` until ``predicate(result)`` holds; the result, or AssertionError."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if predicate(result):
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{expr}: still {result} after {timeout}s")
            time.sleep(0.2)


class Pushgateway:
    """Debian's ``prometheus-pushgateway`` on 127.0.0.1, in memory (no persistence file).

    Skips the test when it is not installed, fails it when ``CI`` is ``"true"``.
    """

    def __init__(self, *, workdir: Path, start_timeout: float = 20.0) -> None:
        self.workdir = workdir
        self.start_timeout = start_timeout
        self.port = 0
        self.log_path = workdir / "pushgateway.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """The Pushgateway's host and port."""
        return f"{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The Pushgateway's base URL."""
        return f"http://{self.address}"

    def start(self) -> Pushgateway:
        """Start the Pushgateway on a free port without persistence, retried when another
        process takes the port first."""
        binary = require_binary("prometheus-pushgateway", "prometheus-pushgateway")
        self.workdir.mkdir(parents=True, exist_ok=True)
        for _attempt in range(3):  # another process may grab the free port first
            self.port = free_port()
            with self.log_path.open("ab") as log:
                self._proc = subprocess.Popen(
                    [
                        binary,
                        f"--web.listen-address={self.address}",
                        # Debian's default persists to /var/lib/prometheus/pushgateway.data,
                        # shared by every run: this one keeps its groups in memory
                        "--persistence.file=",
                        "--log.level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.workdir,
                )
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline and self._proc.poll() is None:
                try:
                    if httpx.get(f"{self.url}/-/ready", timeout=2.0).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            _stop_process(self._proc, 5.0)
        raise AssertionError(f"pushgateway did not start:\n{_tail(self.log_path)}")

    def stop(self) -> None:
        """Stop the Pushgateway."""
        if self._proc is not None:
            _stop_process(self._proc, 10.0)
            self._proc = None

    def __enter__(self) -> Pushgateway:
        return self.start()

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.stop()


@dataclass(frozen=True)
class DaemonResult:
    """How a daemon subprocess ended: exit code, its log events and the rest of stderr.

    The daemon logs to stderr (docs/daemon.md); ``stderr`` holds the lines of it that are not
    JSON log events (a one-line start error, a traceback), "" for a clean run.
    """

    returncode: int
    logs: list[dict[str, Any]]
    stderr: str


def parse_log_lines(text: str) -> list[dict[str, Any]]:
    """JSON log lines as dicts; a line that is not JSON becomes ``{"unparsed": line}``."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        events.append(data if isinstance(data, dict) else {"unparsed": line})
    return events


class DaemonProcess:
    """``evaluator serve ARGS`` as a subprocess, its logs (stderr) to a file in ``workdir``.

    Unless ``args`` has ``--listen``, the daemon listens on ``127.0.0.1:0`` and the port it
    bound is read from its ``daemon_started`` log event: no race for a free port.
    ``EVALUATOR_*`` variables of the test process are not inherited; pass them in ``env``.
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        workdir: Path,
        env: Mapping[str, str] | None = None,
        name: str = "daemon",
        prefix: Sequence[str] = (),
    ) -> None:
        #: a command the daemon runs under (``unshare ...``): it must exec the daemon
        self.prefix = list(prefix)
        self.args = list(args)
        if "--listen" not in self.args:
            self.args += ["--listen", f"{HOST}:0"]
        self.workdir = workdir
        self.stdout_path = workdir / f"{name}.stdout.txt"
        self.stderr_path = workdir / f"{name}.stderr.jsonl"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
        self.env.update(env or {})
        self.env["PYTHONUNBUFFERED"] = "1"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._client = httpx.Client(timeout=10.0)

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT`` of the metrics and health server (after :meth:`wait_ready`)."""
        return f"{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The daemon's base URL."""
        return f"http://{self.address}"

    def start(self) -> DaemonProcess:
        """Start ``evaluator serve`` with its output to files."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [*self.prefix, EVALUATOR, "serve", *self.args],
                stdout=out,
                stderr=err,
                cwd=self.workdir,
                env=self.env,
            )
        return self

    def logs(self) -> list[dict[str, Any]]:
        """The JSON log events written so far."""
        try:
            return parse_log_lines(self.stderr_path.read_text("utf-8", errors="replace"))
        except OSError:
            return []

    def log_text(self) -> str:
        """Everything the daemon logged so far (its stderr), as text."""
        return self.stderr_path.read_text("utf-8", errors="replace")

    def _diagnostics(self) -> str:
        return f"stderr:\n{_tail(self.stderr_path)}\nstdout:\n{_tail(self.stdout_path)}"

    def wait_for_log(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15.0
    ) -> dict[str, Any]:
        """The first log event matching ``predicate``; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.logs():
                if predicate(event):
                    return event
            if self.proc is not None and self.proc.poll() is not None:
                for event in self.logs():  # the last lines may have landed just now
                    if predicate(event):
                        return event
                raise AssertionError(
                    f"daemon exited with {self.proc.returncode}\n{self._diagnostics()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no such log event after {timeout}s\n{self._diagnostics()}")
            time.sleep(0.05)

    def wait_ready(self, timeout: float = 20.0) -> DaemonProcess:
        """Wait for ``daemon_started`` (to learn the port), then for ``/readyz`` to answer 200."""
        deadline = time.monotonic() + timeout
        started = self.wait_for_log(lambda e: e.get("event") == "daemon_started", timeout)
        self.port = int(str(started["listen"]).rpartition(":")[2])
        while True:
            try:
                if self.get("/readyz").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"/readyz not 200 after {timeout}s\n{self._diagnostics()}")
            time.sleep(0.05)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        """GET ``path`` (``/metrics``, ``/reports/latest?...``) from the daemon."""
        return self._client.get(f"{self.url}{path}", **kwargs)

    def wait_exit(self, timeout: float = 20.0) -> DaemonResult:
        """Wait for the process to end by itself (e.g. a bad start); kill it after ``timeout``."""
        assert self.proc is not None, "not started"
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"daemon still running after {timeout}s\n{self._diagnostics()}"
            ) from exc
        return self._result()

    def stop(self, timeout: float = 20.0) -> DaemonResult:
        """SIGTERM and wait up to ``timeout`` (then SIGKILL, and the code is -9)."""
        assert self.proc is not None, "not started"
        _stop_process(self.proc, timeout)
        return self._result()

    def _result(self) -> DaemonResult:
        assert self.proc is not None
        self._client.close()
        logs = self.logs()
        return DaemonResult(
            returncode=self.proc.returncode,
            logs=[e for e in logs if "unparsed" not in e],
            stderr="".join(f"{e['unparsed']}\n" for e in logs if "unparsed" in e),
        )

    def __enter__(self) -> DaemonProcess:
        return self.start()

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _stop_process(self.proc, 10.0)
        self._client.close()

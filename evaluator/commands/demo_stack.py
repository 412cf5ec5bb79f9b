"""The embedded default: the reference RAG service, the daemon against it, and Prometheus.

One command, one process tree: the reference service (and Prometheus, when its binary is on
the machine) run as child processes; the daemon runs in this process. Ctrl-C stops all.
The children run in process groups of their own, so a terminal's Ctrl-C reaches only this
process, which stops the daemon first and its children after: a run in flight never sees
its target vanish.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import structlog

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.daemon import Daemon
from evaluator.daemon.server import parse_listen
from evaluator.daemon.service import without_created_series
from evaluator.errors import ConfigError, EvaluatorError, ExitCode
from evaluator.judge.settings import JudgeConfig

__all__ = ["DemoOptions", "PrometheusUi", "run_demo"]

log = structlog.get_logger("evaluator.demo")

#: How long Ctrl-C lets a run in flight finish before cancelling it. A healthy run takes
#: well under a second; under ``slow_model`` one takes about a minute, and a demo must
#: not hang that long (the daemon's own default is 30 s).
_SHUTDOWN_GRACE_SECONDS = 2.0


#: the golden set of the source tree, which the demo runs when started there
SOURCE_GOLDEN_SET = Path("evals/rag_cases.jsonl")


def default_golden_set(cwd: Path | None = None) -> Path:
    """``evals/rag_cases.jsonl`` in the source tree (edits there show in the demo), else the
    same file shipped in the package, so ``evaluator demo`` runs wherever it is installed
    (tests/demo/test_demo_installed.py keeps the two identical)."""
    here = SOURCE_GOLDEN_SET if cwd is None else cwd / SOURCE_GOLDEN_SET
    if here.is_file():
        return SOURCE_GOLDEN_SET
    packaged = resources.files("evaluator.commands").joinpath("data/rag_cases.jsonl")
    return Path(str(packaged))


@dataclass(frozen=True)
class DemoOptions:
    """Where the demo's parts listen and how often the golden set runs."""

    #: the source tree's golden set when the demo runs there, else the copy in the package
    dataset: Path = field(default_factory=lambda: default_golden_set())
    rag_port: int = 8900
    listen: str = "127.0.0.1:9464"
    prometheus_port: int = 9090
    interval_seconds: float = 30.0
    reports_dir: Path = Path("reports/demo")
    failure_modes: tuple[str, ...] = ()
    prometheus: bool = True
    rules_dir: Path = Path("deploy/prometheus/rules")


@dataclass(frozen=True)
class PrometheusUi:
    """Where the demo's Prometheus shows its alerts, or why there is none."""

    url: str | None = None
    reason: str = ""


#: the alerts page of Prometheus's UIs, newest first: the React UI's /alerts; the classic UI,
#: which Debian's package ships alone (its /alerts answers 404)
_ALERTS_PAGES = ("/alerts", "/classic/alerts")


def _alerts_page(base: str) -> str:
    """The first alerts page the running Prometheus at ``base`` answers 200 for."""
    for path in _ALERTS_PAGES:
        try:
            with urllib.request.urlopen(base + path, timeout=2) as response:
                if response.status == 200:
                    return base + path
        except (urllib.error.URLError, OSError):
            continue
    return base + "/"


def _wait_http(url: str, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise EvaluatorError(f"{proc.args!r} exited with code {proc.returncode} at start")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise EvaluatorError(f"{url} did not answer within {timeout:g}s")


def _start_reference(options: DemoOptions, children: list[subprocess.Popen[bytes]]) -> None:
    cmd = [
        sys.executable,
        "-m",
        "evaluator.reference",
        "--host",
        "127.0.0.1",
        "--no-access-log",
        "--port",
        str(options.rag_port),
    ]
    for mode in options.failure_modes:
        cmd += ["--failure-mode", mode]
    proc = subprocess.Popen(cmd, process_group=0)
    children.append(proc)  # before waiting: Ctrl-C meanwhile must stop it too
    _wait_http(f"http://127.0.0.1:{options.rag_port}/healthz", 60, proc)


def _prometheus_config(options: DemoOptions, folder: Path) -> Path:
    host, port = parse_listen(options.listen)
    rules = sorted(options.rules_dir.glob("*.yml")) if options.rules_dir.is_dir() else []
    lines = [
        "global:",
        "  scrape_interval: 5s",
        "  evaluation_interval: 5s",
        "rule_files:",
        *(f"  - {p.resolve()}" for p in rules),
        "scrape_configs:",
        "  - job_name: rag-evaluator",
        "    static_configs:",
        f"      - targets: ['{host}:{port}']",
    ]
    if not rules:
        lines[3] = "rule_files: []"
    path = folder / "prometheus.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _start_prometheus(
    options: DemoOptions, folder: Path, children: list[subprocess.Popen[bytes]]
) -> PrometheusUi:
    if not options.prometheus:
        return PrometheusUi(reason="not started (--no-prometheus)")
    binary = shutil.which("prometheus")
    if binary is None:
        return PrometheusUi(
            reason="not started: no prometheus on PATH (Debian: apt-get install prometheus)"
        )
    config = _prometheus_config(options, folder)
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{options.prometheus_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        process_group=0,
    )
    children.append(proc)  # before waiting: Ctrl-C meanwhile must stop it too
    base = f"http://127.0.0.1:{options.prometheus_port}"
    try:
        _wait_http(f"{base}/-/ready", 30, proc)
    except EvaluatorError as exc:
        log.warning("prometheus_not_started", reason=str(exc))
        proc.terminate()  # run_demo waits for it
        return PrometheusUi(reason=f"did not start: {exc}")
    return PrometheusUi(url=_alerts_page(base))


#: how often the demo re-judges the labelled cases (judge drift)
_JUDGE_DRIFT_SECONDS = 300.0


def _settings(options: DemoOptions) -> Settings:
    if not options.dataset.is_file():
        raise ConfigError(f"golden set {options.dataset} not found: pass --dataset FILE")
    target = HttpTargetConfig(name="reference", url=f"http://127.0.0.1:{options.rag_port}/rag")
    job = JobConfig(
        target="reference", dataset=options.dataset, interval_seconds=options.interval_seconds
    )
    labels = options.dataset.parent / "labels" / options.dataset.name
    # the reference service's demo judge (a deterministic stand-in, not a model): the demo
    # shows judged metrics beside the deterministic ones, and judge drift on the shipped labels
    judge = JudgeConfig(
        url=f"http://127.0.0.1:{options.rag_port}/v1/chat/completions",
        model="reference-demo-judge",
        drift_labels=labels if labels.is_file() else None,
        drift_interval_seconds=_JUDGE_DRIFT_SECONDS if labels.is_file() else None,
    )
    return Settings(
        listen=options.listen,
        reports_dir=options.reports_dir,
        targets=(target,),
        jobs=(job,),
        judge=judge,
        shutdown_grace_seconds=_SHUTDOWN_GRACE_SECONDS,
        log_cases=False,  # the console shows one line per run; the reports hold every case
    )


def _banner(options: DemoOptions, prometheus: PrometheusUi, daemon_port: int) -> str:
    host, _ = parse_listen(options.listen)
    base = f"http://{host}:{daemon_port}"
    rag = f"http://127.0.0.1:{options.rag_port}"
    lines = [
        "",
        "evaluator demo is running (Ctrl-C stops everything)",
        f"  reference RAG service  {rag}/rag",
        f"  status page            {base}/",
        f"  metrics                {base}/metrics",
        f"  health                 {base}/healthz   {base}/readyz",
        f"  latest report          {base}/reports/latest",
    ]
    lines.append(f"  Prometheus             {prometheus.url or prometheus.reason}")
    lines += [
        f"  golden set             {options.dataset}, every {options.interval_seconds:g}s",
        "",
        "Flip a failure mode and watch the metrics move (modes: retrieval_degraded,",
        "rerank_degraded, answer_degraded, citations_degraded, slow_model, server_errors):",
        f'  curl -X PUT {rag}/admin/failure-modes -d \'{{"modes": ["rerank_degraded"]}}\'',
        f"  curl -X PUT {rag}/admin/failure-modes -d '{{\"modes\": []}}'",
        "",
    ]
    return "\n".join(lines)


async def _serve(settings: Settings, options: DemoOptions, prometheus: PrometheusUi) -> None:
    daemon = Daemon(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await daemon.start()
    # the command's own output on stdout; the daemon's log lines go to stderr
    print(_banner(options, prometheus, daemon.http.port), flush=True)
    try:
        await stop.wait()
    finally:
        await daemon.stop()


def run_demo(options: DemoOptions) -> int:
    """Start everything, block until SIGINT/SIGTERM, stop everything; exit code 0."""
    settings = _settings(options)
    without_created_series()  # as `evaluator serve` does
    children: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="evaluator-demo-") as tmp:
        try:
            _start_reference(options, children)
            prometheus = _start_prometheus(options, Path(tmp), children)
            asyncio.run(_serve(settings, options, prometheus))
        finally:
            for child in reversed(children):
                child.terminate()
            for child in reversed(children):
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        child.wait(timeout=5)
    return ExitCode.OK

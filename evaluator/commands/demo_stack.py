"""The embedded default: the reference RAG service, the daemon against it, and Prometheus.

One command, one process tree: the reference service (and Prometheus, when its binary is on
the machine) run as child processes; the daemon runs in this process. Ctrl-C stops all.

Each port is checked before anything starts: a taken RAG or daemon port stops the demo with
the address and the flag to change (a RAG port answered by another service would have been
evaluated in the reference service's place), a taken Prometheus port leaves Prometheus out
with the same words in the banner. Prometheus loads the alert and recording rules of the
source tree's ``deploy/prometheus/rules``, or the copy shipped in the package.

Before the daemon starts, one run of the golden set is recorded as the job's baseline (the
demo's first complete run), judged by the demo's gate rules (``data/demo_gates.toml``): every
later run is gated against it, so a failure mode switched on turns the status page red at
the next complete run, with the failing rule in words and the run where it began.
The children run in process groups of their own, so a terminal's Ctrl-C reaches only this
process, which stops the daemon first and its children after: a run in flight never sees
its target vanish.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import structlog
from pydantic import ValidationError

from evaluator.commands.common import plan_job, streamed_run
from evaluator.commands.gcpolicy import freeze_startup
from evaluator.commands.slo_rules import DEFAULT_RUNBOOK_BASE, render_rules, slo_rules
from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.config.slo import SloConfig
from evaluator.daemon import Daemon
from evaluator.daemon.publish import run_outcome
from evaluator.daemon.server import parse_listen
from evaluator.daemon.service import without_created_series
from evaluator.errors import ConfigError, EvaluatorError, ExitCode
from evaluator.judge.settings import JudgeConfig
from evaluator.run.runner import new_run_id

__all__ = ["DemoOptions", "PrometheusUi", "run_demo"]

log = structlog.get_logger("evaluator.demo")

#: How long Ctrl-C lets a run in flight finish before cancelling it. A healthy run takes
#: well under a second; under ``slow_model`` one takes about a minute, and a demo must
#: not hang that long (the daemon's own default is 30 s).
_SHUTDOWN_GRACE_SECONDS = 2.0


#: the gate rules every run of the demo is judged by against its baseline (packaged: a
#: loopback latency ceiling instead of the built-in relative P95 rule, see the file)
DEMO_GATES = Path(str(resources.files("evaluator.commands").joinpath("data/demo_gates.toml")))
#: the baselines' file names in the demo's reports folder (the golden set's, the
#: conversations')
BASELINE_FILE = "baseline.json"
CONVERSATIONS_BASELINE_FILE = "baseline-conversations.json"


#: the golden set of the source tree, which the demo runs when started there
SOURCE_GOLDEN_SET = Path("evals/rag_cases.jsonl")
#: the conversations of the source tree, the demo's second job when started there
SOURCE_CONVERSATIONS = Path("evals/conversations.jsonl")
#: the Prometheus rules of the source tree, which the demo's Prometheus loads when there
SOURCE_RULES = Path("deploy/prometheus/rules")


def default_golden_set(cwd: Path | None = None) -> Path:
    """``evals/rag_cases.jsonl`` in the source tree (edits there show in the demo), else the
    same file shipped in the package, so ``evaluator demo`` runs wherever it is installed
    (tests/demo/test_demo_installed.py keeps the two identical)."""
    return _source_or_packaged(SOURCE_GOLDEN_SET, cwd)


def default_conversations(cwd: Path | None = None) -> Path:
    """``evals/conversations.jsonl`` in the source tree, else its copy in the package."""
    return _source_or_packaged(SOURCE_CONVERSATIONS, cwd)


def _source_or_packaged(source: Path, cwd: Path | None) -> Path:
    """``source`` when the demo runs in the source tree, else its copy in the package."""
    here = source if cwd is None else cwd / source
    if here.is_file():
        return source
    return Path(str(resources.files("evaluator.commands").joinpath(f"data/{source.name}")))


def default_rules_dir(cwd: Path | None = None) -> Path:
    """``deploy/prometheus/rules`` in the source tree, else the copy shipped in the package
    (tests/demo/test_demo_installed.py keeps the two identical), so an installed demo's
    Prometheus has the alerts too."""
    here = SOURCE_RULES if cwd is None else cwd / SOURCE_RULES
    if here.is_dir():
        return SOURCE_RULES
    return Path(str(resources.files("evaluator.commands").joinpath("data/rules")))


def taken(port: int) -> str | None:
    """Why 127.0.0.1:``port`` cannot be listened on (another process has it), or None.

    Bound with SO_REUSEADDR, as the servers bind: a connection of an earlier run still in
    TIME_WAIT does not count, a listener does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return f"127.0.0.1:{port} is taken by another process"
    return None


@dataclass(frozen=True)
class DemoOptions:
    """Where the demo's parts listen and how often the golden set runs."""

    #: the source tree's golden set when the demo runs there, else the copy in the package
    dataset: Path = field(default_factory=lambda: default_golden_set())
    #: the second job's golden set of conversations (None: the demo runs the first alone)
    conversations: Path | None = field(default_factory=lambda: default_conversations())
    rag_port: int = 8900
    listen: str = "127.0.0.1:9464"
    prometheus_port: int = 9090
    interval_seconds: float = 30.0
    reports_dir: Path = Path("reports/demo")
    failure_modes: tuple[str, ...] = ()
    prometheus: bool = True
    rules_dir: Path = field(default_factory=lambda: default_rules_dir())


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


def _slo_rules(options: DemoOptions, folder: Path) -> Path:
    """The demo's SLO rules, generated as `evaluator slo rules` does, into ``folder``."""
    path = folder / SLO_RULES_FILE
    path.write_text(
        render_rules(slo_rules(_settings(options)), "evaluator demo", DEFAULT_RUNBOOK_BASE),
        encoding="utf-8",
    )
    return path


def _prometheus_config(options: DemoOptions, folder: Path) -> Path:
    host, port = parse_listen(options.listen)
    shipped = sorted(options.rules_dir.glob("*.yml")) if options.rules_dir.is_dir() else []
    # the bundle's slo.yml is generated for the bundle's own SLOs: the demo generates its own
    rules = [p for p in shipped if p.name != SLO_RULES_FILE] + [_slo_rules(options, folder)]
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
    busy = taken(options.prometheus_port)
    if busy is not None:
        reason = f"{busy}; pass --prometheus-port with a free port, or --no-prometheus"
        log.warning("prometheus_not_started", reason=reason)
        return PrometheusUi(reason=f"not started: {reason}")
    config = _prometheus_config(options, folder)
    output = folder / "prometheus.log"
    with output.open("wb") as sink:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{options.prometheus_port}",
            ],
            stdout=sink,
            stderr=sink,
            process_group=0,
        )
    children.append(proc)  # before waiting: Ctrl-C meanwhile must stop it too
    base = f"http://127.0.0.1:{options.prometheus_port}"
    try:
        _wait_http(f"{base}/-/ready", 30, proc)
    except EvaluatorError as exc:
        # Prometheus says why on its own output: its last line joins the reason
        said = output.read_text("utf-8", errors="replace").strip().splitlines()[-1:]
        reason = f"{exc}: {said[0][:300]}" if said else str(exc)
        log.warning("prometheus_not_started", reason=reason)
        proc.terminate()  # run_demo waits for it
        return PrometheusUi(reason=f"did not start: {reason}")
    return PrometheusUi(url=_alerts_page(base))


#: how often the demo re-judges the labelled cases (judge drift)
_JUDGE_DRIFT_SECONDS = 300.0


#: the generated SLO rules' file name, in the bundle and in the demo's folder
SLO_RULES_FILE = "slo.yml"

#: The demo's SLO: 70% of the golden questions answered right over a day. The reference
#: service answers 74.6% right (a burn rate of 0.85), answer_degraded 23% (2.57): the
#: fast-burn page (2m/1m at 2.167x, the window scaled to a day) fires within minutes.
DEMO_SLO = SloConfig(
    name="answers", job="reference", sli="answer_correct", objective=0.7, window="1d"
)


def _jobs(options: DemoOptions, baselines: Mapping[Path, Path]) -> tuple[JobConfig, ...]:
    """The demo's jobs: the golden set, and the conversations beside it; each gated against
    its baseline in ``baselines`` (by golden set) once there is one."""
    datasets = [options.dataset]
    if options.conversations is not None:
        if not options.conversations.is_file():
            raise ConfigError(f"conversations {options.conversations} not found")
        datasets.append(options.conversations)
    return tuple(
        JobConfig(
            target="reference",
            dataset=dataset,
            interval_seconds=options.interval_seconds,
            baseline=baselines.get(dataset),
        )
        for dataset in datasets
    )


def _settings(options: DemoOptions, baselines: Mapping[Path, Path] | None = None) -> Settings:
    if not options.dataset.is_file():
        raise ConfigError(f"golden set {options.dataset} not found: pass --dataset FILE")
    target = HttpTargetConfig(name="reference", url=f"http://127.0.0.1:{options.rag_port}/rag")
    jobs = _jobs(options, baselines or {})
    labels = options.dataset.parent / "labels" / options.dataset.name
    # the reference service's demo judge (a deterministic stand-in, not a model): the demo
    # shows judged metrics beside the deterministic ones, and judge drift on the shipped labels
    judge = JudgeConfig(
        url=f"http://127.0.0.1:{options.rag_port}/v1/chat/completions",
        model="reference-demo-judge",
        drift_labels=labels if labels.is_file() else None,
        drift_interval_seconds=_JUDGE_DRIFT_SECONDS if labels.is_file() else None,
    )
    try:
        return Settings(
            listen=options.listen,
            reports_dir=options.reports_dir,
            targets=(target,),
            jobs=jobs,
            judge=judge,
            gates_file=DEMO_GATES,
            shutdown_grace_seconds=_SHUTDOWN_GRACE_SECONDS,
            log_cases=False,  # the console shows one line per run; the reports hold every case
            # the golden set's job alone: the conversations are answered otherwise
            slos=(DEMO_SLO.model_copy(update={"job": (jobs[0].key,)}),),
        )
    except ValidationError as exc:  # the SLO's day cannot hold enough runs of --interval
        problem = exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
        raise ConfigError(f"--interval {options.interval_seconds:g}: {problem}") from None


@dataclass(frozen=True)
class Baseline:
    """The demo's baseline report, or why there is none."""

    path: Path | None
    reason: str = ""


def record_baseline(
    settings: Settings, folder: Path, job: str | None = None, name: str = BASELINE_FILE
) -> Baseline:
    """One run of the demo's ``job`` (the first by default), saved as ``folder/name`` when
    it is complete.

    A run that is not complete (the service started with ``server_errors``, say) makes no
    baseline: the daemon then runs ungated, and the banner says why.

    Raises:
        KeyboardInterrupt: Ctrl-C during the run (nothing else is started).
    """
    plan = plan_job(settings, job)
    path = folder / name
    report, _ = streamed_run(plan, 1, path, new_run_id())
    if report.interrupted:
        path.unlink(missing_ok=True)
        raise KeyboardInterrupt
    outcome = run_outcome(report.summary, settings.error_ratio_limit)
    if outcome != "complete":
        path.unlink(missing_ok=True)
        return Baseline(None, f"none: the first run was {outcome}, so runs are not gated")
    log.info("demo_baseline_recorded", path=str(path), run_id=report.run_id)
    return Baseline(path)


def _baselines(settings: Settings, options: DemoOptions) -> tuple[Baseline, Baseline | None]:
    """The golden set's baseline and the conversations' (None: no conversations)."""
    first = record_baseline(settings, options.reports_dir)
    if options.conversations is None:
        return first, None
    second = record_baseline(
        settings, options.reports_dir, settings.jobs[1].key, CONVERSATIONS_BASELINE_FILE
    )
    return first, second


def _banner(
    options: DemoOptions,
    prometheus: PrometheusUi,
    daemon_port: int,
    baseline: Baseline | None = None,
) -> str:
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
    if baseline is None:
        baseline = Baseline(options.reports_dir / BASELINE_FILE)
    recorded = f"{baseline.path}, the first complete run" if baseline.path else baseline.reason
    lines += [
        f"  golden set             {options.dataset}, every {options.interval_seconds:g}s",
        f"  baseline               {recorded}",
    ]
    if options.conversations is not None:
        lines.append(f"  conversations          {options.conversations}, a second job")
    lines += [
        "",
        "Flip a failure mode and watch the metrics move (modes: retrieval_degraded,",
        "rerank_degraded, answer_degraded, citations_degraded, slow_model, server_errors,",
        "history_ignored):",
        f'  curl -X PUT {rag}/admin/failure-modes -d \'{{"modes": ["rerank_degraded"]}}\'',
        f"  curl -X PUT {rag}/admin/failure-modes -d '{{\"modes\": []}}'",
        "The status page turns red within two runs and says why: the failing gate rule,",
        "the newly failing cases, and the run where the change began. Its SLO, 70% of",
        "the answers right over a day, pages within minutes of answer_degraded:",
        "RagEvalSLOFastBurn on the Prometheus link.",
    ]
    if options.conversations is not None:
        lines += [
            "history_ignored turns the conversations job red (answer_accuracy@2 and",
            "conversation_success fail) while the golden set stays green: first turns hold,",
            "follow-ups fall; RagEvalFollowUpsLoseContext fires after its 30 minutes.",
        ]
    return "\n".join([*lines, ""])


async def _serve(
    settings: Settings, options: DemoOptions, prometheus: PrometheusUi, baseline: Baseline
) -> None:
    daemon = Daemon(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await daemon.start()
    # the command's own output on stdout; the daemon's log lines go to stderr
    print(_banner(options, prometheus, daemon.http.port, baseline), flush=True)
    try:
        await stop.wait()
    finally:
        await daemon.stop()


def _check_ports(options: DemoOptions) -> None:
    """The RAG service's and the daemon's ports are free (Prometheus's is checked when it
    starts: without it the demo still runs).

    Raises:
        ConfigError: naming the address and the flag that changes it.
    """
    busy = taken(options.rag_port)
    if busy is not None:
        raise ConfigError(
            f"--rag-port {options.rag_port}: {busy}; pass --rag-port with a free port"
        )
    host, port = parse_listen(options.listen)
    if port and host in ("127.0.0.1", "localhost"):
        busy = taken(port)
        if busy is not None:
            raise ConfigError(
                f"--listen {options.listen}: {busy}; pass --listen with a free HOST:PORT"
            )


def run_demo(options: DemoOptions) -> int:
    """Start everything, block until SIGINT/SIGTERM, stop everything; exit code 0."""
    settings = _settings(options)
    _check_ports(options)
    without_created_series()  # as `evaluator serve` does
    children: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="evaluator-demo-") as tmp:
        try:
            _start_reference(options, children)
            baseline, conversations = _baselines(settings, options)
            recorded = {options.dataset: baseline.path}
            if conversations is not None and options.conversations is not None:
                recorded[options.conversations] = conversations.path
            settings = _settings(options, {k: v for k, v in recorded.items() if v is not None})
            prometheus = _start_prometheus(options, Path(tmp), children)
            freeze_startup()  # the daemon's collector policy, as `evaluator serve` has it
            asyncio.run(_serve(settings, options, prometheus, baseline))
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

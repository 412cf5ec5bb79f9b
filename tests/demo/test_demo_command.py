"""`evaluator demo` as a newcomer runs it: one command, live metrics, Ctrl-C stops everything.

The demo runs as a subprocess in a session of its own, from the source tree (as ``make demo``
does), on free loopback ports. "Ctrl-C" is SIGINT to the demo's process group, which is
what a terminal sends; every test checks that afterwards no child is left running and
that none of the demo's ports still accepts connections.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluator.commands.demo_stack import (
    CONVERSATIONS_BASELINE_FILE,
    DemoOptions,
    PrometheusUi,
    _banner,
)
from tests.support.interrupts import as_at_a_terminal
from tests.support.ports import free_port
from tests.support.prometheus import parse_log_lines, require_binary

try:
    import psutil
except ImportError:  # the bench extra; `make` installs it, the port checks do not need it
    psutil = None  # type: ignore[assignment]

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
GOLDEN_SET = REPO / "evals" / "rag_cases.jsonl"
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
HOST = "127.0.0.1"

#: the README's quick-start table, baseline row (recall@5, MRR, nDCG@5, citation precision,
#: accuracy), to its three decimals; tests/reference/test_reference_quality.py pins the same
README_BASELINE = {
    "rag_eval_recall_at_k": 0.945,
    "rag_eval_mrr": 0.895,
    "rag_eval_ndcg_at_k": 0.903,
    "rag_eval_citation_precision": 0.790,
    "rag_eval_answer_accuracy": 0.746,
}
#: the issue: live metrics within 30 s of the venv being ready
LIVE_WITHIN_SECONDS = 30.0
#: Ctrl-C must stop the demo, its children included, within this
STOP_WITHIN_SECONDS = 15.0


def _golden_set_size() -> int:
    return sum(1 for line in GOLDEN_SET.read_text("utf-8").splitlines() if line.strip())


def _accepts_connections(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((HOST, port)) == 0


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def _demo_command(*args: str) -> list[str]:
    return as_at_a_terminal([EVALUATOR, "demo", *args])


@dataclass
class Demo:
    """A running ``evaluator demo``: its process, ports and output files."""

    proc: subprocess.Popen[bytes]
    rag_port: int
    daemon_port: int
    prometheus_port: int
    stdout_path: Path
    stderr_path: Path
    started: float
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=5.0))
    #: pids of the demo's children (reference service, Prometheus), read with psutil
    child_pids: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The demo daemon's base URL."""
        return f"http://{HOST}:{self.daemon_port}"

    @property
    def ports(self) -> dict[str, int]:
        """The port of each process of the demo, by its name in the banner."""
        return {
            "reference service": self.rag_port,
            "daemon": self.daemon_port,
            "prometheus": self.prometheus_port,
        }

    def banner(self) -> str:
        """What the demo prints on stdout (its log lines go to stderr)."""
        return self.stdout_path.read_text("utf-8", errors="replace")

    def logs(self) -> list[dict[str, Any]]:
        """The demo's log events so far."""
        return parse_log_lines(self.stderr_path.read_text("utf-8", errors="replace"))

    def diagnostics(self) -> str:
        """The ends of the demo's stderr and stdout, for a failing assertion."""
        return f"stderr:\n{_tail(self.stderr_path)}\nstdout:\n{_tail(self.stdout_path, 10)}"

    def get(self, path: str) -> httpx.Response:
        """GET ``path`` of the demo daemon."""
        return self.client.get(f"{self.url}{path}")

    def samples(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        """The /metrics scrape: sample name -> [(labels, value)]."""
        response = self.get("/metrics")
        assert 200 == response.status_code
        out: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in text_string_to_metric_families(response.text):
            for s in family.samples:
                out.setdefault(s.name, []).append((dict(s.labels), s.value))
        return out

    def wait_for_complete_run(self, timeout: float = 60.0, dataset: str = "rag_cases") -> float:
        """Poll /metrics until the golden set's job (``dataset``) has
        ``rag_eval_runs_total{outcome="complete"} >= 1``; seconds from the demo's start."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(httpx.TransportError):
                runs = self.samples().get("rag_eval_runs_total", [])
                if any(
                    lab.get("outcome") == "complete" and lab.get("dataset") == dataset and v >= 1
                    for lab, v in runs
                ):
                    return time.monotonic() - self.started
            if self.proc.poll() is not None:
                code = self.proc.returncode
                raise AssertionError(f"demo exited with {code}\n{self.diagnostics()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no complete run after {timeout}s\n{self.diagnostics()}")
            time.sleep(0.1)

    def ctrl_c(self, timeout: float = STOP_WITHIN_SECONDS) -> tuple[int, float]:
        """SIGINT to the demo's process group, as a terminal's Ctrl-C; (exit code, seconds)."""
        sent = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"demo still running {timeout}s after Ctrl-C\n{self.diagnostics()}"
            ) from exc
        return code, time.monotonic() - sent

    def assert_nothing_left(self) -> None:
        """No child process survives the demo and none of its ports accepts connections."""
        if psutil is not None:
            alive = [
                pid
                for pid in self.child_pids
                if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            ]
            assert [] == alive, f"children still running: {alive}"
        deadline = time.monotonic() + 5.0
        listening = {name: port for name, port in self.ports.items() if _accepts_connections(port)}
        while listening and time.monotonic() < deadline:  # a socket may take a moment to close
            time.sleep(0.1)
            listening = {n: p for n, p in listening.items() if _accepts_connections(p)}
        assert {} == listening, f"still accepting connections after the demo exited: {listening}"

    def kill(self) -> None:
        """Last resort after a failed test: SIGKILL the demo's group and its children."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in self.child_pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self.client.close()


def _of_job(
    samples: dict[str, list[tuple[dict[str, str], float]]], dataset: str
) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The samples of one of the demo's jobs (by its golden set)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for name, found in samples.items():
        kept = [(labels, v) for labels, v in found if labels.get("dataset") == dataset]
        if kept:
            out[name] = kept
    return out


def _wait_for_banner(demo: Demo, timeout: float) -> bool:
    """True once the banner is printed; False when the demo exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "evaluator demo is running" in demo.banner():
            return True
        if demo.proc.poll() is not None:
            return False
        time.sleep(0.05)
    raise AssertionError(f"no banner after {timeout}s\n{demo.diagnostics()}")


@contextlib.contextmanager
def run_demo(workdir: Path, *args: str, prometheus: bool) -> Iterator[Demo]:
    """``evaluator demo`` on free ports with a 5 s interval; killed on the way out if the
    test left it running. Retried on another set of ports when it exits at start (a port
    taken between choosing it and binding it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    env["PYTHONUNBUFFERED"] = "1"
    demo: Demo | None = None
    for attempt in range(3):
        out = workdir / f"demo-{attempt}"
        out.mkdir(parents=True)
        rag, daemon, prom = free_port(), free_port(), free_port()
        cmd = _demo_command(
            "--rag-port", str(rag), "--listen", f"{HOST}:{daemon}",
            "--prometheus-port", str(prom), "--interval", "5",
            "--reports-dir", str(out / "reports"), *args,
        )  # fmt: skip
        if not prometheus:
            cmd.append("--no-prometheus")
        started = time.monotonic()
        with (out / "stdout.txt").open("wb") as so, (out / "stderr.jsonl").open("wb") as se:
            proc = subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=so, stderr=se, start_new_session=True
            )
        demo = Demo(proc, rag, daemon, prom, out / "stdout.txt", out / "stderr.jsonl", started)
        if _wait_for_banner(demo, timeout=60.0):
            break
        demo.kill()
    else:
        assert demo is not None
        raise AssertionError(f"the demo did not start in 3 attempts\n{demo.diagnostics()}")
    if psutil is not None:
        demo.child_pids = [c.pid for c in psutil.Process(demo.proc.pid).children(recursive=True)]
    try:
        yield demo
    finally:
        if demo.proc.poll() is None:
            demo.kill()
        demo.client.close()


def _prometheus_checks(demo: Demo) -> None:
    """The demo's Prometheus is ready, loaded the project's rules and scraped rag_eval_mrr."""
    prom = f"http://{HOST}:{demo.prometheus_port}"
    with httpx.Client(base_url=prom, timeout=5.0) as client:
        assert 200 == client.get("/-/ready").status_code
        groups = client.get("/api/v1/rules").json()["data"]["groups"]
        assert groups, "no rule groups loaded from deploy/prometheus/rules"
        deadline = time.monotonic() + 30.0  # the demo's scrape interval is 5 s
        while True:
            query = {"query": 'rag_eval_mrr{dataset="rag_cases"}'}
            body = client.get("/api/v1/query", params=query).json()
            assert "success" == body["status"], body
            if body["data"]["result"]:
                break
            assert time.monotonic() < deadline, "Prometheus has no rag_eval_mrr after 30 s"
            time.sleep(0.5)
    (series,) = body["data"]["result"]
    assert "rag-evaluator" == series["metric"]["job"]
    assert README_BASELINE["rag_eval_mrr"] == pytest.approx(float(series["value"][1]), abs=5e-4)


@pytest.mark.parametrize(
    "prometheus",
    [
        pytest.param(False, id="no-prometheus"),
        pytest.param(True, id="with-prometheus", marks=pytest.mark.prometheus),
    ],
)
def test_demo_brings_up_live_metrics_and_stops_on_ctrl_c(tmp_path: Path, prometheus: bool) -> None:
    """The newcomer's path: banner, first complete run on /metrics within 30 s, health,
    the latest report, Prometheus when installed, then Ctrl-C: exit 0, nothing left."""
    if prometheus:
        require_binary("prometheus")  # skips, or fails when CI=true
    with run_demo(tmp_path, prometheus=prometheus) as demo:
        live_after = demo.wait_for_complete_run(timeout=60.0)
        print(f"\ndemo ({'with' if prometheus else 'no'} prometheus): live metrics after "
              f"{live_after:.2f}s")  # fmt: skip
        assert live_after < LIVE_WITHIN_SECONDS

        banner = demo.banner()
        rag = f"http://{HOST}:{demo.rag_port}"
        for line in (
            f"reference RAG service  {rag}/rag",
            f"status page            {demo.url}/",
            f"metrics                {demo.url}/metrics",
            f"health                 {demo.url}/healthz   {demo.url}/readyz",
            f"latest report          {demo.url}/reports/latest",
            f"golden set             {Path('evals/rag_cases.jsonl')}, every 5s",
            f"curl -X PUT {rag}/admin/failure-modes",
        ):
            assert line in banner, f"{line!r} not in the banner:\n{banner}"
        shown = re.search(r"Prometheus +(\S.*)", banner)
        assert shown is not None, banner
        if prometheus:  # the link works on the Prometheus installed here (Debian: classic UI)
            assert shown.group(1).startswith(f"http://{HOST}:{demo.prometheus_port}/"), banner
            assert 200 == httpx.get(shown.group(1), timeout=5).status_code, shown.group(1)
        else:
            assert "not started (--no-prometheus)" == shown.group(1), banner

        samples = _of_job(demo.samples(), "rag_cases")
        for name, expected in README_BASELINE.items():
            ((labels, value),) = samples[name]
            assert {"dataset": "rag_cases", "target": "reference"} == labels
            assert expected == pytest.approx(value, abs=5e-4), name
        assert 0.80 <= samples["rag_eval_recall_at_k"][0][1] < 1.0  # realistic, not perfect
        ((_, p95),) = samples["rag_eval_latency_p95_seconds"]
        assert 0.0 < p95 < 1.0
        ((_, errors),) = samples["rag_eval_error_ratio"]
        assert 0.0 == errors
        ((_, scored),) = samples["rag_eval_last_run_scored_cases"]
        assert _golden_set_size() == scored == 138

        # the demo judge judges each complete run, after the run's own metrics are out
        deadline = time.monotonic() + 30
        while "rag_eval_judged_fact_recall" not in _of_job(demo.samples(), "rag_cases"):
            assert time.monotonic() < deadline, "no judged figures after 30 s"
            time.sleep(0.2)
        judged_samples = _of_job(demo.samples(), "rag_cases")
        ((_, judged),) = judged_samples["rag_eval_judged_fact_recall"]
        assert judged == pytest.approx(0.746, abs=5e-4)
        ((_, compromised),) = judged_samples["rag_eval_judge_compromised"]
        assert 0 == compromised

        # the second job: the conversations, with their success and turns by position
        deadline = time.monotonic() + 30
        while "rag_eval_conversation_success" not in _of_job(demo.samples(), "conversations"):
            assert time.monotonic() < deadline, "no conversation figures after 30 s"
            time.sleep(0.2)
        conversations = _of_job(demo.samples(), "conversations")
        ((_, success),) = conversations["rag_eval_conversation_success"]
        assert success == pytest.approx(0.853, abs=5e-4)
        # gated against their own baseline, the demo's first run of them, and passing
        assert (demo.stdout_path.parent / "reports" / CONVERSATIONS_BASELINE_FILE).is_file()
        ((_, passing),) = conversations["rag_eval_gate_passing"]
        assert 1.0 == passing
        first_turns = [
            v
            for labels, v in conversations["rag_eval_quality_by_position"]
            if labels["metric"] == "answer_accuracy" and labels["position"] == "1"
        ]
        assert [1.0] == first_turns

        health = demo.get("/healthz")
        assert 200 == health.status_code
        assert 200 == demo.get("/readyz").status_code
        latest = demo.get("/reports/latest?target=reference&dataset=rag_cases")
        assert 200 == latest.status_code
        report = latest.json()
        assert 138 == report["case_count"] == len(report["cases"])
        assert "reference" == report["target"]
        assert 0 == report["error_count"]
        page = demo.get("/")  # the banner's status page shows the demo's jobs
        assert 200 == page.status_code
        assert "reference" in page.text and "rag_cases" in page.text
        assert "conversations" in page.text

        if prometheus:
            _prometheus_checks(demo)
            assert demo.proc.poll() is None

        if psutil is not None:  # the reference service, and Prometheus when started
            assert len(demo.child_pids) >= (2 if prometheus else 1), demo.child_pids
        code, took = demo.ctrl_c()
        print(f"demo: stopped {took:.2f}s after Ctrl-C")
        assert 0 == code, demo.diagnostics()
        demo.assert_nothing_left()
        stopped = [e for e in demo.logs() if e.get("event") == "daemon_stopped"]
        assert 1 == len(stopped), demo.diagnostics()
        assert "Traceback" not in demo.stderr_path.read_text("utf-8", errors="replace")


def _cases_scored(demo: Demo) -> float:
    with contextlib.suppress(httpx.TransportError):
        for labels, value in demo.samples().get("rag_eval_case_latency_seconds_count", []):
            if labels.get("target") == "reference":
                return value
    return 0.0


@pytest.mark.parametrize("signal_to", ["process-group", "demo-only"])
def test_ctrl_c_during_a_slow_run_stops_promptly_without_failing_the_service(
    tmp_path: Path, signal_to: str
) -> None:
    """Under ``slow_model`` a run takes ~50 s (138 cases x 1.5 s / 4 in flight), so Ctrl-C
    nearly always lands during one. The demo must still stop within 15 s, and it must stop
    the daemon before the reference service: a run that went on against a service already
    shut down would record a burst of connection errors and an incomplete run."""
    # the golden set alone: its baseline under slow_model already takes most of a minute
    with run_demo(
        tmp_path, "--failure-mode", "slow_model", "--no-conversations", prometheus=False
    ) as demo:
        deadline = time.monotonic() + 30.0
        while _cases_scored(demo) < 1:  # the first run is under way
            assert demo.proc.poll() is None, demo.diagnostics()
            assert time.monotonic() < deadline, f"no case scored\n{demo.diagnostics()}"
            time.sleep(0.1)
        if signal_to == "process-group":
            code, took = demo.ctrl_c()
        else:
            sent = time.monotonic()
            demo.proc.send_signal(signal.SIGINT)
            try:
                code = demo.proc.wait(STOP_WITHIN_SECONDS)
            except subprocess.TimeoutExpired as exc:
                raise AssertionError(
                    f"demo still running {STOP_WITHIN_SECONDS}s after SIGINT\n{demo.diagnostics()}"
                ) from exc
            took = time.monotonic() - sent
        print(f"\ndemo under slow_model ({signal_to}): stopped {took:.2f}s after SIGINT")
        assert 0 == code, demo.diagnostics()
        demo.assert_nothing_left()
        logs = demo.logs()
        connect_errors = [e for e in logs if e.get("error_kind") == "connect"]
        assert [] == connect_errors[:3], "the run went on against a stopped reference service"
        runs = [e for e in logs if e.get("event") == "run"]
        assert all(e.get("outcome") != "incomplete" for e in runs), json.dumps(runs)[:2000]
        assert any(e.get("event") == "daemon_stopped" for e in logs), demo.diagnostics()


def _cmdline(process: Any) -> str:
    """A psutil process's command line; empty when it is gone or not readable."""
    assert psutil is not None
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


@pytest.mark.skipif(psutil is None, reason="needs psutil (the bench extra) to see the child")
def test_ctrl_c_while_starting_leaves_no_child(tmp_path: Path) -> None:
    """Ctrl-C while the demo waits for its reference service to come up (it builds its
    index first) stops the demo and the service it had already started."""
    assert psutil is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    rag, daemon = free_port(), free_port()
    cmd = _demo_command(
        "--no-prometheus", "--rag-port", str(rag),
        "--listen", f"{HOST}:{daemon}", "--reports-dir", str(tmp_path / "reports"),
    )  # fmt: skip
    with (tmp_path / "stderr.txt").open("wb") as err:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    children: list[int] = []
    try:
        deadline = time.monotonic() + 30.0
        # the reference service runs (it has exec'd: Ctrl-C within the milliseconds between
        # fork and exec, inside subprocess.Popen, is not what this test is about)
        while not children:
            assert proc.poll() is None, _tail(tmp_path / "stderr.txt")
            assert time.monotonic() < deadline, "the demo started no child within 30 s"
            children = [
                c.pid
                for c in psutil.Process(proc.pid).children(recursive=True)
                if "evaluator.reference" in _cmdline(c)
            ]
            time.sleep(0.01)
        assert not _accepts_connections(rag), "the service was up already: too late to test"
        os.killpg(proc.pid, signal.SIGINT)
        assert 130 == proc.wait(STOP_WITHIN_SECONDS), _tail(tmp_path / "stderr.txt")
        assert "evaluator: interrupted" in _tail(tmp_path / "stderr.txt")
        deadline = time.monotonic() + 5.0
        alive = children
        while alive and time.monotonic() < deadline:
            alive = [
                pid
                for pid in alive
                if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            ]
            time.sleep(0.1)
        assert [] == alive, f"children left running after Ctrl-C at start: {alive}"
        assert not _accepts_connections(rag)
    finally:
        for pid in [proc.pid, *children]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)


def test_readme_quick_start_shows_the_banner_the_demo_prints() -> None:
    """The README's quick start quotes the banner, with the default ports, line for line."""
    readme = (REPO / "README.md").read_text("utf-8")
    block = re.search(r"```text\n(evaluator demo is running.*?)```", readme, re.S)
    assert block is not None, "no banner in the README's quick start"
    ui = PrometheusUi(url="http://127.0.0.1:9090/classic/alerts")  # Debian's Prometheus
    banner = _banner(DemoOptions(), prometheus=ui, daemon_port=9464)

    assert banner.strip("\n") == block.group(1).strip("\n")


def test_banner_says_why_there_is_no_prometheus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a prometheus binary the banner says so, and how to get one."""
    from evaluator.commands.demo_stack import _start_prometheus

    monkeypatch.setenv("PATH", str(tmp_path))  # no prometheus here
    ui = _start_prometheus(DemoOptions(), tmp_path, [])
    banner = _banner(DemoOptions(), prometheus=ui, daemon_port=9464)
    assert ui.url is None
    reason = "not started: no prometheus on PATH (Debian: apt-get install prometheus)"
    assert f"Prometheus             {reason}" in banner


def _slo_alerts(prom: httpx.Client) -> list[dict[str, Any]]:
    """The SLO burn-rate alerts the demo's Prometheus holds, pending or firing."""
    body = prom.get("/api/v1/alerts").json()
    assert "success" == body["status"], body
    return [a for a in body["data"]["alerts"] if a["labels"]["alertname"].startswith("RagEvalSLO")]


@pytest.mark.prometheus
def test_answer_degraded_pages_the_demos_slo_within_minutes(tmp_path: Path) -> None:
    """The README's promise: the demo's Prometheus loads the demo's own SLO rules (not the
    bundle's), a healthy service fires no SLO alert, and `answer_degraded` makes
    RagEvalSLOFastBurn fire within minutes (its 2m/1m or 12m/1m page)."""
    require_binary("prometheus")  # skips, or fails when CI=true
    with run_demo(tmp_path, prometheus=True) as demo:
        demo.wait_for_complete_run(timeout=60.0)
        prom = httpx.Client(base_url=f"http://{HOST}:{demo.prometheus_port}", timeout=5.0)
        groups = {g["name"] for g in prom.get("/api/v1/rules").json()["data"]["groups"]}
        assert "rag-eval-slo-answers" in groups and "rag-eval-slo-errors" not in groups
        deadline = time.monotonic() + 60.0  # healthy runs fill the page's 2-minute window
        while time.monotonic() < deadline:
            assert [] == _slo_alerts(prom)
            time.sleep(2.0)
        rag = f"http://{HOST}:{demo.rag_port}"
        flipped = time.monotonic()
        httpx.put(f"{rag}/admin/failure-modes", json={"modes": ["answer_degraded"]}, timeout=5)
        firing: list[dict[str, Any]] = []
        while not firing:
            assert time.monotonic() - flipped < 300, f"no page after 5 minutes: {_slo_alerts(prom)}"
            alerts = _slo_alerts(prom)
            firing = [a for a in alerts if a["state"] == "firing" and
                      a["labels"]["alertname"] == "RagEvalSLOFastBurn"]  # fmt: skip
            time.sleep(2.0)
        print(f"\ndemo: RagEvalSLOFastBurn fired {time.monotonic() - flipped:.0f}s after the flip")
        # either page pair: in a fresh demo the 12m window holds little healthy history
        labels = {k: firing[0]["labels"][k] for k in ("slo", "severity")}
        assert {"slo": "answers", "severity": "critical"} == labels
        assert firing[0]["labels"]["long_window"] in ("2m", "12m")
        prom.close()
        code, _ = demo.ctrl_c()
        assert 0 == code, demo.diagnostics()
        demo.assert_nothing_left()

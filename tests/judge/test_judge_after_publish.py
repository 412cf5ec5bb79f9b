"""The target's run is published first (issue 38.5): the daemon publishes a run (report,
metrics, history, SLO events) before its judge starts, a judge slower than the run delays
only the judged figures (the judged SLO events counted when they arrive), and a SIGTERM
while the judge hangs never discards the finished run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx
import pytest

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.config.slo import SloConfig
from evaluator.history.store import HistoryStore
from evaluator.judge.settings import JudgeConfig
from tests.judge import calibrations
from tests.judge.test_cli_judge import _CASES, _REPLIES
from tests.support.inprocess import run_bounded, running, until
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))
LABELS = {"target": "loop", "dataset": "golden"}


def _golden(tmp: Path) -> Path:
    golden = tmp / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(c) for c in _CASES) + "\n")
    return golden


def _settings(tmp: Path, rag: str, judge: str) -> Settings:
    """One job judged by ``m`` (calibrated for fact support) and a judged SLO on it."""
    reports = tmp / "reports"
    reports.mkdir()
    calibrations.write(reports, calibrations.entry("m"))
    return Settings(
        targets=(HttpTargetConfig(name="loop", url=rag, timeout_seconds=5),),
        jobs=(
            JobConfig(
                target="loop", dataset=_golden(tmp), interval_seconds=3600, run_at_start=True
            ),
        ),
        judge=JudgeConfig(url=judge, model="m"),
        slos=(
            SloConfig(name="facts", job="loop", sli="judged", objective=0.9, check="fact_support"),
        ),
        reports_dir=reports,
        listen="127.0.0.1:0",
        shutdown_grace_seconds=5,
    )


def test_the_run_is_published_before_its_judge_and_judged_slo_events_come_with_the_verdicts(
    tmp_path: Path,
) -> None:
    """While the judge holds its verdicts the run is served, written, counted and in history
    with no judge block and no judged SLO event; when the verdicts arrive, the same report
    (one file) gains its judge block and the judged SLO counts its events, on /metrics and
    in the history store, once."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("held") as judge:
        settings = _settings(tmp_path, rag.url, judge.url)

        async def body() -> None:
            async with running(settings) as daemon:
                job = daemon.jobs[0]

                def sample(name: str, **extra: str) -> float | None:
                    return daemon.registry.get_sample_value(name, {**LABELS, **extra})

                def slo(outcome: str) -> float | None:
                    return sample("rag_eval_slo_events_total", slo="facts", outcome=outcome)

                await until(lambda: job.state.report is not None and bool(judge.requests))
                published = job.state.report
                assert published is not None and published.judge is None
                on_disk = json.loads((job.store.folder / "latest.json").read_text("utf-8"))
                assert (published.run_id, None) == (on_disk["run_id"], on_disk.get("judge"))
                assert 1 == sample("rag_eval_runs_total", outcome="complete")
                assert (0, 0) == (slo("good"), slo("bad"))
                assert sample("rag_eval_judged_fact_recall") is None

                judge.release()
                await until(
                    lambda: job.state.report is not None and job.state.report.judge is not None
                )
                judged = job.state.report
                assert judged is not None and published.run_id == judged.run_id
                # refund's answer states its fact, shipping's does not
                assert (1, 1) == (slo("good"), slo("bad"))
                assert 0.5 == sample("rag_eval_judged_fact_recall")
                on_disk = json.loads((job.store.folder / "latest.json").read_text("utf-8"))
                assert "m" == on_disk["judge"]["model"]
                assert 1 == len(
                    [p for p in job.store.folder.glob("*.json") if p.name != "latest.json"]
                )
                store = HistoryStore(settings.reports_dir)
                await until(lambda: bool(store.slo_events("facts", 0)))
                assert [(1, 1)] == [(g, b) for _, g, b in store.slo_events("facts", 0)]
                assert 1 == sample("rag_eval_runs_total", outcome="complete")

        run_bounded(body, timeout=60)


def test_a_judge_slower_than_the_interval_never_holds_the_next_run(tmp_path: Path) -> None:
    """While the judge holds its verdicts on the first run, the job's later runs still run
    and are published (none skipped, none judged: the judge is busy); when the verdicts
    arrive, the first run's own report gains its judge block while ``latest.json`` stays
    the later run's, and the judged SLO counts the first run's events."""
    with LoopbackServer(_REPLIES) as rag, LoopbackJudge("held") as judge:
        settings = _settings(tmp_path, rag.url, judge.url)
        settings = settings.model_copy(
            update={"jobs": (settings.jobs[0].model_copy(update={"interval_seconds": 0.5}),)}
        )

        async def body() -> None:
            async with running(settings) as daemon:
                job = daemon.jobs[0]

                def sample(name: str, **extra: str) -> float | None:
                    return daemon.registry.get_sample_value(name, {**LABELS, **extra})

                await until(lambda: job.state.report is not None and bool(judge.requests))
                first = job.state.report
                assert first is not None
                await until(lambda: (sample("rag_eval_runs_total", outcome="complete") or 0) >= 3)
                assert 0 == (sample("rag_eval_runs_total", outcome="skipped") or 0)
                judge.release()
                facts = {"slo": "facts", "outcome": "good"}
                await until(lambda: (sample("rag_eval_slo_events_total", **facts) or 0) >= 1)
                kept = json.loads(job.store.path_of(first).read_text("utf-8"))
                latest = json.loads((job.store.folder / "latest.json").read_text("utf-8"))
                assert ("m", True) == (kept["judge"]["model"], latest["run_id"] != first.run_id)

        run_bounded(body, timeout=60)


def _serve(
    tmp: Path, rag: LoopbackServer, judge: LoopbackJudge, port: int, log: IO[bytes]
) -> subprocess.Popen[bytes]:
    """``evaluator serve`` of one job judged by ``judge`` (calls time out after 120 s)."""
    config = tmp / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp / "reports"}"\nlisten = "127.0.0.1:{port}"\n'
        "shutdown_grace_seconds = 1\n"
        f'[[targets]]\nname = "loop"\nurl = "{rag.url}"\n'
        f'[[jobs]]\ntarget = "loop"\ndataset = "{_golden(tmp)}"\ninterval_seconds = 3600\n'
        f'[judge]\nurl = "{judge.url}"\nmodel = "m"\ntimeout_seconds = 120\n'
    )
    return subprocess.Popen(
        [EXE, "serve", "--config", str(config)], stdout=log, stderr=log, cwd=tmp
    )


def _published(
    url: str, process: subprocess.Popen[bytes], judge: LoopbackJudge
) -> dict[str, object]:
    """The run /reports/latest serves once the judge is hanging on its calls."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "evaluator serve died"
        try:
            latest = httpx.get(f"{url}/reports/latest", timeout=5)
        except httpx.TransportError:
            latest = None
        if latest is not None and latest.status_code == 200 and judge.requests:
            report: dict[str, object] = latest.json()
            return report
        time.sleep(0.1)
    raise AssertionError("no run published within 60 s")


#: judges that keep a judged pass going for minutes: one that never answers (the audit's
#: reproduction), one whose every verdict takes 8 s (the loopback server's stop waits for
#: it: no longer), one that answers every call 429 with Retry-After: 60
SLOW_JUDGES = {
    "hanging": lambda: LoopbackJudge("hang"),
    "dripping": lambda: LoopbackJudge(latency=8.0),
    "429-storming": lambda: LoopbackJudge(rate_limit=0, retry_after="60"),
}


@pytest.mark.parametrize("kind", list(SLOW_JUDGES))
def test_sigterm_while_the_judge_works_keeps_the_finished_run(tmp_path: Path, kind: str) -> None:
    """A judge that hangs, drips or storms 429s: the run is served over HTTP and counted
    while the judge works; SIGTERM stops the daemon (exit 0) and the run's report stays on
    disk; before, the run waited for its judge and SIGTERM discarded it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        rag = stack.enter_context(LoopbackServer(_REPLIES))
        judge = stack.enter_context(SLOW_JUDGES[kind]())
        log = stack.enter_context((tmp_path / "serve.log").open("wb"))
        process = _serve(tmp_path, rag, judge, port, log)
        try:
            served = _published(url, process, judge)
            metrics = httpx.get(f"{url}/metrics", timeout=5).text
            os.kill(process.pid, signal.SIGTERM)
            assert 0 == process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert served.get("judge") is None
    complete = 'rag_eval_runs_total{dataset="golden",outcome="complete",target="loop"} 1.0'
    assert complete in metrics
    folder = next(p.parent for p in (tmp_path / "reports").glob("*/latest.json"))
    kept = json.loads((folder / "latest.json").read_text("utf-8"))
    assert served["run_id"] == kept["run_id"]
    assert 1 == len([p for p in folder.glob("*.json") if p.name != "latest.json"])

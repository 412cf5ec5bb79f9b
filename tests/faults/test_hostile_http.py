"""Hostile HTTP against a real ``evaluator serve``: decompression bombs and garbled HTTP.

One daemon process runs one job per attack, each against its own raw loopback server
(:class:`~tests.support.rawhttp.RawServer`) that answers every request with the same bytes:

- bombs: 256 MiB of zeros as ``gzip, gzip`` (about 2 KB on the wire), ``br`` and
  ``deflate, br``; a chain of three codings; and a well-formed gzip body as the control;
- garbled HTTP: a bad status line, an invalid chunk size, a header beyond every limit.

While the jobs run, two threads poll ``/healthz`` and ``/metrics``. What must hold: every
bomb ends in ``response_too_large`` and every over-long chain and garbled response in
``bad_response``, none retried; the daemon's resident memory stays within a bound far below
one decoded bomb (they run concurrently, 2 cases per job); ``/healthz`` answers every poll.
The bound is on bytes, not on time: the worst ``/healthz`` latency is only reported.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluator.daemon.report_store import LATEST, job_folder_name
from tests.faults.raw_responses import MiB, bombs, garbled
from tests.support.prometheus import DaemonProcess
from tests.support.rawhttp import RawServer

pytestmark = pytest.mark.e2e

CAP = 64 * 1024
#: headroom over the daemon's memory before the attacks: a tenth of a single bomb
RSS_HEADROOM = 96 * MiB
RUNS_PER_JOB = 2


def _attacks() -> dict[str, tuple[bytes, str | None]]:
    """Job name -> (raw response, error kind every case must end in; None: scored)."""
    return {**bombs(control=True), **garbled()}


@dataclass
class Poll:
    started: float
    seconds: float
    status: int | None
    text: str = ""


@dataclass
class Poller:
    """GETs ``path`` from the daemon every ``pause`` seconds until stopped."""

    url: str
    pause: float
    polls: list[Poll] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Poll the URL until stopped, recording each poll's start, duration, status and
        text."""
        with httpx.Client(timeout=10.0) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    response = client.get(self.url)
                    status, text = response.status_code, response.text
                except httpx.HTTPError:
                    status, text = None, ""
                self.polls.append(Poll(started, time.monotonic() - started, status, text))
                self._stop.wait(self.pause)

    def __enter__(self) -> Poller:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def _rss(text: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "process_resident_memory_bytes":
                return float(sample.value)
    return None


def _config(workdir: Path, servers: dict[str, RawServer], golden: Path) -> Path:
    parts = [
        f'reports_dir = "{workdir / "reports"}"',
        "reports_keep = 100",
        "shutdown_grace_seconds = 5",
        'log_format = "json"',
        "concurrency = 2",
    ]
    for name, server in servers.items():
        parts += [
            "[[targets]]",
            f'name = "{name}"',
            f'url = "{server.url}"',
            "timeout_seconds = 20",
            f"max_response_bytes = {CAP}",
            "[targets.retry]",
            "retries = 2",
            "backoff_initial_seconds = 0.01",
            "backoff_max_seconds = 0.05",
        ]
    for name in servers:
        parts += [
            "[[jobs]]",
            f'target = "{name}"',
            f'dataset = "{golden}"',
            "interval_seconds = 1.0",
            "run_at_start = true",
        ]
    config = workdir / "evaluator.toml"
    config.write_text("\n".join(parts) + "\n", "utf-8")
    return config


@dataclass
class Outcome:
    reports: dict[str, list[dict[str, Any]]]
    health: list[Poll]
    scrapes: list[Poll]
    rss_before: float
    expected: dict[str, str | None]
    requests: dict[str, int]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    """One run of every hostile HTTP attack against the daemon, with the reports and polls it
    gave."""
    workdir = tmp_path_factory.mktemp("hostile-http")
    golden = workdir / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"]}) + "\n"
            for i in range(2)
        ),
        "utf-8",
    )
    attacks = _attacks()
    servers = {name: RawServer(raw) for name, (raw, _) in attacks.items()}
    for server in servers.values():
        server.__enter__()
    try:
        args = ["--config", str(_config(workdir, servers, golden))]
        with DaemonProcess(args, workdir=workdir) as daemon:
            daemon.wait_ready()
            health = Poller(f"{daemon.url}/healthz", pause=0.02)
            scrapes = Poller(f"{daemon.url}/metrics", pause=0.1)
            with health, scrapes:
                deadline = time.monotonic() + 90
                folders = {n: workdir / "reports" / job_folder_name(f"{n}/golden") for n in servers}
                while True:
                    counts = {
                        n: len([p for p in f.glob("*.json") if p.name != LATEST])
                        for n, f in folders.items()
                    }
                    if min(counts.values()) >= RUNS_PER_JOB:
                        break
                    assert daemon.proc is not None and daemon.proc.poll() is None
                    assert time.monotonic() < deadline, counts
                    time.sleep(0.1)
            daemon.stop()
        rss = [v for p in scrapes.polls if p.status == 200 and (v := _rss(p.text)) is not None]
        reports = {
            n: [
                json.loads(p.read_text("utf-8"))
                for p in sorted(f.glob("*.json"))
                if p.name != LATEST
            ]
            for n, f in folders.items()
        }
        yield Outcome(
            reports=reports,
            health=health.polls,
            scrapes=scrapes.polls,
            rss_before=rss[0],  # the first scrape: before or as the first runs start
            expected={n: kind for n, (_, kind) in attacks.items()},
            requests={n: s.requests for n, s in servers.items()},
        )
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)


class TestHostileHttp:
    def test_each_attack_ends_in_its_error_kind_without_retry(self, outcome: Outcome) -> None:
        """Each hostile HTTP attack ends its cases in the expected error kind after one
        attempt."""
        for name, kind in outcome.expected.items():
            cases = [c for r in outcome.reports[name] for c in r["cases"]]
            assert cases, name
            kinds = {c["error"]["kind"] if c.get("error") else None for c in cases}
            assert {kind} == kinds, (name, [c.get("error") for c in cases])
            assert all(c["attempts"] == 1 for c in cases), name

    def test_messages_say_what_was_wrong(self, outcome: Outcome) -> None:
        """Each attack's error message says what was wrong with the response."""

        def message(name: str) -> str:
            return str(outcome.reports[name][0]["cases"][0]["error"]["message"])

        assert "decodes (gzip, gzip) to more than max_response_bytes" in message("gzip2")
        assert "at most 2 are decoded" in message("chain3")
        assert "garbled HTTP response" in message("badstatus")
        assert "chunk" in message("badchunk").lower()
        assert "garbled HTTP response" in message("headeroverflow")

    def test_memory_stays_bounded(self, outcome: Outcome) -> None:
        """Resident memory grows by far less than one decoded bomb (256 MiB)."""
        rss = [v for p in outcome.scrapes if p.status == 200 and (v := _rss(p.text)) is not None]
        assert len(rss) >= 3
        print(f"rss first scrape {outcome.rss_before / MiB:.0f} MiB, peak {max(rss) / MiB:.0f} MiB")
        assert max(rss) - outcome.rss_before < RSS_HEADROOM, (outcome.rss_before, max(rss))

    def test_healthz_answers_throughout(self, outcome: Outcome) -> None:
        """Every /healthz poll answered 200 (the worst latency is in the test output)."""
        assert len(outcome.health) >= 20
        assert all(p.status == 200 for p in outcome.health)
        worst = max(p.seconds for p in outcome.health)
        print(f"worst /healthz latency under attack: {worst * 1000:.1f} ms")
        # generous: the unbounded decoder stalled it for seconds
        assert worst < 2.0

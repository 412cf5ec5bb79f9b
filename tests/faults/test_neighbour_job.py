"""A heavy job does not stall the daemon or distort the job next to it.

One real ``evaluator serve`` runs two jobs. ``neighbour`` asks a healthy, fast endpoint in
a process of its own (:mod:`tests.benchmarks.endpoint`: 5 ms per answer, and it reports
the sleep it actually got in ``timings.sleep``). ``heavy`` asks a
:class:`~tests.faults.hostile.HostileEndpoint` whose mode the test switches, in the same
daemon, through three phases:

- ``calm``: a well-behaved answer (the reference the other phases are compared with);
- ``ids``: 350,000 ids per response, 3.2 MiB of JSON within the default 4 MiB cap (once
  this stalled ``/healthz`` 2.6 s and ``/metrics`` 9.3 s, and moved the neighbour's P99
  case latency from 6 ms to 1,100 ms);
- ``large``: a 2 MiB answer and 2,000 ids of 1,000 characters (3.9 MiB).

While the heavy phases run, ``/healthz`` and ``/metrics`` are polled. What must hold:
every neighbour case is scored in every phase (its ``timeout_seconds`` is 2 s, so a stall
of that size is a false timeout and fails the test); the neighbour's P99 case latency under
each heavy phase stays within :data:`STALL_BOUND` of its P99 in the calm phase, same
daemon, same run; the heavy cases are scored (the responses are legal); and every
``/healthz`` and ``/metrics`` poll answers 200 within :data:`POLL_BOUND`. The bounds are
generous on purpose (the machine is shared and noisy): they catch a stall of a second or
more, the failure the issue measured, not a regression of milliseconds; the figures
themselves are measured by ``tests/benchmarks/bench_hostile.py``.
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

from evaluator.daemon.report_store import LATEST, job_folder_name
from evaluator.summary import nearest_rank
from tests.benchmarks.support import endpoint
from tests.faults.hostile import HostileEndpoint
from tests.support.prometheus import DaemonProcess

pytestmark = pytest.mark.e2e

HEAVY_PHASES = ("ids", "large")
#: neighbour reports per phase (10 cases each; P99 of 120 is the second-worst case), after
#: the one that straddles the switch
NEIGHBOUR_RUNS = 12
#: heavy reports per heavy phase, after the one that straddles the switch
HEAVY_RUNS = 2
#: the neighbour's own per-case deadline: a stall this long is a false timeout
NEIGHBOUR_TIMEOUT = 2.0
#: how far the neighbour's P99 may move from the calm phase's: a stall of a second fails it
STALL_BOUND = 0.75
#: every /healthz and /metrics poll during the heavy phases answers within this
POLL_BOUND = 2.0
ENDPOINT_LATENCY = 0.005


@dataclass
class Poller:
    """GETs ``url`` every ``pause`` seconds until stopped: (status or None, seconds)."""

    url: str
    pause: float
    polls: list[tuple[int | None, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self) -> None:
        with httpx.Client(timeout=10.0) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    status: int | None = client.get(self.url).status_code
                except httpx.HTTPError:
                    status = None
                self.polls.append((status, time.monotonic() - started))
                self._stop.wait(self.pause)

    def __enter__(self) -> Poller:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def _golden(path: Path, count: int, relevant: str) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": [relevant]}) + "\n"
            for i in range(count)
        ),
        "utf-8",
    )
    return path


def _config(workdir: Path, heavy_url: str, neighbour_url: str) -> Path:
    heavy = _golden(workdir / "heavy.jsonl", 8, "d0")
    neighbour = _golden(workdir / "neighbour.jsonl", 10, "doc-0")
    config = workdir / "evaluator.toml"
    config.write_text(
        f"""
reports_dir = "{workdir / "reports"}"
reports_keep = 1000
log_format = "json"
concurrency = 4
[history]
enabled = false
[[targets]]
name = "heavy"
url = "{heavy_url}"
timeout_seconds = 30
retry = {{ retries = 0 }}
[[targets]]
name = "neighbour"
url = "{neighbour_url}"
timeout_seconds = {NEIGHBOUR_TIMEOUT}
retry = {{ retries = 0 }}
[[jobs]]
target = "heavy"
dataset = "{heavy}"
interval_seconds = 0.1
[[jobs]]
target = "neighbour"
dataset = "{neighbour}"
interval_seconds = 0.2
concurrency = 2
""",
        "utf-8",
    )
    return config


def _reports(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json") if p.name != LATEST)


@dataclass
class Phase:
    neighbour: list[dict[str, Any]]  # the neighbour's cases, runs wholly in this phase
    heavy: list[dict[str, Any]]
    health: list[tuple[int | None, float]]
    scrapes: list[tuple[int | None, float]]

    def neighbour_latency(self, percentile: float) -> float:
        """The neighbour job's latency at ``percentile`` in this phase."""
        value = nearest_rank([float(c["latency_seconds"]) for c in self.neighbour], percentile)
        assert value is not None, "no neighbour case in this phase"
        return value


def _phase(daemon: DaemonProcess, folders: dict[str, Path], deadline: float) -> Phase:
    """Wait for enough runs of both jobs that began and ended inside this phase."""
    seen = {name: set(_reports(folder)) for name, folder in folders.items()}
    wanted = {"neighbour": NEIGHBOUR_RUNS, "heavy": HEAVY_RUNS}
    with (
        Poller(f"{daemon.url}/healthz", 0.02) as health,
        Poller(f"{daemon.url}/metrics", 0.1) as scrapes,
    ):
        while True:
            # the first new report of each job straddles the switch: not counted
            fresh = {
                n: [p for p in _reports(f) if p not in seen[n]][1:] for n, f in folders.items()
            }
            if all(len(fresh[n]) >= wanted[n] for n in wanted):
                break
            assert daemon.proc is not None and daemon.proc.poll() is None, "daemon died"
            assert time.monotonic() < deadline, {n: len(r) for n, r in fresh.items()}
            time.sleep(0.1)

    def cases(name: str) -> list[dict[str, Any]]:
        reports = [json.loads(p.read_text("utf-8")) for p in fresh[name]]
        return [case for report in reports for case in report["cases"]]

    return Phase(cases("neighbour"), cases("heavy"), health.polls, scrapes.polls)


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Phase]]:
    """The neighbour job's cases and the daemon's polls in a calm phase and in each heavy phase
    of the other job."""
    workdir = tmp_path_factory.mktemp("neighbour")
    heavy = HostileEndpoint("good")
    with heavy, endpoint(ENDPOINT_LATENCY) as neighbour_url:
        args = ["--config", str(_config(workdir, heavy.url, neighbour_url))]
        folders = {
            name: workdir / "reports" / job_folder_name(f"{name}/{name}")
            for name in ("heavy", "neighbour")
        }
        with DaemonProcess(args, workdir=workdir) as daemon:
            daemon.wait_ready()
            deadline = time.monotonic() + 240
            out = {"calm": _phase(daemon, folders, deadline)}
            for mode in HEAVY_PHASES:
                heavy.mode = mode
                out[mode] = _phase(daemon, folders, deadline)
            daemon.stop()
    for name, phase in out.items():
        latencies = sorted(c["latency_seconds"] for c in phase.neighbour)
        worst = {
            what: max((s for _, s in polls), default=0.0)
            for what, polls in (("healthz", phase.health), ("metrics", phase.scrapes))
        }
        p90, p99 = (phase.neighbour_latency(p) * 1000 for p in (90, 99))
        print(
            f"{name}: neighbour {len(latencies)} cases, p90 {p90:.0f} ms, p99 {p99:.0f} ms,"
            f" max {latencies[-1] * 1000:.0f} ms; worst /healthz {worst['healthz'] * 1000:.0f} ms,"
            f" /metrics {worst['metrics'] * 1000:.0f} ms; heavy {len(phase.heavy)} cases"
        )
    yield out


class TestNeighbourJob:
    def test_every_neighbour_case_is_scored(self, phases: dict[str, Phase]) -> None:
        """No false timeout, no error: a stall of NEIGHBOUR_TIMEOUT would be a timeout."""
        for name, phase in phases.items():
            assert len(phase.neighbour) >= NEIGHBOUR_RUNS * 10, name
            errors = [c["error"] for c in phase.neighbour if c.get("error")]
            assert errors == [], (name, errors[:3])

    def test_neighbour_p99_stays_near_the_calm_phase(self, phases: dict[str, Phase]) -> None:
        """A heavy job leaves the neighbour job's P99 latency within a bound of its calm
        value."""
        calm = phases["calm"].neighbour_latency(99)
        for name in HEAVY_PHASES:
            p99 = phases[name].neighbour_latency(99)
            assert p99 <= calm + STALL_BOUND, (name, f"p99 {p99:.3f} s vs calm {calm:.3f} s")

    def test_neighbour_latency_is_mostly_the_endpoint(self, phases: dict[str, Phase]) -> None:
        """The median case spends most of its latency in the endpoint's own 5 ms sleep."""
        for name, phase in phases.items():
            overhead = sorted(
                float(c["latency_seconds"]) - float(c["stage_seconds"]["sleep"])
                for c in phase.neighbour
            )
            median = overhead[len(overhead) // 2]
            assert median < STALL_BOUND, (name, median)

    def test_heavy_cases_are_scored(self, phases: dict[str, Phase]) -> None:
        """The heavy responses are legal: scored, their ranking cut to max_ranked_ids."""
        for name in HEAVY_PHASES:
            cases = phases[name].heavy
            assert cases and all(c.get("error") is None for c in cases), name
            assert all(len(c["ranked_ids"]) == 100 for c in cases), name
            if name == "ids":
                assert all(c["mrr"] == 1.0 for c in cases)  # d0 ranked first

    def test_healthz_and_metrics_answer_while_heavy_runs(self, phases: dict[str, Phase]) -> None:
        """/healthz and /metrics answer promptly while the heavy job runs."""
        for name in HEAVY_PHASES:
            phase = phases[name]
            for what, polls in (("/healthz", phase.health), ("/metrics", phase.scrapes)):
                assert len(polls) >= 3, (name, what)
                assert all(status == 200 for status, _ in polls), (name, what)
                worst = max(seconds for _, seconds in polls)
                assert worst < POLL_BOUND, (name, what, worst)

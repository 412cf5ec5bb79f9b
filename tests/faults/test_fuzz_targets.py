"""Generated hostile targets against a real ``evaluator serve``: every target surface of the
catalogue (:mod:`tests.faults.surfaces`) attacked with every block that applies.

Per seed and attack class (block), one daemon runs one job per attack, each against its own
path of one :class:`~tests.support.rawhttp.ScriptedRawServer` (bytes, pieces and pauses as
generated), 2 cases a run, every second, with a credential configured (as real targets have
them). A process of its own polls ``/healthz`` every 20 ms. Once every job has written two
reports (or after a deadline), the daemon's ``/metrics``, status page and peak RSS are read
and it is stopped with SIGTERM.

Per attack: its job's run counter advanced and its reports were written; no secret form,
internal error or traceback in them. Per class: ``/healthz``, peak RSS, the daemon's logs and
exit. A failure prints the seed and the attack (:meth:`Attack.describe`).

``FUZZ_SEED``, ``FUZZ_ROUNDS``, ``FUZZ_PER_PAIR`` choose how much runs (`make fuzz` sets
them); ``FUZZ_FIGURES=path.json`` writes each class's figures for docs/reliability.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluator.daemon.report_store import LATEST, job_folder_name
from tests.faults import figures
from tests.faults.blocks import SECRET
from tests.faults.invariants import (
    RSS_BOUND,
    MiB,
    all_of,
    crashes,
    healthz_violations,
    leaks,
)
from tests.faults.surfaces import Attack, attacks_for, known_failure
from tests.support.prometheus import DaemonProcess
from tests.support.rawhttp import ScriptedRawServer

pytestmark = [pytest.mark.e2e, pytest.mark.fuzz]

RUNS = 2
CASES = 2
DEADLINE = 30.0
#: attacks one daemon serves at most: `make fuzz` draws every variant (about 50 per class),
#: and 50 jobs at once on two shared cores measure the machine, not the attacks
PER_DAEMON = 16
ATTACKS = attacks_for("target")


def _group_of(attacks: list[Attack]) -> dict[str, tuple[int, str, int]]:
    """Attack id and seed -> (seed, class, part): a class split into daemons of
    :data:`PER_DAEMON` attacks."""
    groups: dict[str, tuple[int, str, int]] = {}
    seen: dict[tuple[int, str], int] = {}
    for attack in attacks:
        n = seen.get((attack.seed, attack.block), 0)
        seen[(attack.seed, attack.block)] = n + 1
        groups[f"{attack.seed}-{attack.id}"] = (attack.seed, attack.block, n // PER_DAEMON)
    return groups


GROUP_OF = _group_of(ATTACKS)
GROUPS = sorted(set(GROUP_OF.values()))


@dataclass
class ClassOutcome:
    """What one daemon under one class of attacks did."""

    attacks: list[Attack]
    reports: dict[str, list[str]] = field(default_factory=dict)
    runs: dict[str, float] = field(default_factory=dict)
    outcomes: dict[str, dict[str, float]] = field(default_factory=dict)
    exposition: str = ""
    page: str = ""
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    peak_rss: int = 0
    healthz: list[tuple[float, float, int]] = field(default_factory=list)
    seconds: float = 0.0
    error_kinds: dict[str, list[str | None]] = field(default_factory=dict)

    def describe(self) -> str:
        """The attacks of the class, described."""
        return "; ".join(a.describe() for a in self.attacks)


def _config(workdir: Path, server: ScriptedRawServer, attacks: list[Attack]) -> Path:
    golden = workdir / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"],
                        "expected_facts": ["fact0"]}) + "\n"
            for i in range(CASES)
        ),
        "utf-8",
    )  # fmt: skip
    # the same questions as conversations of two turns, for the paths later turns read
    # (its file is also called golden.jsonl: report folders are named by the file's stem)
    conversations = workdir / "conversations" / "golden.jsonl"
    conversations.parent.mkdir(exist_ok=True)
    conversations.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "turns": [
                {"question": f"q{i}", "relevant_ids": ["d0"], "expected_facts": ["fact0"]},
                {"question": f"and q{i}?", "relevant_ids": ["d0"], "expected_facts": ["fact0"]},
            ]}) + "\n"
            for i in range(CASES // 2)
        ),
        "utf-8",
    )  # fmt: skip
    parts = [
        f'reports_dir = "{workdir / "reports"}"',
        "reports_keep = 10",
        "shutdown_grace_seconds = 10",
        'log_format = "json"',
        "log_answers = true",
        "concurrency = 2",
    ]
    for attack in attacks:
        parts += [
            "[[targets]]",
            f'name = "{attack.slug}"',
            f'url = "{server.url_of("/" + attack.slug)}"',
            attack.surface.target_toml,
        ]
    for attack in attacks:
        parts += [
            "[[jobs]]",
            f'target = "{attack.slug}"',
            f'dataset = "{conversations if attack.surface.conversational else golden}"',
            "interval_seconds = 1.0",
            "run_at_start = true",
        ]
    config = workdir / "evaluator.toml"
    config.write_text("\n".join(parts) + "\n", "utf-8")
    return config


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _numbered(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json") if p.name != LATEST)


def _run_class(workdir: Path, attacks: list[Attack]) -> ClassOutcome:
    outcome = ClassOutcome(attacks)
    script = {"/" + a.slug: list(a.pieces) for a in attacks}
    folders = {a.slug: workdir / "reports" / job_folder_name(f"{a.slug}/golden") for a in attacks}
    probe_out = workdir / "healthz.txt"
    started = time.monotonic()
    with ScriptedRawServer(script) as server:
        config = _config(workdir, server, attacks)
        env = {"FUZZ_TOKEN": SECRET}
        with DaemonProcess(["--config", str(config)], workdir=workdir, env=env) as daemon:
            daemon.wait_ready(timeout=60)
            probe = subprocess.Popen(
                [sys.executable, "-m", "tests.support.healthz_probe",
                 f"{daemon.url}/healthz", str(probe_out)]
            )  # fmt: skip
            try:
                deadline = time.monotonic() + DEADLINE
                while time.monotonic() < deadline:
                    if min(len(_numbered(f)) for f in folders.values()) >= RUNS:
                        break
                    if daemon.proc is not None and daemon.proc.poll() is not None:
                        break
                    time.sleep(0.25)
                if daemon.proc is not None and daemon.proc.poll() is None:
                    outcome.exposition = daemon.get("/metrics").text
                    outcome.page = daemon.get("/").text
                    outcome.peak_rss = _peak_rss(daemon.proc.pid)
            finally:
                probe.terminate()
                probe.wait(10)
            result = daemon.stop()
        outcome.returncode = result.returncode
        outcome.stdout = daemon.stdout_path.read_text("utf-8", errors="replace")
        outcome.stderr = result.stderr
    outcome.seconds = time.monotonic() - started
    for line in probe_out.read_text("utf-8").splitlines():
        at, took, status = line.split()
        outcome.healthz.append((float(at), float(took), int(status)))
    for slug, folder in folders.items():
        texts = [p.read_text("utf-8", errors="replace") for p in _numbered(folder)]
        outcome.reports[slug] = texts
        kinds: list[str | None] = []
        for text in texts:
            for case in json.loads(text)["cases"]:
                kinds.append(case["error"]["kind"] if case.get("error") else None)
        outcome.error_kinds[slug] = kinds
    for family in text_string_to_metric_families(outcome.exposition):
        if family.name == "rag_eval_runs":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    target = sample.labels["target"]
                    outcome.runs[target] = outcome.runs.get(target, 0) + sample.value
                    by = outcome.outcomes.setdefault(target, {})
                    by[sample.labels.get("outcome", "")] = sample.value
    return outcome


class Runs:
    """One daemon per (seed, class), started when a test first needs it."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.done: dict[tuple[int, str, int], ClassOutcome] = {}

    def get(self, key: tuple[int, str, int]) -> ClassOutcome:
        """The outcome of one attack class, run once on first use."""
        if key not in self.done:
            attacks = [a for a in ATTACKS if GROUP_OF[f"{a.seed}-{a.id}"] == key]
            seed, block, part = key
            workdir = self.factory.mktemp(f"fuzz-{seed}-{block}-{part}")
            self.done[key] = _run_class(workdir, attacks)
        return self.done[key]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """The attack classes' runs, their figures recorded afterwards."""
    state = Runs(tmp_path_factory)
    yield state
    figures.record(
        "targets",
        {
            f"{seed}:{block}" + (f":{part}" if part else ""): {
                "attacks": len(o.attacks),
                "peak_rss_mib": round(o.peak_rss / MiB, 1),
                "worst_healthz_ms": round(max((p[1] for p in o.healthz), default=0) * 1000, 1),
                "healthz_polls": len(o.healthz),
                "seconds": round(o.seconds, 1),
                "runs": {s: len(r) for s, r in o.reports.items()},
                "error_kinds": {
                    s: sorted({str(k) for k in kinds}) for s, kinds in o.error_kinds.items()
                },
            }
            for (seed, block, part), o in state.done.items()
        },
    )


def _mark(key: str) -> list[pytest.MarkDecorator]:
    reason = known_failure(key)
    return [pytest.mark.xfail(strict=False, reason=reason)] if reason else []


@pytest.mark.parametrize(
    "attack", [pytest.param(a, id=f"{a.seed}-{a.id}", marks=_mark(a.id)) for a in ATTACKS]
)
def test_job_keeps_running_and_leaks_nothing(attack: Attack, runs: Runs) -> None:
    """Whatever the target answered: the job's runs are counted and its reports written,
    each case scored or failed with an error kind, nothing leaks, nothing crashes."""
    outcome = runs.get(GROUP_OF[f"{attack.seed}-{attack.id}"])
    reports = outcome.reports[attack.slug]
    problems = all_of(
        [] if len(reports) >= RUNS else [f"{len(reports)} reports written, {RUNS} expected"],
        []
        if outcome.runs.get(attack.slug, 0) >= RUNS
        else [f"run counter {outcome.runs.get(attack.slug, 0)}, {RUNS} expected"],
        *(leaks(f"report {i}", text) for i, text in enumerate(reports)),
        *(crashes(f"report {i}", text) for i, text in enumerate(reports)),
    )
    assert not problems, f"{attack.describe()}: {problems}"


@pytest.mark.parametrize(
    ("seed", "block", "part"),
    [
        pytest.param(s, b, p, id=f"{s}-{b}" + (f"-{p}" if p else ""), marks=_mark(f"{b}:daemon"))
        for s, b, p in GROUPS
    ],
)
def test_daemon_under_class(seed: int, block: str, part: int, runs: Runs) -> None:
    """The daemon under one class of attacks: /healthz within its bound, peak RSS under
    its bound, no secret form and no crash in its logs, /metrics or status page, and a
    clean exit 0 on SIGTERM."""
    outcome = runs.get((seed, block, part))
    print(
        f"class {block} seed {seed}: {len(outcome.attacks)} attacks, peak RSS "
        f"{outcome.peak_rss / MiB:.0f} MiB, worst /healthz "
        f"{max((p[1] for p in outcome.healthz), default=0) * 1000:.0f} ms"
    )
    problems = all_of(
        healthz_violations(outcome.healthz),
        [] if outcome.peak_rss <= RSS_BOUND else [f"peak RSS {outcome.peak_rss / MiB:.0f} MiB"],
        [] if outcome.returncode == 0 else [f"daemon exited {outcome.returncode}"],
        [] if outcome.exposition else ["the daemon was not running at the end"],
        leaks("stdout", outcome.stdout),
        leaks("stderr", outcome.stderr),
        leaks("/metrics", outcome.exposition),
        leaks("status page", outcome.page),
        crashes("stdout", outcome.stdout),
        crashes("stderr", outcome.stderr),
    )
    assert not problems, f"{outcome.describe()}: {problems}"

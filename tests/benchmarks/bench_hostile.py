"""Hostile targets: what each attack costs the daemon, and what each bound costs per case.

Each attack runs a real ``evaluator serve`` for ``SECONDS`` with two jobs: the attacked
one (20 cases every 0.2 s, concurrency 4) against a loopback endpoint that misbehaves in
one way, and a healthy neighbour (10 cases every 0.2 s, concurrency 2) against a fast
endpoint in a process of its own (:mod:`tests.benchmarks.endpoint`, 5 ms per answer, the
same for every attack), while this process polls ``/healthz`` every 20 ms and ``/metrics``
every 100 ms. Reported per attack: the daemon's peak RSS (``VmHWM``), the worst and the P99
``/healthz`` latency, the worst ``/metrics`` latency, the neighbour's P99 case latency (and
its error cases: there should be none), the attacked job's runs finished, the largest
report and the log bytes per case, the ``stage`` label values on ``/metrics`` and the error
kinds the cases ended in. ``bomb`` and ``garbled`` are raw responses
(:mod:`tests.faults.raw_responses`), one per case in turn: the three 256 MiB bombs and the
three-coding chain, or the bad status line, the invalid chunk size and the 1 MiB header.
``ids`` is 350,000 ids per response within the default 4 MiB cap; ``tiny`` is 190,000 empty
server-sent events before the answer, sent at once, to a ``stream = true`` target. Then,
in-process, the cost per case of each bound: redacting a case's report entry (clean, and
holding a secret), a log line, folding stage names, and the size caps.

``python -m tests.benchmarks.run --only hostile``
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from evaluator.daemon.report_store import job_folder_name
from tests.benchmarks.support import endpoint, figure, nearest_rank
from tests.faults import raw_responses
from tests.faults.hostile import HostileEndpoint, MiB
from tests.support.prometheus import DaemonProcess
from tests.support.rawhttp import RawServer

SECONDS = 6.0
CASES = 20
NEIGHBOUR_CASES = 10
POLL = 0.02
METRICS_POLL = 0.1
ATTACKS = (
    "good", "echo", "stages", "error", "large", "ids", "tiny", "bomb", "garbled", "sighup",
    "full-disk",
)  # fmt: skip
#: the attacked target's settings beyond its URL, for the attacks that need them
STREAMED = 'kind = "openai-chat"\nmodel = "m"\nstream = true\nresponse.ids = "sources[].id"\n'
TARGET_SETTINGS = {"tiny": STREAMED}
SECRET = "tok/5ecret+Zq81=xy"


def _config(folder: Path, url: str, reports: Path, neighbour_url: str, settings: str = "") -> Path:
    neighbour = folder / "neighbour.jsonl"
    neighbour.write_text(
        "".join(
            json.dumps({"id": f"n{i}", "question": f"q{i}", "relevant_ids": ["doc-0"]}) + "\n"
            for i in range(NEIGHBOUR_CASES)
        ),
        "utf-8",
    )
    golden = folder / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"],
                        "expected_facts": ["fact0"]}) + "\n"
            for i in range(CASES)
        ),
        "utf-8",
    )  # fmt: skip
    config = folder / "evaluator.toml"
    config.write_text(
        f"""
reports_dir = "{reports}"
reports_keep = 1000
[history]
enabled = false
[[targets]]
name = "hostile"
url = "{url}"
{settings}timeout_seconds = 20
max_response_bytes = {16 * MiB}
retry = {{ retries = 0 }}
request.headers = {{ Authorization = "Bearer ${{BENCH_TOKEN}}" }}
[[targets]]
name = "neighbour"
url = "{neighbour_url}"
timeout_seconds = 20
retry = {{ retries = 0 }}
[[jobs]]
target = "hostile"
dataset = "{golden}"
interval_seconds = 0.2
[[jobs]]
target = "neighbour"
dataset = "{neighbour}"
interval_seconds = 0.2
concurrency = 2
""",
        "utf-8",
    )
    return config


def _peak_rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _Poller(threading.Thread):
    """GET ``url`` every ``pause`` s; keeps each latency (a failure counts as 10 s)."""

    def __init__(self, url: str, pause: float = POLL) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.pause = pause
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=10.0) as client:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    client.get(self.url).raise_for_status()
                    self.latencies.append(time.perf_counter() - started)
                except httpx.HTTPError:
                    self.latencies.append(10.0)
                time.sleep(self.pause)


@contextmanager
def _endpoint(name: str) -> Iterator[str]:
    """The attack's endpoint URL: raw responses in turn for ``bomb`` and ``garbled``."""
    raw = {"bomb": raw_responses.bombs, "garbled": raw_responses.garbled}.get(name)
    if raw is not None:
        with RawServer([response for response, _ in raw().values()]) as server:
            yield server.url
        return
    with HostileEndpoint({"sighup": "good", "full-disk": "good"}.get(name, name)) as endpoint:
        yield endpoint.url


def _attack(name: str, neighbour_url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-hostile-{name}-") as tmp, \
            _endpoint(name) as url:  # fmt: skip
        folder = Path(tmp)
        prefix: list[str] = []
        reports = folder / "reports"
        if name == "full-disk":
            disk = folder / "disk"
            disk.mkdir()
            reports = disk / "reports"
            prefix = ["unshare", "-rm", "sh", "-c",
                      f'mount -t tmpfs -o size=256k tmpfs "{disk}" && exec "$@"', "sh"]  # fmt: skip
        config = _config(folder, url, reports, neighbour_url, TARGET_SETTINGS.get(name, ""))
        env = {"BENCH_TOKEN": SECRET}
        with DaemonProcess(
            ["--config", str(config)], workdir=folder, env=env, prefix=prefix
        ) as daemon:
            daemon.wait_ready()
            assert daemon.proc is not None
            # the daemon staggers first runs: the window opens once both jobs run
            daemon.wait_for_log(_is_run("neighbour"), timeout=60)
            before = len(daemon.logs())
            window_opened = time.time()
            poller = _Poller(f"{daemon.url}/healthz")
            scraper = _Poller(f"{daemon.url}/metrics", METRICS_POLL)
            poller.start()
            scraper.start()
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                if name == "sighup":
                    daemon.proc.send_signal(signal.SIGHUP)
                time.sleep(0.25)
            for thread in (poller, scraper):
                thread.stop.set()
                thread.join(15)
            exposition = daemon.get("/metrics").text
            peak = _peak_rss(daemon.proc.pid)
            root = Path(f"/proc/{daemon.proc.pid}/root") if prefix else Path("/")
            # the attacked job's reports only (the neighbour's are small and alike)
            job = root / str(reports).lstrip("/") / job_folder_name("hostile/golden")
            files = [p for p in job.glob("*.json") if p.stat().st_mtime >= window_opened]
            sizes = [p.stat().st_size for p in files]
            kinds = _error_kinds(files)
            result = daemon.stop()
        log_lines = daemon.log_text().splitlines()
    window = result.logs[before:]  # the events logged in the measured window
    runs = sum(map(_is_run("hostile"), window))
    neighbour = [e for e in window if e.get("event") == "case" and e.get("target") == "neighbour"]
    latencies = [float(e["latency_seconds"]) for e in neighbour]
    # log bytes per attacked case, over the whole log: the neighbour's lines are not its cost
    log_bytes = hostile_cases = 0
    for line in log_lines:
        event = _event(line)
        # the scheduler's own lines name the job, not the target
        if event.get("target") != "neighbour" and "neighbour/neighbour" not in line:
            log_bytes += len(line.encode()) + 1
            hostile_cases += event.get("event") == "case"
    stages: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        if family.name == "rag_eval_stage_latency_seconds":
            stages |= {
                s.labels["stage"]
                for s in family.samples
                if "stage" in s.labels and s.labels.get("target") == "hostile"
            }
    lat = poller.latencies or [float("nan")]
    return {
        "peak_rss_mib": peak,
        "healthz_worst_ms": max(lat) * 1000,
        "healthz_p99_ms": nearest_rank(lat, 99) * 1000,
        "metrics_worst_ms": max(scraper.latencies or [float("nan")]) * 1000,
        "neighbour_p99_ms": nearest_rank(latencies or [float("nan")], 99) * 1000,
        "neighbour_cases": len(latencies),
        "neighbour_errors": sum(e.get("error_kind") is not None for e in neighbour),
        "runs": runs,
        "report_max_bytes": max(sizes or [0]),
        "log_bytes_per_case": log_bytes / max(hostile_cases, 1),
        "stage_values": len(stages),
        "error_kinds": kinds,
        "exit": result.returncode,
    }


def _is_run(target: str) -> Callable[[dict[str, Any]], bool]:
    return lambda event: event.get("event") == "run" and event.get("target") == target


def _event(line: str) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError:
        return {}
    return event if isinstance(event, dict) else {}


def _error_kinds(files: list[Path]) -> dict[str, int]:
    """Cases per error kind (``none``: scored) over the numbered reports."""
    kinds: Counter[str] = Counter()
    for path in files:
        if path.name == "latest.json":
            continue
        try:
            cases = json.loads(path.read_text("utf-8")).get("cases") or []
        except (OSError, ValueError):
            continue  # a report being replaced as the daemon stops
        kinds.update((c.get("error") or {}).get("kind", "none") for c in cases)
    return dict(kinds)


def _per_call(fn: Callable[[], object], repeat: int = 2000) -> float:
    fn()
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat * 1e6


def _caps(limits: Any, ids: tuple[str, ...], answer: str) -> object:
    return limits.ids(ids), limits.answer(answer), limits.message("HTTP 500 from host: boom")


def _costs() -> dict[str, float]:
    from evaluator.bounds import RecordLimits, StageNames
    from evaluator.logs import bound_values
    from evaluator.redaction import Redactor

    redactor = Redactor([SECRET, f"Bearer {SECRET}", "key-5ecret-77/ab"])
    answer = "You have 30 days to return an item. " * 8
    case: dict[str, Any] = {
        "id": "refund-window", "question": "How long do I have to return an item?",
        "tags": ["policy"], "unanswerable": False, "relevant_ids": ["refund-policy"],
        "expected_facts": ["30 days"], "ranked_ids": [f"doc-{i}" for i in range(10)],
        "answer": answer, "citations": [1, 2],
        "recall_at_k": 1.0, "mrr": 1.0, "ndcg_at_k": 1.0, "latency_seconds": 0.123,
        "stage_seconds": {"retrieve": 0.01, "generate": 0.1}, "attempts": 1, "error": None,
        "texts": {f"doc-{i}": "Returns are accepted within 30 days. " * 20 for i in range(5)},
    }  # fmt: skip
    leaky = {**case, "answer": answer + SECRET}
    line = json.dumps({"event": "case", **case})
    limits = RecordLimits()
    stages = StageNames(cap=20)
    timings = {"retrieve": 0.01, "rerank": 0.02, "generate": 0.1}
    ids = tuple(f"doc-{i}" for i in range(10))
    return {
        "redact_case_clean_us": _per_call(lambda: redactor.redact_json(case)),
        "redact_case_with_secret_us": _per_call(lambda: redactor.redact_json(leaky)),
        "redact_log_line_us": _per_call(lambda: redactor.redact_text(line)),
        "bound_log_event_us": _per_call(lambda: bound_values(None, "info", dict(case))),
        "fold_stages_us": _per_call(lambda: stages.fold(timings)),
        "caps_us": _per_call(lambda: _caps(limits, ids, answer)),
    }


def run() -> dict[str, Any]:
    """What each hostile attack costs the daemon, its figures by name."""
    out: dict[str, Any] = {}
    details: dict[str, Any] = {}
    with endpoint(0.005) as neighbour_url:
        for name in ATTACKS:
            if name == "full-disk" and shutil.which("unshare") is None:
                continue
            details[name] = _attack(name, neighbour_url)
    for name, figures in details.items():
        out[f"{name}_peak_rss"] = figure(
            figures["peak_rss_mib"], "MiB", meaning=f"attack {name}: daemon peak RSS (VmHWM)"
        )
        out[f"{name}_healthz_worst"] = figure(
            figures["healthz_worst_ms"], "ms",
            meaning=f"attack {name}: worst /healthz latency, polled every 20 ms",
        )  # fmt: skip
        out[f"{name}_metrics_worst"] = figure(
            figures["metrics_worst_ms"], "ms",
            meaning=f"attack {name}: worst /metrics latency, polled every 100 ms",
        )  # fmt: skip
        out[f"{name}_neighbour_p99"] = figure(
            figures["neighbour_p99_ms"], "ms",
            meaning=f"attack {name}: P99 case latency of a healthy job in the same daemon "
            "(endpoint 5 ms per answer)",
        )  # fmt: skip
    costs = _costs()
    details["costs_us"] = costs
    for key, value in costs.items():
        out[key] = figure(value, "µs/case", meaning=key.replace("_", " "))
    out["_details"] = details
    print(json.dumps(details, indent=2))
    return out


if __name__ == "__main__":
    run()

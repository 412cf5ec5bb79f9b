"""The fault matrix: ``evaluator serve`` on a 0.5 s schedule while its endpoint misbehaves.

One daemon process runs a golden set of five cases against a loopback endpoint that follows
a plan, one slot per run. The slot of a request is the number of reports the daemon has
written so far: runs never overlap and each writes its report before the next one starts,
so every run meets exactly one behaviour whatever the timing. The endpoint in turn hangs,
drips its body, answers 429/500/503, sends invalid or wrong-typed JSON or 50 MiB, resets
mid-body, goes down (connections refused) and comes back, fails some cases, and flaps.

Meanwhile two threads poll ``/healthz`` and ``/metrics``. A scrape is *clean* at run
boundary ``n`` when ``n`` reports existed before and after it, the run counters add up to
``n`` and the endpoint saw the next run's first request only after the scrape ended: it
shows exactly the first ``n`` runs, so its counters must equal the tally of those reports.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluator.daemon.report_store import LATEST, job_folder_name
from evaluator.errors import ERROR_KINDS
from evaluator.report import read_report
from tests.support.contract import QUALITY_GAUGES as QUALITY
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess, DaemonResult

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
INTERVAL = 0.5
TIMEOUT = 0.5  # whole-call deadline of each attempt
RETRIES = 2
BACKOFF_MAX = 0.1  # a 429's Retry-After of 1 s is honoured up to this
CAP = 64 * 1024  # max_response_bytes
ERROR_RATIO_LIMIT = 0.1
LABELS = {"target": "flaky", "dataset": "golden"}
CASE_IDS = tuple(f"c{i}" for i in range(5))
ALL = frozenset(CASE_IDS)
OUTCOMES = ("complete", "incomplete", "failed")

# --- what the endpoint answers ---------------------------------------------------------------


def _index(question: str) -> str:
    return question.removeprefix("q")


def _right(question: str) -> dict[str, Any]:
    i = _index(question)
    return {
        "answer": f"it is fact{i}",
        "retrieved": [{"id": f"d{i}", "text": "evidence " * 40}],
        "citations": [1],
        "timings": {"model": 0.01},
    }


_WRONG: dict[str, Any] = {"answer": "no idea", "retrieved": [{"id": "x"}], "citations": []}


def quality_a(question: str) -> Reply:
    """Every case right."""
    return Reply(_right(question))


def quality_b(question: str) -> Reply:
    """c3 and c4 wrong: the quality gauges differ from ``quality_a``'s."""
    return Reply(_WRONG if question in ("q3", "q4") else _right(question))


def partial(question: str) -> Reply:
    """c0 and c1 fail (500), c3 wrong: the scored cases average differently again."""
    if question in ("q0", "q1"):
        return Reply({"error": "boom"}, status=500)
    return Reply(_WRONG if question == "q3" else _right(question))


@dataclass(frozen=True)
class Slot:
    """One run of the plan: the endpoint's behaviour and what the run must end in."""

    name: str
    reply: Callable[[str], Reply]
    outcome: str | None  # None: an edge run around a stop or restart, checked for consistency
    kind: str | None = None
    failing: frozenset[str] = frozenset()
    status: int | None = None
    attempts: int = 1  # of each failing case
    #: the endpoint listens throughout and every case reaches it (a boundary can be proven)
    served: bool = True
    #: part of the "flaps between good and bad across runs" sequence
    flap: bool = False


def always(reply: Reply) -> Callable[[str], Reply]:
    """The same reply to every question."""
    return lambda _question: reply


def failing(name: str, reply: Callable[[str], Reply], kind: str, **more: Any) -> Slot:
    """A run in which every case fails with ``kind``."""
    return Slot(name, reply, "failed", kind, ALL, **more)


def hang(question: str) -> Reply:
    """Answers after 2 s, four times the deadline."""
    return Reply(_right(question), delay=2.0)


def drip(question: str) -> Reply:
    """One byte every 20 ms: never silent for long, yet far slower than the deadline."""
    return Reply(_right(question), drip=0.02)


def reset(question: str) -> Reply:
    """Headers and half the body, then the connection is cut."""
    return Reply(_right(question), reset=True)


TOO_MANY = always(Reply({"error": "slow down"}, status=429, headers={"Retry-After": "1"}))
BOOM = always(Reply({"error": "boom"}, status=500))
BUSY = always(Reply({"error": "busy"}, status=503))
NOT_JSON = always(Reply(raw=b'{"answer": "it is fact0", "retrieved": ['))
WRONG_TYPES = always(Reply({"answer": 42, "retrieved": "d0", "citations": "one"}))
HUGE = always(Reply(stream_bytes=50 * MiB))
C0_C1 = frozenset({"c0", "c1"})
TRANSIENT = 1 + RETRIES

PLAN: tuple[Slot, ...] = (
    Slot("good", quality_a, "complete"),
    failing("hang", hang, "timeout"),
    failing("drip", drip, "timeout"),
    failing("429", TOO_MANY, "http_status", status=429, attempts=TRANSIENT),
    failing("500", BOOM, "http_status", status=500),
    failing("503", BUSY, "http_status", status=503, attempts=TRANSIENT),
    failing("invalid-json", NOT_JSON, "bad_response"),
    failing("wrong-types", WRONG_TYPES, "bad_response"),
    failing("50MiB", HUGE, "response_too_large"),
    failing("reset", reset, "connect"),
    Slot("recovered", quality_b, "complete"),
    # the server is stopped as soon as the previous report is on disk (this run may be
    # served yet) and started again once the next one is
    Slot("refused-edge", quality_b, None, served=False),
    failing("refused", quality_b, "connect", attempts=TRANSIENT, served=False),
    Slot("restarted-edge", quality_b, None, served=False),
    Slot("partial", partial, "incomplete", "http_status", C0_C1, status=500),
    Slot("flap-good", quality_a, "complete", flap=True),
    failing("flap-bad", BOOM, "http_status", status=500, flap=True),
    Slot("flap-good-b", quality_b, "complete", flap=True),
    Slot("flap-partial", partial, "incomplete", "http_status", C0_C1, status=500, flap=True),
    Slot("flap-good-again", quality_a, "complete", flap=True),
)
#: runs after the plan (while the test winds down) are good
TAIL = Slot("tail", quality_a, "complete")
STOP_AT = next(i for i, s in enumerate(PLAN) if s.name == "refused-edge")
RESTART_AT = next(i for i, s in enumerate(PLAN) if s.name == "restarted-edge")
FAULTS = [s for s in PLAN if s.kind is not None and s.outcome is not None]


def slot_of(index: int) -> Slot:
    """The planned slot of run ``index`` (the tail after the plan)."""
    return PLAN[index] if index < len(PLAN) else TAIL


def count_reports(folder: Path) -> int:
    """Reports written so far: ``*.json`` but ``latest.json`` (temp files end in ``.tmp``)."""
    try:
        return sum(1 for p in folder.glob("*.json") if p.name != LATEST)
    except OSError:
        return 0


class PlannedEndpoint:
    """The loopback script: answers each request as the plan says for the current run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = threading.Lock()
        #: run index -> monotonic time of its first request
        self.first_request: dict[int, float] = {}
        self.requests: Counter[int] = Counter()

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The reply the current run's slot plans for the question, the run's first request time
        and count recorded."""
        run = count_reports(self.folder)
        now = time.monotonic()
        with self.lock:
            self.first_request.setdefault(run, now)
            self.requests[run] += 1
        return slot_of(run).reply(str(request.get("question", "")))

    def started_after(self, run: int, moment: float) -> bool:
        """Whether run ``run``'s first request came after ``moment``."""
        with self.lock:
            first = self.first_request.get(run)
        return first is not None and first > moment


# --- polling /healthz and /metrics -------------------------------------------------------------


@dataclass
class Poll:
    """One request to the daemon: when, what came back, reports on disk before and after."""

    path: str
    started: float
    ended: float
    before: int
    after: int
    status: int | None
    error: str | None = None
    text: str = ""


class Poller:
    """A thread that GETs ``path`` from the daemon every ``pause`` seconds until stopped."""

    def __init__(self, url: str, path: str, folder: Path, pause: float) -> None:
        self.url = url
        self.path = path
        self.folder = folder
        self.pause = pause
        self.polls: list[Poll] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"poll {path}", daemon=True)

    def _loop(self) -> None:
        with httpx.Client(timeout=5.0) as client:
            while not self._stop.is_set():
                before = count_reports(self.folder)
                started = time.monotonic()
                status, error, text = None, None, ""
                try:
                    response = client.get(f"{self.url}{self.path}")
                    status, text = response.status_code, response.text
                except httpx.HTTPError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                ended = time.monotonic()
                after = count_reports(self.folder)
                if self.path != "/metrics":
                    text = ""  # only scrapes are kept whole
                poll = Poll(self.path, started, ended, before, after, status, error, text)
                self.polls.append(poll)
                self._stop.wait(self.pause)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_samples(text: str) -> Samples:
    """Every sample of a text exposition by name and sorted labels."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    """The job's sample of ``name`` with ``labels`` (None: not exported)."""
    key = (name, tuple(sorted({**LABELS, **labels}.items())))
    return samples.get(key)


def process_sample(samples: Samples, name: str) -> float | None:
    """The unlabelled process-wide sample of ``name``."""
    return samples.get((name, ()))


# --- the scenario ------------------------------------------------------------------------------


@dataclass
class Matrix:
    """Everything the scenario left behind, for the tests to check."""

    paths: list[Path]  # the reports on disk, in run order
    reports: list[dict[str, Any]]
    result: DaemonResult
    endpoint: PlannedEndpoint
    health: list[Poll]
    scrapes: list[Poll]
    #: run boundary n -> samples of a clean scrape there
    clean: dict[int, Samples]
    streamed: list[int]
    latest: dict[str, Any]
    #: reports on disk right after the server stopped / restarted
    stopped_with: int
    restarted_with: int
    outcomes: dict[str, str] = field(default_factory=dict)  # run id -> outcome logged

    def events(self, name: str) -> list[dict[str, Any]]:
        """The daemon's log events called ``name``."""
        return [e for e in self.result.logs if e.get("event") == name]

    def index_of(self, slot: Slot) -> int:
        """The run index of ``slot`` in the plan."""
        return PLAN.index(slot)


def _case(case_id: str) -> dict[str, Any]:
    i = case_id.removeprefix("c")
    return {"id": case_id, "question": f"q{i}", "relevant_ids": [f"d{i}"],
            "expected_facts": [f"fact{i}"]}  # fmt: skip


def _config(workdir: Path, url: str, golden: Path) -> Path:
    config = workdir / "evaluator.toml"
    config.write_text(
        f"""
concurrency = {len(CASE_IDS)}
error_ratio_limit = {ERROR_RATIO_LIMIT}
reports_dir = "{workdir / "reports"}"
reports_keep = 1000
shutdown_grace_seconds = 5
log_format = "json"

[[targets]]
name = "flaky"
url = "{url}"
timeout_seconds = {TIMEOUT}
connect_timeout_seconds = {TIMEOUT}
max_response_bytes = {CAP}

[targets.retry]
retries = {RETRIES}
backoff_initial_seconds = 0.01
backoff_max_seconds = {BACKOFF_MAX}

[[jobs]]
target = "flaky"
dataset = "{golden}"
interval_seconds = {INTERVAL}
run_at_start = true
""",
        "utf-8",
    )
    return config


def _clean_scrapes(scrapes: list[Poll], endpoint: PlannedEndpoint) -> dict[int, Samples]:
    clean: dict[int, Samples] = {}
    for poll in scrapes:
        n = poll.before
        if poll.status != 200 or poll.after != n or n in clean:
            continue
        if not (slot_of(n).served and endpoint.started_after(n, poll.ended)):
            continue
        samples = parse_samples(poll.text)
        runs = sum(sample(samples, "rag_eval_runs_total", outcome=o) or 0.0 for o in OUTCOMES)
        if runs == n:
            clean[n] = samples
    return clean


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    """Run the whole plan once against one daemon process (about 15 s)."""
    workdir = tmp_path_factory.mktemp("fault-matrix")
    golden = workdir / "golden.jsonl"
    golden.write_text("".join(json.dumps(_case(c)) + "\n" for c in CASE_IDS), "utf-8")
    folder = workdir / "reports" / job_folder_name("flaky/golden")
    endpoint = PlannedEndpoint(folder)
    server: LoopbackServer | None = LoopbackServer(endpoint).__enter__()
    assert server is not None
    port, url = server.port, server.url
    streamed: list[int] = []
    stopped_with = restarted_with = -1
    try:
        args = ["--config", str(_config(workdir, url, golden))]
        with DaemonProcess(args, workdir=workdir) as daemon:
            daemon.wait_ready()
            health = Poller(daemon.url, "/healthz", folder, pause=0.02)
            scrapes = Poller(daemon.url, "/metrics", folder, pause=0.02)
            with health, scrapes:
                deadline = time.monotonic() + 60
                while True:
                    done = count_reports(folder)
                    if done >= STOP_AT and stopped_with < 0:
                        assert server is not None
                        server.__exit__(None, None, None)
                        streamed += server.streamed
                        server = None
                        stopped_with = count_reports(folder)
                    if done >= RESTART_AT and restarted_with < 0:
                        server = LoopbackServer(endpoint, port=port).__enter__()
                        restarted_with = count_reports(folder)
                    finished = done >= len(PLAN) + 2 and any(
                        n >= len(PLAN)
                        for n in _clean_scrapes(
                            [p for p in scrapes.polls[-50:] if p.before >= len(PLAN)], endpoint
                        )
                    )
                    if finished:
                        break
                    alive = daemon.proc is not None and daemon.proc.poll() is None
                    assert alive and time.monotonic() < deadline, (
                        f"{done} of {len(PLAN) + 2} runs, daemon alive: {alive}\n"
                        + "\n".join(json.dumps(e) for e in daemon.logs()[-20:])
                    )
                    time.sleep(0.01)
            result = daemon.stop()
    finally:
        if server is not None:
            server.__exit__(None, None, None)
            streamed += server.streamed
    paths = sorted(p for p in folder.glob("*.json") if p.name != LATEST)
    matrix = Matrix(
        paths=paths,
        reports=[json.loads(p.read_text("utf-8")) for p in paths],
        result=result,
        endpoint=endpoint,
        health=health.polls,
        scrapes=scrapes.polls,
        clean=_clean_scrapes(scrapes.polls, endpoint),
        streamed=streamed,
        latest=json.loads((folder / LATEST).read_text("utf-8")),
        stopped_with=stopped_with,
        restarted_with=restarted_with,
    )
    matrix.outcomes = {e["run_id"]: e["outcome"] for e in matrix.events("run")}
    return matrix


# --- expectations derived from the reports -----------------------------------------------------


def outcome_of(report: dict[str, Any]) -> str:
    """docs/daemon.md's outcome of a finished run, from its report."""
    summary = report["summary"]
    if summary["scored_count"] == 0:
        return "failed"
    if summary["error_rate"] > ERROR_RATIO_LIMIT + 1e-9:
        return "incomplete"
    return "complete"


def tally(reports: list[dict[str, Any]]) -> dict[str, float]:
    """What the counters must show after exactly these runs."""
    counts: dict[str, float] = dict.fromkeys(
        [*(f"errors:{k}" for k in ERROR_KINDS), *(f"runs:{o}" for o in OUTCOMES), "retries"], 0.0
    )
    for report in reports:
        counts[f"runs:{outcome_of(report)}"] += 1
        for case in report["cases"]:
            counts["retries"] += case["attempts"] - 1
            if case["error"] is not None:
                counts[f"errors:{case['error']['kind']}"] += 1
    return counts


def counters(samples: Samples) -> dict[str, float]:
    """The job's error, run-outcome and retry counters, each required to be exported."""
    out: dict[str, float | None] = {
        f"errors:{k}": sample(samples, "rag_eval_case_errors_total", kind=k) for k in ERROR_KINDS
    }
    out.update({f"runs:{o}": sample(samples, "rag_eval_runs_total", outcome=o) for o in OUTCOMES})
    out["retries"] = sample(samples, "rag_eval_case_retries_total")
    assert None not in out.values(), out
    return {k: v for k, v in out.items() if v is not None}


def quality(samples: Samples) -> dict[str, float | None]:
    """The job's quality gauges by name."""
    return {name: sample(samples, name) for name in QUALITY}


def expected_quality(report: dict[str, Any]) -> dict[str, float | None]:
    """The report's summary values the quality gauges must equal."""
    return {name: report["summary"][key] for name, key in QUALITY.items()}


def known(matrix: Matrix) -> dict[int, dict[str, float]]:
    """Counters at the boundaries where they are known: clean scrapes, and zero at start."""
    out = {n: counters(samples) for n, samples in matrix.clean.items()}
    out.setdefault(0, tally([]))  # a fresh daemon on a fresh reports folder starts at zero
    return out


def bracket(matrix: Matrix, index: int) -> tuple[int, int]:
    """The tightest known boundaries around run ``index``: (at or before it, after it)."""
    boundaries = known(matrix)
    return max(n for n in boundaries if n <= index), min(n for n in boundaries if n > index)


def _brief(report: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    return [
        (c["id"], c["error"]["kind"] if c["error"] else None, c["attempts"])
        for c in report["cases"]
    ]


# --- the tests ---------------------------------------------------------------------------------


class TestEndpointsKeepAnswering:
    """/healthz and /metrics answer every request, during failing runs too."""

    @pytest.mark.parametrize("path", ["/healthz", "/metrics"])
    def test_every_poll_answered_200(self, matrix: Matrix, path: str) -> None:
        """Every poll of the whole scenario got a 200, none a transport error or timeout."""
        polls = matrix.health if path == "/healthz" else matrix.scrapes
        assert len(polls) >= 50, len(polls)
        assert [] == [(p.status, p.error) for p in polls if p.status != 200 or p.error]

    @pytest.mark.parametrize("path", ["/healthz", "/metrics"])
    def test_polled_while_runs_were_failing(self, matrix: Matrix, path: str) -> None:
        """Polls started after a failing run's first request and ended before its report."""
        polls = matrix.health if path == "/healthz" else matrix.scrapes
        during = [
            p
            for i, s in enumerate(PLAN)
            if s.outcome == "failed" and s.served
            for p in polls
            if p.after == i and p.started > matrix.endpoint.first_request[i]
        ]
        assert len(during) >= 3, len(during)
        assert all(p.status == 200 for p in during)


class TestPlanFollowed:
    """The scenario itself went as planned, so the checks below mean what they say."""

    def test_every_planned_run_reported(self, matrix: Matrix) -> None:
        """One report per run: at least the whole plan, and as many as runs logged."""
        assert len(matrix.reports) >= len(PLAN) + 2
        assert len(matrix.reports) == len(matrix.events("run"))
        assert [r["run_id"] for r in matrix.reports] == [e["run_id"] for e in matrix.events("run")]
        assert matrix.reports[-1] == matrix.latest

    def test_server_down_exactly_around_the_refused_run(self, matrix: Matrix) -> None:
        """Stopped before the refused run started, back before the run after the edge."""
        why = f"test thread late: {matrix.stopped_with=} {matrix.restarted_with=}"
        assert 0 == matrix.endpoint.requests[STOP_AT + 1], why
        assert matrix.endpoint.requests[RESTART_AT + 1] >= len(CASE_IDS), why

    def test_clean_scrapes_cover_the_scenario(self, matrix: Matrix) -> None:
        """Clean scrapes exist at the end and at most run boundaries."""
        assert max(matrix.clean) >= len(PLAN)
        served = [n for n in range(len(PLAN)) if PLAN[n].served]
        assert len(set(served) & set(matrix.clean)) >= len(served) // 2, sorted(matrix.clean)


class TestFaultKinds:
    """Each fault ends every case it hits in its error kind, counted under that kind."""

    @pytest.mark.parametrize("slot", FAULTS, ids=[s.name for s in FAULTS])
    def test_cases_end_in_the_kind(self, matrix: Matrix, slot: Slot) -> None:
        """The run's report: failing cases with the kind, status and attempts, others scored."""
        report = matrix.reports[matrix.index_of(slot)]
        expected = [
            (c, slot.kind, slot.attempts) if c in slot.failing else (c, None, 1) for c in CASE_IDS
        ]
        assert expected == _brief(report)
        for case in report["cases"]:
            if case["error"] is not None:
                assert slot.status == case["error"]["status"]
                assert case["error"]["message"]
                assert None is case["recall_at_k"] is case["answer_correct"]

    @pytest.mark.parametrize("slot", FAULTS, ids=[s.name for s in FAULTS])
    def test_counted_under_the_kind(self, matrix: Matrix, slot: Slot) -> None:
        """rag_eval_case_errors_total{kind} rose by the failing cases of the bracketed runs."""
        index = matrix.index_of(slot)
        before, after = bracket(matrix, index)
        at = known(matrix)
        rise = {k: at[after][k] - at[before][k] for k in at[after] if k.startswith("errors:")}
        expected = tally(matrix.reports[before:after])
        assert {k: v for k, v in expected.items() if k.startswith("errors:")} == rise
        if (before, after) == (index, index + 1):  # this run alone
            assert len(slot.failing) == rise[f"errors:{slot.kind}"]

    def test_messages_say_what_happened(self, matrix: Matrix) -> None:
        """Messages name the deadline, the status, the field, the cap, the lost connection."""
        first = {s.name: matrix.reports[i]["cases"][0]["error"] for i, s in enumerate(PLAN)}
        assert "within 0.5s (timeout_seconds)" in first["hang"]["message"]
        assert "within 0.5s (timeout_seconds)" in first["drip"]["message"]
        assert first["429"]["message"].startswith("HTTP 429 from flaky")
        assert "not valid JSON" in first["invalid-json"]["message"]
        assert "field 'retrieved' is a string" in first["wrong-types"]["message"]
        assert f"max_response_bytes ({CAP})" in first["50MiB"]["message"]
        assert "lost mid-response" in first["reset"]["message"]
        assert "cannot connect to flaky" in first["refused"]["message"]


class TestLimits:
    """The cap, the deadline and the retry policy hold under load from the endpoint."""

    def test_50_mib_bodies_cut_at_the_cap(self, matrix: Matrix) -> None:
        """Each 50 MiB reply was abandoned early, and the daemon's memory did not grow by it."""
        assert len(CASE_IDS) == len(matrix.streamed)
        assert all(sent < 16 * MiB for sent in matrix.streamed), matrix.streamed
        index = matrix.index_of(next(s for s in PLAN if s.name == "50MiB"))
        rss = [
            (p.after, process_sample(parse_samples(p.text), "process_resident_memory_bytes"))
            for p in matrix.scrapes
            if p.status == 200 and p.before == p.after and p.after in (index, index + 1)
        ]
        before = [v for n, v in rss if n == index and v is not None]
        after = [v for n, v in rss if n == index + 1 and v is not None]
        assert before and after
        assert max(after) - min(before) < 40 * MiB, (min(before), max(after))

    def test_retry_after_honoured_up_to_the_cap(self, matrix: Matrix) -> None:
        """429 retries wait Retry-After (1 s) capped at backoff_max; 503 retries jitter below."""
        run_of = {r["run_id"]: i for i, r in enumerate(matrix.reports)}
        sleeps: dict[str, list[float]] = {}
        for event in matrix.events("retry"):
            name = slot_of(run_of[event["run_id"]]).name
            sleeps.setdefault(name, []).append(event["sleep_seconds"])
        assert [BACKOFF_MAX] * (len(CASE_IDS) * RETRIES) == sleeps["429"]
        assert len(CASE_IDS) * RETRIES == len(sleeps["503"])
        assert all(s < BACKOFF_MAX for s in sleeps["503"])
        retried = {"429", "503", "refused", "refused-edge", "restarted-edge"}
        assert set() == set(sleeps) - retried

    def test_whole_call_deadline(self, matrix: Matrix) -> None:
        """A hanging or dripping endpoint costs about the deadline per case, not its delay."""
        for name in ("hang", "drip"):
            report = matrix.reports[matrix.index_of(next(s for s in PLAN if s.name == name))]
            latencies = [c["latency_seconds"] for c in report["cases"]]
            assert all(TIMEOUT - 0.01 <= s < TIMEOUT + 1.0 for s in latencies), (name, latencies)


class TestOutcomes:
    """Outcomes follow docs/daemon.md, and only complete runs move the quality gauges."""

    def test_outcome_of_every_run(self, matrix: Matrix) -> None:
        """Each run's logged outcome is the plan's (edge runs: whatever their report says)."""
        logged = [matrix.outcomes[r["run_id"]] for r in matrix.reports]
        expected = [
            slot_of(i).outcome or outcome_of(report) for i, report in enumerate(matrix.reports)
        ]
        assert expected == logged
        assert [outcome_of(r) for r in matrix.reports] == logged

    def test_flapping_alternates(self, matrix: Matrix) -> None:
        """Good and bad in turn: complete, failed, complete, incomplete, complete."""
        flaps = [matrix.outcomes[matrix.reports[i]["run_id"]] for i, s in enumerate(PLAN) if s.flap]
        assert ["complete", "failed", "complete", "incomplete", "complete"] == flaps

    def test_gauges_at_run_boundaries(self, matrix: Matrix) -> None:
        """Quality: the last complete run's; error ratio, duration and timestamp: the last run's."""
        stamps: list[float] = []
        for n, samples in sorted(matrix.clean.items()):
            if n == 0:
                assert dict.fromkeys(QUALITY) == quality(samples)
                continue
            done = matrix.reports[:n]
            last_complete = [r for r in done if outcome_of(r) == "complete"][-1]
            assert expected_quality(last_complete) == quality(samples), n
            assert done[-1]["summary"]["error_rate"] == sample(samples, "rag_eval_error_ratio")
            assert done[-1]["duration_seconds"] == sample(samples, "rag_eval_run_duration_seconds")
            stamps.append(sample(samples, "rag_eval_last_run_timestamp_seconds") or 0.0)
        assert stamps == sorted(set(stamps)) and 0.0 not in stamps  # moved at every run

    def test_quality_gauges_never_show_a_failing_run(self, matrix: Matrix) -> None:
        """At every scrape, the quality gauges are those of some complete run."""
        complete = [expected_quality(r) for r in matrix.reports if outcome_of(r) == "complete"] + [
            dict.fromkeys(QUALITY)
        ]
        partial_runs = [
            expected_quality(r) for r in matrix.reports if outcome_of(r) == "incomplete"
        ]
        assert partial_runs and all(p not in complete for p in partial_runs)
        seen = [quality(parse_samples(p.text)) for p in matrix.scrapes if p.status == 200]
        assert [] == [q for q in seen if q not in complete]

    def test_last_complete_timestamp_moves_only_on_complete_runs(self, matrix: Matrix) -> None:
        """Between clean boundaries, the timestamp changes iff a complete run happened."""
        name = "rag_eval_last_complete_run_timestamp_seconds"
        boundaries = sorted(matrix.clean)
        for a, b in itertools.pairwise(boundaries):
            moved = sample(matrix.clean[a], name) != sample(matrix.clean[b], name)
            any_complete = any(outcome_of(r) == "complete" for r in matrix.reports[a:b])
            assert any_complete == moved, (a, b)

    def test_clean_shutdown(self, matrix: Matrix) -> None:
        """Exit 0; the runs the daemon says it made are the runs logged, skips included."""
        result = matrix.result
        assert 0 == result.returncode, result.stderr
        assert [] == [e for e in result.logs if "unparsed" in e]
        assert [] == [e for e in result.logs if e.get("level") in ("error", "critical")]
        (stopped,) = matrix.events("daemon_stopped")
        logged = Counter(e["outcome"] for e in matrix.events("run"))
        skipped = len(matrix.events("run_skipped"))
        assert dict(logged) | ({"skipped": skipped} if skipped else {}) == stopped["runs"]


class TestReports:
    """No case is ever missing from a report, and the counters agree with the reports."""

    def test_every_report_has_every_case(self, matrix: Matrix) -> None:
        """Every report: all case ids in order; failed ones with a known kind and a message."""
        for path in matrix.paths:
            assert len(CASE_IDS) == read_report(path).case_count  # reads back as a report
        for report in matrix.reports:
            assert list(CASE_IDS) == [c["id"] for c in report["cases"]]
            assert len(CASE_IDS) == report["case_count"]
            failed = [c for c in report["cases"] if c["error"] is not None]
            assert len(failed) == report["error_count"]
            assert all(c["error"]["kind"] in ERROR_KINDS and c["error"]["message"] for c in failed)

    def test_edge_runs_are_consistent(self, matrix: Matrix) -> None:
        """Runs around the stop and restart: each case scored or refused, nothing else."""
        for i, slot in enumerate(PLAN):
            if slot.outcome is None:
                kinds = {k for _, k, _ in _brief(matrix.reports[i])}
                assert kinds <= {None, "connect"}, (slot.name, _brief(matrix.reports[i]))

    def test_counters_equal_the_reports_at_every_clean_scrape(self, matrix: Matrix) -> None:
        """Case errors by kind, retries and runs by outcome: the tally of the reports so far."""
        for n, samples in sorted(matrix.clean.items()):
            assert tally(matrix.reports[:n]) == counters(samples), n

    def test_log_lines_per_case(self, matrix: Matrix) -> None:
        """One `case` log event per case per run, with the report's error kind."""
        logged = Counter(
            (e["run_id"], e["case_id"], e["error_kind"]) for e in matrix.events("case")
        )
        expected = Counter(
            (r["run_id"], c["id"], c["error"]["kind"] if c["error"] else None)
            for r in matrix.reports
            for c in r["cases"]
        )
        assert expected == logged

"""SLO counters as Prometheus sees them: a real daemon over HTTP, scraped by a real
Prometheus across runs and across a restart.

Every run of the scripted endpoint has the same outcomes: three right answers, one wrong,
one HTTP 500. Its error ratio (0.2) is above the limit (0.1), so each run is incomplete
and counts what it scored: ``answers`` (answer_correct) 3 good and 1 bad, ``errors``
(no_error) 4 good and 1 bad. A restart starts the counters at zero again, as a Prometheus
counter's reset, and ``increase()`` over a window holding both processes counts the events
of both.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.mixed_golden import rag_body
from tests.support.ports import free_port
from tests.support.prometheus import DaemonProcess, PrometheusServer, require_binary

pytestmark = [pytest.mark.e2e, pytest.mark.prometheus]

FACTS = {"q1": "alpha", "q2": "beta", "q3": "gamma", "q4": "delta"}
REPLIES = {
    **{q: Reply(rag_body(["d1"], f"it is {fact}", [1])) for q, fact in FACTS.items()},
    "q4": Reply(rag_body(["d1"], "it is nothing", [1])),
    "q5": Reply(body={"detail": "boom"}, status=500),
}
#: per run: (good, bad) of each SLO
PER_RUN = {"answers": (3, 1), "errors": (4, 1)}


def _golden(path: Path) -> None:
    lines = [
        {
            "id": f"c{i}",
            "question": f"q{i}",
            "relevant_ids": ["d1"],
            "expected_facts": [FACTS.get(f"q{i}", "epsilon")],
        }
        for i in range(1, 6)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")


def _config(root: Path, url: str, port: int) -> Path:
    path = root / "evaluator.toml"
    path.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{root / "reports"}"

[[targets]]
name = "rag"
url = "{url}"
retry = {{ retries = 0 }}

[[jobs]]
target = "rag"
dataset = "{root / "golden.jsonl"}"
interval_seconds = 1

[[slos]]
name = "answers"
job = "rag"
sli = "answer_correct"
objective = 0.7
window = "1d"

[[slos]]
name = "errors"
job = "rag"
sli = "no_error"
objective = 0.5
window = "1d"
""",
        "utf-8",
    )
    return path


_SAMPLE = re.compile(r"^rag_eval_(runs|slo_events)_total\{(.*)\} (\S+)$", re.M)


def _counts(text: str) -> tuple[int, dict[tuple[str, str], float]]:
    """Runs counted (all outcomes) and each (slo, outcome)'s count, from one scrape."""
    runs = 0
    events: dict[tuple[str, str], float] = {}
    for family, labels, value in _SAMPLE.findall(text):
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if family == "runs":
            runs += int(float(value))
        else:
            events[pairs["slo"], pairs["outcome"]] = float(value)
    return runs, events


def _expected(runs: int) -> dict[tuple[str, str], float]:
    return {
        (slo, outcome): float(runs * n)
        for slo, (good, bad) in PER_RUN.items()
        for outcome, n in (("good", good), ("bad", bad))
    }


GOOD = 'rag_eval_slo_events_total{slo="answers",outcome="good"}'


def _page_events(daemon: DaemonProcess) -> int:
    """The events the status page says the SLO answers counted over its window."""
    page = daemon.get("/").text
    line = re.search(
        r'<dd class="slo" data-slo="answers".*?([\d,]+) events</span></dd>', page, re.S
    )
    assert line is not None, page[:2000]
    return int(line.group(1).replace(",", ""))


def _watch(daemon: DaemonProcess, prom: PrometheusServer, runs: int, samples: int) -> int:
    """Scrape until ``runs`` runs are counted, checking every scrape's counters against
    the runs it counts; then wait until Prometheus holds ``samples`` samples of them. The
    runs counted."""
    counted = 0
    while counted < runs:
        counted, events = _counts(daemon.get("/metrics").text)
        assert _expected(counted) == events, f"after {counted} runs: {events}"
    prom.wait_for(f"count_over_time({GOOD}[1h]) >= {samples}", lambda r: bool(r), timeout=30)
    return counted


def _raw_increase(values: list[float]) -> float:
    """What a counter's samples say it counted between the first and the last: each step
    up, and after a reset (a drop) the whole new value."""
    return sum(b - a if b >= a else b for a, b in itertools.pairwise(values))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, PrometheusServer]]:
    """The endpoint, the daemons' configuration on a fixed port, and a Prometheus scraping
    that port as the deploy bundle's job."""
    require_binary("prometheus")
    root = tmp_path_factory.mktemp("slo")
    _golden(root / "golden.jsonl")
    with LoopbackServer(REPLIES) as server:
        port = free_port()
        config = _config(root, server.url, port)
        with PrometheusServer(
            [f"127.0.0.1:{port}"], workdir=root / "prom", job_name="rag-evaluator"
        ) as prom:
            yield config, prom


def test_counters_add_each_runs_events_and_survive_a_restart_as_a_reset(
    stack: tuple[Path, PrometheusServer],
) -> None:
    """Each scrape's counters are its runs' events; after a restart they start again at
    zero, Prometheus sees one reset, increase() over both processes counts what the samples
    say was counted (the restart's reset included), at the SLI's exact error ratio; the
    status page's budget keeps the first process's events (restored from history)."""
    config, prom = stack
    args = ["--config", str(config), "--listen", config.read_text().split('"')[1]]
    with DaemonProcess(args, workdir=config.parent, name="first") as first:
        first.wait_ready()
        first_runs = _watch(first, prom, runs=3, samples=3)
        assert 0 == first.stop().returncode
    with DaemonProcess(args, workdir=config.parent, name="second") as second:
        second.wait_ready()
        runs, events = _counts(second.get("/metrics").text)
        assert _expected(runs) == events  # from zero again, not from the first's counts
        # the status page's ledger was restored from the history store: the first's events
        # are in its budget beside the second's
        assert _page_events(second) >= 4 * (first_runs + runs)
        (held,) = prom.query(f"count_over_time({GOOD}[1h])")
        _watch(second, prom, runs=2, samples=int(float(held["value"][1])) + 2)
        (matrix,) = prom.api("/api/v1/query", query=f"{GOOD}[1h]")["result"]
        values = [float(v) for _, v in matrix["values"]]
        (resets,) = prom.query(f"resets({GOOD}[1h])")
        assert 1.0 == float(resets["value"][1])
        (seen,) = prom.query(f"increase({GOOD}[1h])")
        # extrapolated past the samples by at most 1.1 average steps at each end
        raw, steps = _raw_increase(values), len(values) - 1
        assert raw <= float(seen["value"][1]) <= raw * (steps + 2.2) / steps
        ratio = (
            'sum(increase(rag_eval_slo_events_total{slo="answers",outcome="bad"}[1h]))'
            ' / sum(increase(rag_eval_slo_events_total{slo="answers"}[1h]))'
        )
        (value,) = prom.query(ratio)
        assert 0.25 == pytest.approx(float(value["value"][1]), abs=1e-9)
        objective = prom.query('rag_eval_slo_objective{slo="answers"}')
        assert [0.7] == [float(o["value"][1]) for o in objective]
        assert 0 == second.stop().returncode

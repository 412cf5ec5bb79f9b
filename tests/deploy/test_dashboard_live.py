"""Every query of the Grafana dashboard returns data from a real Prometheus scraping a real daemon.

One stack for the module: a scripted RAG endpoint on loopback (right and wrong answers, a
server error, a body that is not JSON, a flaky case that succeeds on retry, stage timings),
a loopback LLM judge (honest, with token usage, asked twice a check) whose agreement with a
few human labels the daemon re-checks every second against a stored calibration, a baseline
report made first by ``evaluator run``, ``evaluator serve`` running the same job every 2 s
against that baseline, and a Prometheus (Debian's 2.42) scraping it every second as the deploy
bundle does (job ``rag-evaluator``, every rule file of deploy/prometheus/rules loaded and
evaluated every second; the job counts the SLO "answers" those rules' generated SLO group records).

Each panel target and each query variable is then sent through ``/api/v1/query`` twice:
with the variables set as Grafana sets them when the user picks the one target and dataset
the variable queries offer (multi-value variables, so the value is regex-escaped), and with
"All" (``.*``). Each must parse (status success) and return at least one finite sample.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaluator.judge.labels import Label, append_label
from evaluator.judge.record import answer_hash
from tests.deploy.dashboard_queries import DEFAULT_SUBSTITUTIONS, dashboard_queries
from tests.deploy.deploy_support import DASHBOARD, RULE_FILES, SCRAPE_JOB, recording_rules
from tests.judge import calibrations
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer, Reply
from tests.support.mixed_golden import MIXED_CASES, MIXED_REPLIES, case, rag_body
from tests.support.prometheus import (
    EVALUATOR,
    DaemonProcess,
    PrometheusServer,
    require_binary,
)

pytestmark = [pytest.mark.e2e, pytest.mark.prometheus]

#: Panels that cannot show data in a Prometheus started seconds ago, with the reason (for
#: example a 7-day baseline recorded with `offset 1d`). Keep this empty unless a panel truly
#: needs history: the dashboard's baselines come from rag_eval_baseline_ratio, which a fresh
#: daemon exports at once.
NO_DATA_IN_A_FRESH_PROMETHEUS: Mapping[str, str] = {
    # the daemon's drift test needs a window of runs before the latest ones (history.recent
    # plus earlier runs); this stack waits for three. tests/history/ covers the verdict.
    "Drift verdict by check": "the history window needs more runs than the stack waits for",
    "Drift shift by check": "the history window needs more runs than the stack waits for",
}

DATASET = "golden"
INTERVAL_SECONDS = 2
#: complete runs Prometheus must have seen before the queries are sent
RUNS = 3


CASES = [
    *MIXED_CASES,
    case(13, relevant_ids=["d11"], expected_facts=["flaky"]),  # 503, then right on retry
    # a conversation: its first turn right, its follow-up wrong (the conversation row's data)
    {
        "id": "c20",
        "turns": [
            {"question": "q20", "relevant_ids": ["d1"], "expected_facts": ["七天"]},
            {"question": "q21", "relevant_ids": ["d1"], "expected_facts": ["七天"]},
        ],
    },
]
#: records a run holds: one per question, one per turn
RECORDS = sum(len(c.get("turns", [c])) for c in CASES)
# some right, some wrong, two failures per run: 2/15 errors, within the 0.25 limit set below
REPLIES = MIXED_REPLIES
FLAKY = "q13"
CONVERSATION_REPLIES = {
    "q20": Reply(rag_body(["d1"], "申请需在七天内提交", [1]), delay=0.01),
    "q21": Reply(rag_body(["x", "d1"], "大约一天", [1]), delay=0.01),
}


def _streamed(reply: Reply) -> Reply:
    """The reply as the streamed target sends it: one NDJSON event holding the whole answer,
    with token usage (the delivery panels' data: time to first token, tokens, cost); errors
    and bodies that are not JSON as they are."""
    if not isinstance(reply.body, dict) or reply.status != 200:
        return reply
    body = {**reply.body, "usage": {"input": 120, "output": 9}}
    return Reply(raw=(json.dumps(body, ensure_ascii=False) + "\n").encode(), delay=reply.delay)


class Script:
    """The endpoint's replies, streamed; the flaky question alternates 503 and a right
    answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flaky = itertools.count()

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The scripted reply to the request's question, the flaky case failing every other
        attempt."""
        return _streamed(self._reply(str(request.get("question", ""))))

    def _reply(self, question: str) -> Reply:
        """The scripted reply to ``question`` before it is streamed."""
        if question == FLAKY:
            with self._lock:
                attempt = next(self._flaky)
            if attempt % 2 == 0:
                return Reply(body={"detail": "busy"}, status=503, delay=0.01)
            return Reply(rag_body(["d11"], "flaky but right", [1]), delay=0.02)
        if question in CONVERSATION_REPLIES:
            return CONVERSATION_REPLIES[question]
        return REPLIES[question]


JUDGE_MODEL = "dashboard-judge"


def _judge_files(root: Path) -> Path:
    """Human labels for three of the endpoint's answers, and a calibration calling the judge
    calibrated for fact support (as evaluator calibrate writes it, derived from its counts):
    the judge panels' data."""
    labels = root / "labels.jsonl"
    at = "2026-01-01T00:00:00Z"
    for case_id, answer, check, verdict in (
        ("c01", "申请需在七天内提交", "fact_support", True),
        ("c04", "大约一天", "fact_support", False),
        ("c07", "没有足够证据回答。", "refusal", True),
    ):
        append_label(labels, Label(case_id, answer_hash(answer), check, verdict, "ann", at))
    (root / "reports").mkdir(exist_ok=True)
    calibrations.write(root / "reports", calibrations.entry(JUDGE_MODEL))
    return labels


def _config(root: Path, url: str, target: str, judge: str) -> Path:
    """The job: no target name, so the label is the default ``host:port`` (it has dots)."""
    labels = _judge_files(root)
    path = root / "evaluator.toml"
    path.write_text(
        f"""
reports_dir = "{root / "reports"}"
error_ratio_limit = 0.25

[[targets]]
url = "{url}"

# streamed (time to first token), with usage and prices (tokens and cost)
[targets.streaming]
format = "ndjson"
content = "answer"

[targets.response]
ids = "retrieved[].id"
texts = "retrieved[].text"
scores = "retrieved[].score"
citations = "citations"
timings = "timings"
input_tokens = "usage.input"
output_tokens = "usage.output"

[targets.prices]
input_per_1k = 0.5
output_per_1k = 1.5

[targets.retry]
retries = 2
backoff_initial_seconds = 0.01
backoff_max_seconds = 0.05

[[jobs]]
target = "{target}"
dataset = "{root / f"{DATASET}.jsonl"}"
interval_seconds = {INTERVAL_SECONDS}
baseline = "{root / "baseline.json"}"
k = 3
concurrency = 4

# the SLO the deploy bundle's generated rules (deploy/prometheus/rules/slo.yml) record
[[slos]]
name = "answers"
job = "{target}"
sli = "answer_correct"
objective = 0.7
window = "28d"

[judge]
url = "{judge}"
model = "{JUDGE_MODEL}"
input_price = 0.5
output_price = 1.5
drift_labels = "{labels}"
drift_interval_seconds = 1
# two votes a check: the vote agreement panel has an alpha to show
samples = 2
""",
        "utf-8",
    )
    return path


def _make_baseline(config: Path, root: Path) -> None:
    """``evaluator run`` of the job once: the approved report the daemon's gate compares with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    done = subprocess.run(
        [EVALUATOR, "run", "--config", str(config), "--output", str(root / "baseline.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=root,
        env=env,
    )
    assert 0 == done.returncode, done.stdout + done.stderr
    report = json.loads((root / "baseline.json").read_text("utf-8"))
    assert (RECORDS, 2) == (report["case_count"], report["error_count"])


def grafana_regex_escape(value: str) -> str:
    """What Grafana's Prometheus data source puts in a query for a multi-value variable.

    ``prometheusSpecialRegexEscape``: each regex metacharacter gets two backslashes in the
    query text, which the PromQL string literal turns into one for the regex.
    """
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"([$^*{}\[\]'+?.()|])", r"\\\\\1", value)


@dataclass
class Stack:
    prom: PrometheusServer
    daemon: DaemonProcess
    target: str
    #: variable values as Grafana substitutes them after the user picks the offered choice
    selected: dict[str, str]


def _select_variables(prom: PrometheusServer, target: str) -> dict[str, str]:
    """Resolve the dashboard's query variables one after the other, as Grafana does."""
    substitutions = dict(DEFAULT_SUBSTITUTIONS)
    expected = {"target": target, "dataset": DATASET, "slo": "answers"}
    for name in ("target", "dataset", "slo"):
        queries = dict(dashboard_queries(DASHBOARD, substitutions))
        offered = sorted(r["metric"][name] for r in prom.query(queries[f"variable {name}"]))
        assert [expected[name]] == offered, name
        substitutions[name] = grafana_regex_escape(offered[0])
    return substitutions


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Prometheus scraping a daemon that runs a judged golden set against a scripted target,
    with a baseline, for the dashboard's live queries."""
    require_binary("prometheus")
    root = tmp_path_factory.mktemp("dashboard")
    (root / f"{DATASET}.jsonl").write_text(
        "\n".join(json.dumps(c, ensure_ascii=False) for c in CASES) + "\n", "utf-8"
    )
    with LoopbackServer(Script()) as server, LoopbackJudge() as judge:
        target = f"127.0.0.1:{server.port}"
        config = _config(root, server.url, target, judge.url)
        _make_baseline(config, root)
        with DaemonProcess(["--config", str(config)], workdir=root) as daemon:
            daemon.wait_ready()
            with PrometheusServer(
                [daemon.address], workdir=root / "prom", job_name=SCRAPE_JOB, rule_files=RULE_FILES
            ) as prom:
                sel = f'job="{SCRAPE_JOB}", target="{target}", dataset="{DATASET}"'
                # several complete runs seen, counters and histograms moving, the gate judged
                prom.wait_for(
                    f'rag_eval_runs_total{{{sel}, outcome="complete"}} >= {RUNS}',
                    lambda r: 1 == len(r),
                    timeout=RUNS * INTERVAL_SECONDS + 30,
                )
                for expr in (
                    f"increase(rag_eval_runs_total{{{sel}, outcome='complete'}}[1h]) > 0",
                    f"rate(rag_eval_case_latency_seconds_count{{{sel}}}[1h]) > 0",
                    f"rate(rag_eval_stage_latency_seconds_count{{{sel}}}[1h]) > 0",
                    f"increase(rag_eval_case_errors_total{{{sel}}}[1h]) > 0",
                    f"increase(rag_eval_case_retries_total{{{sel}}}[1h]) > 0",
                    f"rag_eval_gate_rule_failing{{{sel}}}",
                    "rag_eval:quality:ratio",
                    f"rate(rag_eval_judge_call_seconds_count{{{sel}}}[1h]) > 0",
                    f"rag_eval_judge_kappa{{{sel}}}",
                    f"rag_eval_judge_agreement_floor{{{sel}}}",
                    'rag_eval:slo_error_budget_remaining:ratio{slo="answers"}',
                    'rag_eval:slo_burn_rate:ratio{slo="answers",window="31m"}',
                ):
                    prom.wait_for(expr)
                yield Stack(prom, daemon, target, _select_variables(prom, target))
            result = daemon.stop()
            assert 0 == result.returncode, result.stderr


#: (id, panel title) of every query, listed statically so each is a test of its own
QUERY_IDS = [
    f"{i:02d} {title}"
    for i, (title, _expr) in enumerate(dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS))
]


def _finite(sample: dict[str, Any]) -> bool:
    return math.isfinite(float(sample["value"][1]))


@pytest.mark.parametrize("choice", ["selected", "all"])
@pytest.mark.parametrize("index", range(len(QUERY_IDS)), ids=QUERY_IDS)
def test_dashboard_query_returns_data(stack: Stack, index: int, choice: str) -> None:
    """The query parses in Prometheus and returns finite samples for the running job."""
    substitutions = stack.selected if choice == "selected" else DEFAULT_SUBSTITUTIONS
    title, expr = dashboard_queries(DASHBOARD, substitutions)[index]
    if title in NO_DATA_IN_A_FRESH_PROMETHEUS:
        pytest.skip(f"{title}: {NO_DATA_IN_A_FRESH_PROMETHEUS[title]}")
    result = stack.prom.query(expr)  # asserts status success
    assert result, f"{title}: no data for {expr}"
    assert all(_finite(s) for s in result), f"{title}: {expr} -> {result}"
    for sample in result:
        labels = sample["metric"]
        assert labels.get("target", stack.target) == stack.target, (title, labels)
        assert labels.get("dataset", DATASET) == DATASET, (title, labels)


def test_every_panel_is_queried() -> None:
    """Each panel with a query is in the list above, and every exception names a real panel."""
    dashboard = json.loads(DASHBOARD.read_text("utf-8"))
    titles = {
        p["title"]
        for top in dashboard["panels"]
        for p in (top, *top.get("panels", []))
        if p.get("targets")
    }
    queried = {title for title, _ in dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS)}
    assert titles <= queried
    assert {"variable target", "variable dataset"} <= queried
    assert set(NO_DATA_IN_A_FRESH_PROMETHEUS) <= titles


def test_rules_load_and_evaluate_in_prometheus(stack: Stack) -> None:
    """Every rule file loads into a real Prometheus and each rule evaluates without error."""
    groups = stack.prom.api("/api/v1/rules")["groups"]
    assert {Path(g["file"]).name for g in groups} == {p.name for p in RULE_FILES}
    unhealthy = [
        (r["name"], r.get("lastError")) for g in groups for r in g["rules"] if r["health"] != "ok"
    ]
    assert [] == unhealthy
    recorded = {r["name"] for g in groups for r in g["rules"] if r["type"] == "recording"}
    assert {r["record"] for r in recording_rules()} == recorded


def test_selected_variables_are_regex_escaped(stack: Stack) -> None:
    """The target label has dots: Grafana escapes them, and the queries still match."""
    assert stack.selected["target"] == stack.target.replace(".", "\\\\.")
    assert stack.selected["dataset"] == DATASET

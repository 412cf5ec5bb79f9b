"""Three shards aggregated through Prometheus give the numbers of one replica over the whole set.

One stack for the module: a scripted RAG endpoint on loopback; a golden set of 30 cases with
varied outcomes (ranks 1 to 4 or beyond K, right and wrong answers, partial facts, citations
right and wrong, refusals right and wrong, retrieval-only cases, three failures); three
``evaluator serve`` replicas with ``EVALUATOR_SHARD_INDEX`` 0, 1, 2 and
``EVALUATOR_SHARD_COUNT=3`` (dataset label ``golden``) and one unsharded replica over the
same file (dataset label ``whole``, so the sums never mix); and one Prometheus scraping all
four as the deploy bundle does (job ``rag-evaluator``, the shards told apart by ``instance``)
with deploy/prometheus/rules/recording.yml loaded.

The recording rule ``rag_eval:quality:ratio`` over the three shards equals, per metric, the
unsharded replica's report on disk and its own gauges, to 1e-9; the mean of the shards'
ratio gauges does not, which is why the replicas export sums and counts.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaluator.daemon.report_store import LATEST, job_folder_name
from evaluator.daemon.shard import shard_cases
from evaluator.dataset import load_dataset
from tests.deploy.deploy_support import QUALITY_METRICS, RULES_DIR, SCRAPE_JOB, SHARDED_METRICS
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess, PrometheusServer, require_binary

pytestmark = [pytest.mark.e2e, pytest.mark.prometheus]

SHARDS = 3
TARGET = "loopback"
SHARDED, WHOLE = "golden", "whole"  # dataset labels: the shards', the unsharded replica's
RECORDED = "rag_eval:quality:ratio"
TOLERANCE = 1e-9

#: metric label of rag_eval_quality_numerator/denominator -> the report summary's key
SUMMARY_KEY: Mapping[str, str] = {
    **{m: m for m in SHARDED_METRICS if m != "error_ratio"},
    "error_ratio": "error_rate",
}
#: metric label -> the replica's own ratio gauge (fact_recall has none)
GAUGE: Mapping[str, str] = {
    **{m: f"rag_eval_{m}" for m in QUALITY_METRICS},
    "error_ratio": "rag_eval_error_ratio",
}

ERRORS = {11: 500, 23: 404}  # HTTP status errors; case 29 answers a body that is not JSON
BROKEN_JSON = 29


def _case(i: int) -> dict[str, Any]:
    case: dict[str, Any] = {"id": f"case-{i:02d}", "question": f"q{i:02d}"}
    if i % 10 == 7:
        return {**case, "unanswerable": True}
    relevant = [f"d{i}", f"e{i}"] if i % 4 == 0 else [f"d{i}"]
    case["relevant_ids"] = relevant
    if i % 10 != 3:  # retrieval-only otherwise
        case["expected_facts"] = [f"fact{i}", f"extra{i}"] if i % 4 == 0 else [f"fact{i}"]
    return case


CASES = [_case(i) for i in range(1, 31)]


def _reply(i: int) -> Reply:
    """A deterministic, case-specific mix of good and bad retrieval, answers and citations."""
    if i in ERRORS:
        return Reply(body={"detail": "nope"}, status=ERRORS[i])
    if i == BROKEN_JSON:
        return Reply(raw=b"{not json")
    case = CASES[i - 1]
    timings = {"embedding": 0.001 * i, "rerank": 0.002, "model": 0.01}
    body: dict[str, Any]
    if case.get("unanswerable"):
        if i % 20 == 7:  # 7, 27: a correct refusal with nothing retrieved
            body = {"answer": "没有足够证据回答。", "retrieved": [], "citations": []}
        else:  # 17: a confident answer from irrelevant evidence
            body = {"answer": "Yes, of course.", "retrieved": [{"id": "zz"}], "citations": [1]}
        return Reply(body={**body, "timings": timings})
    relevant = case["relevant_ids"]
    filler = [f"x{i}-{n}" for n in range(4)]
    # the first relevant id at rank 1 to 4, or at rank 6, beyond K=5 (recall 0, MRR 1/6)
    position = i % 5 if i % 5 < 4 else 5
    head = [*filler, "y"][:position]
    ranked = [*head, relevant[0], *filler[len(head) :]]
    if len(relevant) > 1 and i % 8 == 0:
        ranked.insert(1, relevant[1])
    facts = case.get("expected_facts", [])
    if i % 3 == 0:
        answer = "something else entirely"
    elif len(facts) > 1 and i % 8 == 4:
        answer = f"only {facts[0]}"  # partial credit on fact recall
    else:
        answer = " and ".join(facts) or "see the documents"
    citations: list[Any] = [ranked.index(relevant[0]) + 1] if i % 2 else [1, 2]
    retrieved = [{"id": d, "score": 10.0 - n} for n, d in enumerate(ranked)]
    body = {"answer": answer, "retrieved": retrieved, "citations": citations, "timings": timings}
    return Reply(body=body)


SCRIPT = {f"q{i:02d}": _reply(i) for i in range(1, 31)}


def _config(root: Path, url: str, dataset: Path, label: str | None) -> Path:
    path = root / "evaluator.toml"
    path.write_text(
        f"""
reports_dir = "{root / "reports"}"
error_ratio_limit = 0.5

[[targets]]
name = "{TARGET}"
url = "{url}"

[[jobs]]
target = "{TARGET}"
dataset = "{dataset}"
{f'dataset_label = "{label}"' if label else ""}
interval_seconds = 3600
k = 5
concurrency = 4
""",
        "utf-8",
    )
    return path


@dataclass
class Stack:
    prom: PrometheusServer
    golden: Path
    shards: list[DaemonProcess]
    whole: DaemonProcess
    shard_reports: list[dict[str, Any]]
    whole_report: dict[str, Any]

    def query(self, expr: str) -> dict[str, float]:
        """metric label -> value of an instant query keyed by ``metric``."""
        result = self.prom.query(expr)
        values = {r["metric"]["metric"]: float(r["value"][1]) for r in result}
        assert len(values) == len(result), result
        return values


def _latest(root: Path, dataset_label: str) -> dict[str, Any]:
    folder = job_folder_name(f"{TARGET}/{dataset_label}")
    data: dict[str, Any] = json.loads((root / "reports" / folder / LATEST).read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Prometheus scraping the replicas that each run a shard of one golden set."""
    require_binary("prometheus")
    root = tmp_path_factory.mktemp("shards")
    golden = root / f"{SHARDED}.jsonl"
    golden.write_text("\n".join(json.dumps(c) for c in CASES) + "\n", "utf-8")
    with LoopbackServer(SCRIPT) as server:
        shards = []
        for index in range(SHARDS):
            folder = root / f"shard-{index}"
            folder.mkdir()
            shards.append(
                DaemonProcess(
                    ["--config", str(_config(folder, server.url, golden, None))],
                    workdir=folder,
                    env={
                        "EVALUATOR_SHARD_INDEX": str(index),
                        "EVALUATOR_SHARD_COUNT": str(SHARDS),
                    },
                    name=f"shard-{index}",
                )
            )
        (root / "whole").mkdir()
        whole = DaemonProcess(
            ["--config", str(_config(root / "whole", server.url, golden, WHOLE))],
            workdir=root / "whole",
            name="whole",
        )
        daemons = [*shards, whole]
        with contextlib.ExitStack() as running:
            for daemon in daemons:
                running.enter_context(daemon)
            for daemon in daemons:
                daemon.wait_ready()
                run = daemon.wait_for_log(lambda e: e.get("event") == "run", timeout=30)
                assert "complete" == run["outcome"], run
            with PrometheusServer(
                [d.address for d in daemons],
                workdir=root / "prom",
                job_name=SCRAPE_JOB,
                rule_files=[RULES_DIR / "recording.yml"],
            ) as prom:
                # every shard's sums scraped, then a rule evaluation after that moment
                count = f'count by (metric) (rag_eval_quality_denominator{{dataset="{SHARDED}"}})'
                prom.wait_for(
                    f"{count} == {SHARDS}", lambda r: len(SHARDED_METRICS) == len(r), timeout=30
                )
                prom.wait_for(
                    f'rag_eval_quality_denominator{{dataset="{WHOLE}"}}',
                    lambda r: len(SHARDED_METRICS) == len(r),
                )
                seen_all = time.time()
                prom.wait_for(
                    f"timestamp({RECORDED}) > {seen_all}",
                    lambda r: 2 * len(SHARDED_METRICS) == len(r),
                )
                yield Stack(
                    prom=prom,
                    golden=golden,
                    shards=shards,
                    whole=whole,
                    shard_reports=[_latest(root / f"shard-{i}", SHARDED) for i in range(SHARDS)],
                    whole_report=_latest(root / "whole", WHOLE),
                )
            for daemon in daemons:
                result = daemon.stop()
                assert 0 == result.returncode, result.stderr


class TestShards:
    """Each replica ran its own part of the golden set, chosen by the stable hash of the id."""

    def test_the_shards_partition_the_golden_set(self, stack: Stack) -> None:
        """Disjoint, together every case once, each exactly shard_cases() of its index."""
        dataset = load_dataset(stack.golden)
        ids = [[c["id"] for c in r["cases"]] for r in stack.shard_reports]
        for index, shard_ids in enumerate(ids):
            assert [c.id for c in shard_cases(dataset.questions, index, SHARDS)] == shard_ids
        assert sorted(c["id"] for c in CASES) == sorted(i for shard in ids for i in shard)
        assert [c["id"] for c in CASES] == [c["id"] for c in stack.whole_report["cases"]]
        sizes = sorted(len(shard) for shard in ids)
        assert sizes[0] < sizes[-1], "equal shards would hide a mean of means"

    def test_each_shard_is_scraped_as_its_own_instance(self, stack: Stack) -> None:
        """A real Prometheus scrapes each shard as its own instance of the job."""
        result = stack.prom.query(f'rag_eval_job_info{{job="{SCRAPE_JOB}", dataset="{SHARDED}"}}')
        assert sorted(d.address for d in stack.shards) == sorted(
            r["metric"]["instance"] for r in result
        )
        assert {TARGET} == {r["metric"]["target"] for r in result}


class TestAggregation:
    """sum(numerator) / sum(denominator) over the shards is the whole set's number."""

    def test_recorded_ratio_over_shards_equals_the_unsharded_report(self, stack: Stack) -> None:
        """The ratio recorded over the shards equals the unsharded run's report."""
        summary = stack.whole_report["summary"]
        recorded = stack.query(f'{RECORDED}{{target="{TARGET}", dataset="{SHARDED}"}}')
        assert set(SHARDED_METRICS) == set(recorded)
        for metric, value in recorded.items():
            expected = summary[SUMMARY_KEY[metric]]
            assert expected == pytest.approx(value, abs=TOLERANCE, rel=0), metric
        # non-trivial numbers, so equality means something
        # (this golden set refuses all or none of a kind: the refusal rates are 0 or 1)
        nontrivial = [m for m in SHARDED_METRICS if not m.endswith("refusal_rate")]
        assert all(0 < summary[SUMMARY_KEY[m]] < 1 for m in nontrivial)

    def test_recorded_ratio_over_shards_equals_the_unsharded_gauges(self, stack: Stack) -> None:
        """The ratio recorded over the shards equals the unsharded daemon's own gauges."""
        recorded = stack.query(f'{RECORDED}{{target="{TARGET}", dataset="{SHARDED}"}}')
        whole_recorded = stack.query(f'{RECORDED}{{target="{TARGET}", dataset="{WHOLE}"}}')
        sel = f'job="{SCRAPE_JOB}", target="{TARGET}", dataset="{WHOLE}"'
        numerator = stack.query(f"rag_eval_quality_numerator{{{sel}}}")
        denominator = stack.query(f"rag_eval_quality_denominator{{{sel}}}")
        for metric in SHARDED_METRICS:
            own = [numerator[metric] / denominator[metric], whole_recorded[metric]]
            if metric in GAUGE:
                (sample,) = stack.prom.query(f"{GAUGE[metric]}{{{sel}}}")
                own.append(float(sample["value"][1]))
            assert own == pytest.approx([recorded[metric]] * len(own), abs=TOLERANCE, rel=0), metric

    def test_the_sums_add_up_to_the_whole(self, stack: Stack) -> None:
        """Numerators and denominators of the shards add up to the unsharded replica's."""
        for name in ("rag_eval_quality_numerator", "rag_eval_quality_denominator"):
            shards = stack.query(f'sum by (metric) ({name}{{dataset="{SHARDED}"}})')
            whole = stack.query(f'sum by (metric) ({name}{{dataset="{WHOLE}"}})')
            assert set(SHARDED_METRICS) == set(shards)
            assert whole == pytest.approx(shards, abs=TOLERANCE, rel=0), name
        cases = stack.query(f'rag_eval_quality_denominator{{dataset="{WHOLE}"}}')["error_ratio"]
        assert len(CASES) == cases

    def test_a_mean_of_the_shards_ratios_is_wrong(self, stack: Stack) -> None:
        """Averaging the shards' ratio gauges misses the whole set's number for every metric."""
        summary = stack.whole_report["summary"]
        for metric, gauge in GAUGE.items():
            (naive,) = stack.prom.query(f'avg({gauge}{{dataset="{SHARDED}"}})')
            per_shard = [r["summary"][SUMMARY_KEY[metric]] for r in stack.shard_reports]
            assert sum(per_shard) / SHARDS == pytest.approx(float(naive["value"][1]), abs=1e-9)
            assert abs(float(naive["value"][1]) - summary[SUMMARY_KEY[metric]]) > 1e-3, metric

"""``gate --pushgateway`` against Debian's real Pushgateway, scraped by a real Prometheus.

The scrape is the one the Pushgateway's documentation prescribes (``honor_labels: true``, so
each pushed group keeps its own ``job``), with the deployment's alerting rules loaded. Two
targets gated on one golden set keep a verdict each, and a CI verdict never becomes the
daemon's ``RagEvalGateFailing``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gate.factories import EXERCISE_BASELINE, EXERCISE_CANDIDATE, summary_report, write
from tests.support.prometheus import PrometheusServer, Pushgateway

pytestmark = [pytest.mark.e2e, pytest.mark.prometheus]

EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules"


def _report(values: dict[str, float], target: str) -> dict[str, Any]:
    report = summary_report(values)
    report["target"] = target
    return report


def _gate(tmp_path: Path, target: str, candidate: dict[str, float], gateway: str) -> int:
    baseline = write(tmp_path / f"{target}-baseline.json", _report(EXERCISE_BASELINE, target))
    judged = write(tmp_path / f"{target}-candidate.json", _report(candidate, target))
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    args = ["--baseline", str(baseline), "--candidate", str(judged), "--pushgateway", gateway]
    done = subprocess.run(
        [EVALUATOR, "gate", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "warning" not in done.stderr, done.stderr
    return done.returncode


def _by_target(result: list[dict[str, Any]]) -> dict[str, str]:
    return {r["metric"]["target"]: r["value"][1] for r in result}


def test_pushed_verdicts_keep_their_own_names_and_one_group_per_target(tmp_path: Path) -> None:
    """A real Pushgateway keeps the gate's verdicts under their own names, one group per target,
    beside what an older evaluator pushed."""
    with Pushgateway(workdir=tmp_path / "pushgateway") as gateway:
        assert 2 == _gate(tmp_path, "rag-a", EXERCISE_CANDIDATE, gateway.url)
        assert 0 == _gate(tmp_path, "rag-b", EXERCISE_BASELINE, gateway.url)
        # what an older evaluator pushed: the daemon's own gauge name under the gate's job
        old = httpx.put(
            f"{gateway.url}/metrics/job/rag_eval_gate/dataset/golden/target/rag-old",
            content=(
                '# TYPE rag_eval_gate_passing gauge\nrag_eval_gate_passing{target="rag-old"} 0\n'
            ),
            timeout=10,
        )
        assert 200 == old.status_code, old.text
        with PrometheusServer(
            [gateway.address],
            workdir=tmp_path / "prometheus",
            job_name="pushgateway",
            honor_labels=True,
            rule_files=sorted(RULES.glob("*.yml")),
        ) as prom:
            passing = prom.wait_for(
                'rag_eval_ci_gate_passing{job="rag_eval_gate",dataset="golden"}',
                lambda r: len(r) == 2,
            )
            assert {"rag-a": "0", "rag-b": "1"} == _by_target(passing)
            failed = prom.query('rag_eval_ci_gate_failed_rules{job="rag_eval_gate"}')
            assert {"rag-a", "rag-b"} == set(_by_target(failed))
            assert "0" == _by_target(failed)["rag-b"] != _by_target(failed)["rag-a"]
            rules = prom.query('rag_eval_ci_gate_rule_passing{job="rag_eval_gate",target="rag-a"}')
            assert any(r["value"][1] == "0" for r in rules)
            candidate = prom.query("rag_eval_ci_gate_candidate_mrr")
            assert {"rag-a", "rag-b"} == set(_by_target(candidate))
            # nothing the gate pushes wears a daemon series' name
            pushed = prom.query('{job="rag_eval_gate",target=~"rag-a|rag-b"}')
            # (push_time_seconds, push_failure_time_seconds: the Pushgateway's own)
            names = {r["metric"]["__name__"] for r in pushed} - {
                "push_time_seconds",
                "push_failure_time_seconds",
            }
            assert names and all(n.startswith("rag_eval_ci_gate_") for n in names), sorted(
                n for n in names if not n.startswith("rag_eval_ci_gate_")
            )
            # the rules have been evaluated several times with the pushed 0s in place: the
            # daemon's alert would be pending already had it matched any of them
            prom.wait_for('rag_eval_gate_passing{target="rag-old"}', lambda r: len(r) == 1)
            _evaluated_rules_since(prom, time.time())
            assert [] == prom.query('ALERTS{alertname="RagEvalGateFailing"}')


def _evaluated_rules_since(prom: PrometheusServer, since: float, timeout: float = 20.0) -> None:
    """Wait until the quality group has been evaluated twice after ``since``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        groups = prom.api("/api/v1/rules")["groups"]
        (group,) = [g for g in groups if g["name"] == "rag-eval-quality"]
        last = group.get("lastEvaluation", "")
        if last and _parse(last) > since + 1.5:
            return
        time.sleep(0.2)
    raise AssertionError("the alerting rules were not evaluated")


def _parse(stamp: str) -> float:
    from datetime import datetime

    # Prometheus writes nanoseconds; fromisoformat takes up to microseconds
    head, _, rest = stamp.partition(".")
    fraction = "".join(c for c in rest if c.isdigit())[:6]
    zone = rest[len(rest.rstrip("Z+-:0123456789")) :] if rest else ""
    zone = "+00:00" if stamp.endswith("Z") else zone[-6:]
    return datetime.fromisoformat(f"{head}.{fraction or '0'}{zone}").timestamp()

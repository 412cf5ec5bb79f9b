"""The judge's default concurrency, chosen from a measurement against judges that rate-limit.

A judged run's wall time is the judge's latency times the calls, divided by the calls in
flight: at the old default of 2, a 200 ms judge judges 10 checks a second, a quarter of what
peers get at their defaults of 16 or 20. But a judge behind a provider's rate limit answers
429 with ``Retry-After`` past a number of calls a second, and concurrency past that limit
buys nothing but refusals (each costing an attempt of the call's retries).

The judge here is the loopback judge of ``tests/support/judges.py`` with a 200 ms latency, in
a thread of this process (the figure is wall time, dominated by the judge's sleeps), in two
settings: a generous limit (``GENEROUS`` requests a second) and a tight one (``TIGHT``), each
refused request answered 429 with ``Retry-After: 1``. For each concurrency of
``CONCURRENCIES`` a report of ``CASES`` answered cases (a fact-support and a groundedness
check each, and the canaries) is judged with the judge's default retries; the figures are
the checks judged a second and the checks that ran out of retries (``judge_http_status``).

The concurrency chosen is the smallest that reaches 90% of the best throughput against the
generous judge and loses no check against the tight one; :data:`DEFAULT` is
``JudgeConfig``'s default, and the figure says whether the measurement agrees with it.

``python -m tests.benchmarks.run --only judge_concurrency``
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.settings import JudgeConfig
from evaluator.models import Dataset
from evaluator.report import RunReport
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.callable import CallableTarget
from tests.benchmarks.support import figure, golden_set, quick
from tests.support.judges import LoopbackJudge

LATENCY = 0.2
GENEROUS = 100
TIGHT = 10
CONCURRENCIES = (2, 4, 8, 16, 32)
DEFAULT = JudgeConfig.model_fields["concurrency"].default


def _report(golden: Dataset) -> RunReport:
    target = CallableTarget("tests.benchmarks.support:answer", name="bench")
    return asyncio.run(run_dataset(golden, target, RunOptions(k=5, concurrency=8)))


def _judged(report: RunReport, limit: int, concurrency: int) -> dict[str, Any]:
    """One judged pass against a judge admitting ``limit`` requests a second."""
    with LoopbackJudge(latency=LATENCY, rate_limit=limit, retry_after="1") as judge:
        config = JudgeConfig(url=judge.url, model="bench", concurrency=concurrency, cache=False)

        async def go() -> Any:
            async with JudgePanel(config) as panel:
                return await judge_report(report, panel)

        started = time.perf_counter()
        judged = asyncio.run(go())
        wall = time.perf_counter() - started
        refused = judge.refused
    checks = sum(len(c.outcomes) for c in judged.cases) + len(judged.canaries)
    lost = sum(judged.usage.errors.values())
    return {
        "limit": limit,
        "concurrency": concurrency,
        "wall": wall,
        "checks": checks,
        "per_second": (checks - lost) / wall,
        "refused": refused,
        "lost": lost,
    }


def _chosen(rows: list[dict[str, Any]]) -> int:
    """The smallest concurrency within 90% of the best throughput against the generous judge
    that loses no check against the tight one."""
    generous = {r["concurrency"]: r for r in rows if r["limit"] == GENEROUS}
    tight = {r["concurrency"]: r for r in rows if r["limit"] == TIGHT}
    best = max(r["per_second"] for r in generous.values())
    fit = [
        c
        for c in CONCURRENCIES
        if generous[c]["per_second"] >= 0.9 * best and tight[c]["lost"] == 0
    ]
    return min(fit) if fit else max(c for c in CONCURRENCIES if tight[c]["lost"] == 0)


def _row_text(row: dict[str, Any]) -> str:
    return (
        f"c={row['concurrency']}: {row['per_second']:.1f}/s, {row['refused']} refused, "
        f"{row['lost']} lost"
    )


def run() -> dict[str, Any]:
    """The throughput per concurrency against a generous and a tight rate limit, and the
    default concurrency they choose, its figures by name."""
    golden = golden_set(40 if quick() else 100)
    report = _report(golden)
    rows = [_judged(report, limit, c) for limit in (GENEROUS, TIGHT) for c in CONCURRENCIES]
    chosen = _chosen(rows)
    out: dict[str, Any] = {}
    for limit, name in ((GENEROUS, "generous"), (TIGHT, "tight")):
        mine = [r for r in rows if r["limit"] == limit]
        at_default = next((r for r in mine if r["concurrency"] == DEFAULT), None)
        out[f"judged checks a second at the default concurrency, {name} judge ({limit}/s)"] = (
            figure(
                None if at_default is None else at_default["per_second"],
                "checks/s",
                meaning=(
                    f"200 ms judge admitting {limit} requests a second (429 + Retry-After: 1 "
                    f"past that), {mine[0]['checks']} checks; by concurrency: "
                    + "; ".join(_row_text(r) for r in mine)
                ),
                digits=1,
            )
        )
    out["judge concurrency the measurement chooses"] = figure(
        chosen,
        "calls in flight",
        goal=f"= the default ({DEFAULT})",
        met=chosen == DEFAULT,
        meaning=(
            "the smallest concurrency within 90% of the best throughput against the generous "
            "judge that loses no check against the tight one (retries at their default)"
        ),
        digits=0,
    )
    out["_details"] = {"runs": rows}
    return out

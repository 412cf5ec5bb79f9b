"""The border's cost per case with secrets configured, as real targets have them.

bench_goals measures CPU per case with no secret, so redaction (skipped entirely without
one) costs nothing there. Real targets carry a token: here the product's HTTP target sends
three (a bearer token, an ``X-API-Key`` and an ``api_key`` query parameter, each registered
with the process-wide redactor as the target is built) to the zero-latency endpoint
(``tests.benchmarks.endpoint``, its own process), concurrency 50, in alternated triples:

- **secrets**: ``run_dataset`` then the report encoded for writing (``encode_report``, the
  egress redaction every report gets), with the three secrets registered;
- **no secret**: the same, with the redactor swapped for an empty one;
- **bare loop**: :mod:`tests.benchmarks.bare_loop` (POST and ``json.loads``), sending the
  same two headers and query parameter, so the reference makes the product's requests.

Goal (issue 24, as issue 15's for the run loop in bench_goals): CPU per case of
``run_dataset`` with secrets within 1.5x of the bare loop's (``time.process_time`` of this
process; the report's encoding is timed apart, as bench_goals leaves it out). Also reported:
the encoding's cost per case, and what the secrets add per case to both (secrets minus no
secret), which is the cost of redaction and of the border.

``python -m tests.benchmarks.run --only border``
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
from yarl import URL

from evaluator import process_state, redaction
from evaluator.config import HttpTargetConfig
from evaluator.factory import build_target
from evaluator.models import Dataset
from evaluator.report.write import encode_report
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.targets.base import Target
from tests.benchmarks.bare_loop import bare_loop
from tests.benchmarks.support import endpoint, figure, golden_set, median, quick

CONCURRENCY = 50
CPU_GOAL = 1.5
SECRETS = {
    "Authorization": "Bearer sk-live-4f9a/Zq81+xy=bench",
    "X-API-Key": "key_7hG2-kL0pQ",
    "api_key": "qp-93Jd8s2Lw0",
}


def _target(url: str) -> Target:
    config = HttpTargetConfig.model_validate(
        {
            "url": url,
            "max_connections": 200,
            "request": {
                "headers": {k: v for k, v in SECRETS.items() if k != "api_key"},
                "params": {"api_key": SECRETS["api_key"]},
            },
        }
    )
    return build_target(config)


async def _evaluator(target: Target, dataset: Dataset) -> tuple[float, float, int, int]:
    """(CPU seconds of the run, of encoding its report, failed cases, report bytes)."""
    cpu = time.process_time()
    report = await run_dataset(dataset, target, RunOptions(k=5, concurrency=CONCURRENCY))
    ran = time.process_time()
    size = len(encode_report(report))
    return ran - cpu, time.process_time() - ran, report.summary.error_count, size


async def _bare(session: aiohttp.ClientSession, url: str, dataset: Dataset) -> float:
    """The bare loop's CPU seconds, sending what the target sends: the two secret headers
    (the session's) and the ``api_key`` parameter. Without them the reference made lighter
    requests than the product, and the ratio charged the border with aiohttp's and yarl's
    work on two more headers and a query string (8 us per case)."""
    wired = str(URL(url).update_query(api_key=SECRETS["api_key"]))
    cpu = time.process_time()
    await bare_loop(session, wired, [c.question for c in dataset.questions], CONCURRENCY)
    return time.process_time() - cpu


async def _triples(url: str, dataset: Dataset, triples: int) -> dict[str, Any]:
    target = _target(url)
    with_secrets = redaction.redactor()
    assert with_secrets, "building the target registered no secret"
    empty = redaction.Redactor()
    out: dict[str, Any] = {
        "secrets": [],
        "clean": [],
        "secrets_encode": [],
        "clean_encode": [],
        "bare": [],
        "errors": 0,
        "bytes": 0,
    }
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    try:
        secret_headers = {k: v for k, v in SECRETS.items() if k != "api_key"}
        async with aiohttp.ClientSession(connector=connector, headers=secret_headers) as session:
            await _evaluator(target, dataset)  # warm-up of each
            await _bare(session, url, dataset)
            for _ in range(triples):
                for name, active in (("secrets", with_secrets), ("clean", empty)):
                    process_state.redactor.swap(active)  # the process-wide redactor, swapped
                    cpu, encode, errors, size = await _evaluator(target, dataset)
                    out[name].append(cpu)
                    out[f"{name}_encode"].append(encode)
                    out["errors"] += errors
                    out["bytes"] = size
                process_state.redactor.swap(with_secrets)
                out["bare"].append(await _bare(session, url, dataset))
    finally:
        process_state.redactor.swap(with_secrets)
        await target.aclose()
    return out


def run() -> dict[str, Any]:
    """The border's cost per case with and without secrets, its figures by name."""
    cases, triples = (1_000, 5) if quick() else (2_000, 9)
    dataset = golden_set(cases)
    with endpoint(0.0) as url:
        got = asyncio.run(_triples(url, dataset, triples))
    keys = ("secrets", "clean", "secrets_encode", "clean_encode", "bare")
    per_case = {k: median(got[k]) / cases * 1e6 for k in keys}
    ratios = [s / b for s, b in zip(got["secrets"], got["bare"], strict=True)]
    ratio = median(ratios)
    whole = [
        (s + se - c - ce) / cases * 1e6
        for s, se, c, ce in zip(
            got["secrets"], got["secrets_encode"], got["clean"], got["clean_encode"], strict=True
        )
    ]
    out: dict[str, Any] = {
        "zero-latency endpoint, c=50, 3 secrets configured: CPU per case / bare loop's": figure(
            ratio,
            "ratio",
            goal=f"<= {CPU_GOAL:g}",
            met=ratio <= CPU_GOAL,
            meaning=(
                f"as bench_goals' CPU goal (run_dataset: HTTP target, scoring, summary), with "
                f"three secrets registered: median over {triples} alternated triples of this "
                f"process's CPU time per case / the bare loop's (triples {min(ratios):.2f}-"
                f"{max(ratios):.2f}); medians {per_case['secrets']:.0f} µs with secrets, "
                f"{per_case['clean']:.0f} µs without, bare loop {per_case['bare']:.0f} µs; "
                f"{cases:,} cases"
            ),
            runs=ratios,
        ),
        "encoding the report for writing, 3 secrets configured, CPU per case": figure(
            per_case["secrets_encode"],
            "µs",
            meaning=(
                f"encode_report (the egress redaction every report gets) of a "
                f"{got['bytes'] / cases:.0f}-byte entry per case; "
                f"{per_case['clean_encode']:.0f} µs with no secret"
            ),
            digits=1,
        ),
        "what three secrets add per case (redaction and the border), CPU": figure(
            median(whole),
            "µs",
            meaning=(
                "median over the triples of (secrets - no secret) CPU per case of the run "
                "and its report's encoding together"
            ),
            runs=whole,
            digits=1,
        ),
        "failed cases in these runs": figure(
            got["errors"],
            "cases",
            goal="0",
            met=got["errors"] == 0,
            digits=0,
            meaning="a failed case would make the figures above meaningless",
        ),
    }
    out["_details"] = {"quick": quick(), "cases": cases, "cpu_seconds": got}
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))

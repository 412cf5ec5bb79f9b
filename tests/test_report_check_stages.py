"""The summary check's stage P95s are :func:`evaluator.summary.stage_p95`'s, whatever the
cases' stage layouts (the check reads them grouped by the set of stage names)."""

from __future__ import annotations

import random

import pytest

from evaluator.report.check import _stage_p95
from evaluator.summary import stage_p95


def _stages(layouts: list[tuple[str, ...]], n: int, seed: int) -> list[dict[str, float]]:
    rng = random.Random(seed)
    return [{name: rng.random() for name in rng.choice(layouts)} for _ in range(n)]


LAYOUTS: dict[str, list[tuple[str, ...]]] = {
    "one layout": [("embed", "search", "model")],
    "failed cases time nothing": [("embed", "search", "model"), ("embed", "search", "model"), ()],
    "another order": [("embed", "model"), ("model", "embed")],
    "a stage sometimes": [("embed",), ("embed", "rerank"), ("rerank",), ()],
    "many layouts": [tuple(f"s{j}" for j in range(i)) for i in range(12)],
    "none timed": [()],
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("n", [1, 2, 500])
def test_stage_p95_of_the_check_is_the_summary_one(name: str, n: int) -> None:
    for seed in range(3):
        stages = _stages(LAYOUTS[name], n, seed)
        assert _stage_p95(stages) == stage_p95(stages)


def test_no_cases() -> None:
    assert _stage_p95([]) == stage_p95([]) == {}

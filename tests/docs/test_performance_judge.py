"""docs/performance.md's judge part is rendered from a ``--only judge`` benchmark run alone:
its section, its rows and its method line replaced, every other line of the page kept."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.benchmarks.render_docs import (
    JUDGE_CALLS,
    JUDGE_CPU,
    JUDGE_FILL,
    JUDGE_HEADING,
    JUDGE_SECOND,
    JUDGE_WALL,
    render,
    splice_judge,
)
from tests.benchmarks.support import figure


def _bench(figures: dict[str, Any], seconds: float = 9.0) -> dict[str, Any]:
    return {
        "module": "tests/benchmarks/bench_judge.py",
        "seconds": seconds,
        "error": None,
        "figures": figures,
        "details": {"first": {"calls": 572, "commits": 1}},
    }


def _results(cpu: float, benchmarks: dict[str, Any] | None = None) -> dict[str, Any]:
    judge = _bench(
        {
            JUDGE_CPU: figure(cpu, "µs", meaning="cpu"),
            JUDGE_WALL: figure(900.0, "µs", meaning="wall"),
            "judge path's own CPU per judged case (zero-latency judge, no cache)": figure(
                700.0, "µs", meaning="alone"
            ),
            JUDGE_CALLS: figure(2, "calls", meaning="calls"),
            JUDGE_SECOND: figure(0.12, "ratio", meaning="second"),
            JUDGE_FILL: figure(1.05, "ratio", meaning="fill"),
        }
    )
    return {
        "generated_at": "2026-12-03T10:00:00Z",
        "duration_seconds": 20.0,
        "quick": False,
        "only": ["judge"],
        "machine": {
            "cpu": "test cpu",
            "cores": 2,
            "memory_gib": 4,
            "python": "CPython 3.11",
            "commit": "abc1234",
            "uncommitted_changes": False,
            "versions": {"evaluator": "0.1.0"},
            "load_average_at_start": [1.0, 1.0, 1.0],
            "load_average_at_end": [1.0, 1.0, 1.0],
        },
        "benchmarks": {"judge": judge, **(benchmarks or {})},
    }


def _page() -> str:
    other = _bench({"a figure of another bench": figure(5.0, "ms", meaning="kept")})
    other["module"] = "tests/benchmarks/bench_border.py"
    whole = _results(1500.0, {"border": other})
    return render(whole)


def test_the_judge_section_states_its_figures_in_words() -> None:
    """The judge's section of docs/performance.md states its figures in words."""
    page = _page()
    section = page[page.index(JUDGE_HEADING) : page.index("## Every figure")]
    assert "adds 1,500 µs of CPU per case, and 900 µs of wall" in section
    assert "makes 2 calls to the judge (the canaries, never cached) against 572" in section
    assert "570 verdicts written in 1 transaction(s)" in section
    assert "rest of the page" not in section  # one run: nothing to name apart


def test_splicing_replaces_only_the_judge_part() -> None:
    """Splicing new judge results replaces only the judge's part of the page."""
    page = _page()
    spliced = splice_judge(page, _results(1234.0))
    before, after = page.split("\n"), spliced.split("\n")
    assert "adds 1,234 µs of CPU per case" in spliced and "1,500 µs" not in spliced
    assert "run of 2026-12-03T10:00:00Z (evaluator at abc1234" in spliced
    # the other bench's row and the page's head are untouched, line for line
    kept = [line for line in before if not line.startswith("| judge: ")]
    assert [line for line in kept if "another bench" in line] == [
        line for line in after if "another bench" in line
    ]
    assert before[:8] == after[:8]
    assert sum(line.startswith("| judge: ") for line in after) == 6
    assert splice_judge(spliced, _results(1234.0)) == spliced  # idempotent


def test_a_page_without_the_judge_section_gains_one_before_the_figures() -> None:
    """A page without the judge's section gains one before the table of every figure."""
    page = _page()
    start = page.index(JUDGE_HEADING)
    stripped = page[:start] + page[page.index("## Every figure") :]
    spliced = splice_judge(stripped, _results(800.0))
    assert spliced.index(JUDGE_HEADING) < spliced.index("## Every figure")
    assert "adds 800 µs of CPU per case" in spliced


def test_a_results_file_without_the_judge_is_refused() -> None:
    """A results file without the judge benchmark is refused."""
    results = copy.deepcopy(_results(1.0))
    del results["benchmarks"]["judge"]
    with pytest.raises(ValueError, match="no judge benchmark"):
        splice_judge(_page(), results)

"""Paired bootstrap intervals: the populations match the summary, the vectorised resampling
matches a plain loop, the same inputs give the same output, and --significance tells noise
from a real regression."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.gate import DEFAULT_RULES, Rule, evaluate_gate, stats
from evaluator.gate.stats import case_values, paired_differences, paired_intervals
from evaluator.models import CaseRecord
from evaluator.summary import QUALITY_METRICS, summarise
from tests.gate.factories import record, report


def _noisy_pair() -> tuple[list[CaseRecord], list[CaseRecord]]:
    """10 cases: the MRR drops 0.067 on average, but up and down case by case."""
    before = [1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5]
    after = [0.5, 0.5, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.33]
    return (
        [record(f"n{i}", rr=v) for i, v in enumerate(before)],
        [record(f"n{i}", rr=v) for i, v in enumerate(after)],
    )


def _clear_pair(n: int = 500) -> tuple[list[CaseRecord], list[CaseRecord]]:
    """``n`` cases: 40% of them lose their first relevant hit to rank 2 (MRR -0.2)."""
    return (
        [record(f"c{i}") for i in range(n)],
        [record(f"c{i}", rr=0.5 if i % 5 < 2 else 1.0) for i in range(n)],
    )


_records = st.builds(
    lambda i, unans, err, recall, rr, correct, precision: record(
        f"h{i}",
        unanswerable=unans,
        error="timeout" if err else None,
        recall=recall,
        rr=rr,
        correct=correct,
        precision=precision,
    ),
    st.integers(0, 10_000),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.sampled_from([0.0, 1 / 3, 0.5, 1.0]),
    st.sampled_from([True, False, None]),
    st.sampled_from([0.0, 0.5, 1.0]),
)


class TestPopulations:
    """Per-case values cover exactly the cases the summary averages over."""

    @settings(max_examples=60, deadline=None)
    @given(st.lists(_records, max_size=25, unique_by=lambda r: r.id))
    def test_mean_equals_summary(self, records: list[CaseRecord]) -> None:
        """For every quality metric, the mean of the per-case values is the summary value."""
        summary = summarise(records)
        for metric in QUALITY_METRICS:
            values = list(case_values(records, metric).values())
            expected = summary.get(metric)
            if expected is None:
                assert [] == values, metric
            else:
                assert math.isclose(expected, sum(values) / len(values)), metric


class TestBootstrap:
    """The vectorised bootstrap is a plain bootstrap, made fast."""

    def test_matches_plain_loop(self) -> None:
        """Same draws, per-resample means computed one by one: the same percentiles."""
        b, c = _noisy_pair()
        b.append(record("u", unanswerable=True, correct=True))
        c.append(record("u", unanswerable=True, correct=False))
        got = paired_intervals(b, c, ("mrr", "answer_accuracy"), resamples=300, seed=7)
        ids = [r.id for r in b]
        diffs = {
            m: {i: case_values(c, m)[i] - case_values(b, m)[i] for i in case_values(b, m)}
            for m in ("mrr", "answer_accuracy")
        }
        rng = np.random.default_rng(7)
        means: dict[str, list[float]] = {"mrr": [], "answer_accuracy": []}
        # every draw at once: the blocked bootstrap must draw the same numbers
        for row in rng.integers(0, len(ids), size=(300, len(ids))):
            for m, d in diffs.items():
                picked = [d[ids[i]] for i in row if ids[i] in d]
                if picked:
                    means[m].append(sum(picked) / len(picked))
        for m in means:
            low, high = np.percentile(means[m], [2.5, 97.5])
            assert math.isclose(low, got[m].low, abs_tol=1e-12), m
            assert math.isclose(high, got[m].high, abs_tol=1e-12), m
            assert math.isclose(sum(diffs[m].values()) / len(diffs[m]), got[m].mean_difference)
        assert 11 == got["answer_accuracy"].pairs  # the unanswerable case has an answer check
        assert 10 == got["mrr"].pairs  # retrieval metrics: answerable cases only

    def test_blocks_do_not_change_the_answer(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Memory is bounded by drawing in blocks; any block size gives the same intervals."""
        b, c = _noisy_pair()
        whole = paired_intervals(b, c, resamples=300)
        monkeypatch.setattr(stats, "_BLOCK_DRAWS", 7)  # one resample per block
        assert whole == paired_intervals(b, c, resamples=300)

    def test_differences_without_resampling(self) -> None:
        """The cheap path gives the bootstrap's mean differences and pair counts, exactly."""
        b, c = _noisy_pair()
        intervals = paired_intervals(b, c)
        differences = paired_differences(b, c)
        assert intervals.keys() == differences.keys()
        for m, iv in intervals.items():
            assert (iv.pairs, iv.mean_difference) == (
                differences[m].pairs,
                differences[m].mean_difference,
            )

    def test_deterministic(self) -> None:
        """The same two reports always give the same intervals (fixed seed, fixed order)."""
        b, c = _noisy_pair()
        assert paired_intervals(b, c) == paired_intervals(b, c)

    def test_matched_by_id_not_position(self) -> None:
        """Candidate cases in another order are still paired with their baseline case."""
        b, c = _clear_pair(50)
        assert paired_intervals(b, c) == paired_intervals(b, list(reversed(c)))

    def test_failed_cases_left_out(self) -> None:
        """A case that failed on either side has no score to pair."""
        b, c = _clear_pair(20)
        c[0] = record("c0", error="timeout")
        assert 19 == paired_intervals(b, c)["mrr"].pairs

    def test_too_few_pairs(self) -> None:
        """Fewer than two matched cases give no interval."""
        assert {} == paired_intervals([record("a")], [record("a", rr=0.5)])

    def test_clear_regression(self) -> None:
        """A large, consistent drop: the interval excludes zero and brackets the truth."""
        b, c = _clear_pair()
        iv = paired_intervals(b, c)["mrr"]
        assert iv.excludes_zero
        assert iv.low < -0.2 < iv.high
        assert math.isclose(-0.2, iv.mean_difference)

    def test_noise(self) -> None:
        """A small set moving both ways: the interval includes zero."""
        b, c = _noisy_pair()
        iv = paired_intervals(b, c)["mrr"]
        assert not iv.excludes_zero
        assert iv.mean_difference < -0.01


class TestSignificanceMode:
    """--significance: a noisy drop passes, a clear one still fails."""

    RULES = (Rule("mrr", "max_drop", 0.01),)

    def test_small_noisy_set(self) -> None:
        """The point values fail the MRR rule; the interval reaches the allowance, so it passes."""
        b, c = _noisy_pair()
        point = evaluate_gate(report(b), report(c), self.RULES)
        judged = evaluate_gate(report(b), report(c), self.RULES, significance=True)
        assert (False, True) == (point.passed, judged.passed)
        assert "interval" == judged.rules[0].judged_by

    def test_large_clear_regression(self) -> None:
        """A 0.2 drop over 500 cases fails in both modes."""
        b, c = _clear_pair()
        judged = evaluate_gate(report(b), report(c), self.RULES, significance=True)
        assert not judged.passed
        assert "whole interval is beyond" in judged.rules[0].message

    def test_default_rules(self) -> None:
        """With the default rules too, only the MRR rule is affected."""
        b, c = _clear_pair()
        judged = evaluate_gate(report(b), report(c), DEFAULT_RULES, significance=True)
        assert ["mrr.max_drop"] == [r.name for r in judged.failures]

"""The gate's decision table (where to look) applied to summary deltas."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from evaluator.gate.diagnosis import diagnose
from evaluator.gate.stats import Interval
from evaluator.report import report_from_dict
from evaluator.summary import Summary
from tests.gate.factories import EXERCISE_BASELINE, EXERCISE_CANDIDATE, summary_report

BASE = {
    "recall_at_k": 0.90,
    "mrr": 0.76,
    "ndcg_at_k": 0.72,
    "citation_precision": 0.98,
    "answer_accuracy": 0.84,
    "p95_seconds": 2.0,
}


def _summary(values: Mapping[str, float | None], error_rate: float = 0.0) -> Summary:
    return report_from_dict(summary_report(values, error_rate=error_rate)).summary


def _areas(changes: Mapping[str, float], error_rate: float = 0.0) -> list[str]:
    findings = diagnose(_summary(BASE), _summary({**BASE, **changes}, error_rate))
    return [f.area for f in findings]


class TestDecisionTable:
    """Each row of the table, and where it says to look."""

    @pytest.mark.parametrize(
        ("changes", "areas"),
        [
            ({"recall_at_k": 0.85, "mrr": 0.70}, ["retrieval"]),
            ({"mrr": 0.70}, ["rerank"]),
            ({"recall_at_k": 0.95, "mrr": 0.70}, ["rerank"]),
            ({"answer_accuracy": 0.80}, ["generation"]),
            ({"citation_precision": 0.90}, ["citation"]),
            ({"answer_accuracy": 0.90, "p95_seconds": 4.0}, ["trade-off"]),
            ({"p95_seconds": 2.6}, ["latency"]),
            ({}, []),
            ({"mrr": 0.757, "answer_accuracy": 0.837}, []),  # within the flat band
        ],
    )
    def test_row(self, changes: Mapping[str, float], areas: list[str]) -> None:
        """The deltas pick the rows of the table."""
        assert areas == _areas(changes)

    def test_accuracy_down_with_retrieval_down_blames_retrieval(self) -> None:
        """Retrieval not flat: the generation row does not apply, the retrieval one does."""
        assert ["retrieval"] == _areas({"recall_at_k": 0.8, "mrr": 0.7, "answer_accuracy": 0.7})

    def test_errors(self) -> None:
        """A grown error rate points at the target, not at retrieval."""
        assert ["errors"] == _areas({}, error_rate=0.05)

    def test_look_at_texts(self) -> None:
        """The texts are docs/gate.md's decision table."""
        base = _summary(BASE)
        cases = {
            "retrieval": {"recall_at_k": 0.85, "mrr": 0.70},
            "rerank": {"mrr": 0.70},
            "generation": {"answer_accuracy": 0.80},
            "citation": {"citation_precision": 0.90},
            "trade-off": {"answer_accuracy": 0.90, "p95_seconds": 4.0},
        }
        looks = {
            area: diagnose(base, _summary({**BASE, **change}))[0].look_at
            for area, change in cases.items()
        }
        assert {
            "retrieval": "parsing, chunking, retrieval",
            "rerank": "fusion or rerank",
            "generation": "prompt, model, context assembly",
            "citation": "citation protocol or checking",
            "trade-off": "a product trade-off, not an automatic yes",
        } == looks


class TestExercise:
    """The gate exercise: rank order and citations, and the slower P95."""

    def test_exercise(self) -> None:
        """Recall up with MRR down, accuracy up with citation precision down, P95 +40%."""
        findings = diagnose(_summary(EXERCISE_BASELINE), _summary(EXERCISE_CANDIDATE))
        assert ["rerank", "citation", "latency"] == [f.area for f in findings]
        assert "recall +0.020, MRR -0.020" == findings[0].signal


class TestEvidence:
    """Intervals mark a move that may be noise; stage timings name the slow stage."""

    def test_noise_marked(self) -> None:
        """An MRR drop whose interval includes zero is still reported, marked as maybe noise."""
        iv = {"mrr": Interval("mrr", 10, -0.06, -0.2, 0.05)}
        (finding,) = diagnose(_summary(BASE), _summary({**BASE, "mrr": 0.70}), iv)
        assert "MRR -0.060 (CI [-0.200, +0.050] includes 0: may be noise)" in finding.signal

    def _latency(self, before: dict[str, float], after: dict[str, float]) -> str:
        b = summary_report(BASE)
        c = summary_report({**BASE, "p95_seconds": 3.0})
        b["summary"]["stage_p95_seconds"] = before
        c["summary"]["stage_p95_seconds"] = after
        (finding,) = diagnose(report_from_dict(b).summary, report_from_dict(c).summary)
        assert ("latency", "P95 2s → 3s (+50%)") == (finding.area, finding.signal)
        return finding.look_at

    def test_slowest_stage(self) -> None:
        """The stage whose P95 grew most, when it explains the growth, is where to look."""
        look = self._latency({"rerank": 0.05, "model": 1.5}, {"rerank": 0.9, "model": 1.6})
        assert "the rerank stage (its P95 50ms → 900ms)" == look

    def test_untimed_growth(self) -> None:
        """No stage grew enough: the time is outside the stages the endpoint reports."""
        look = self._latency({"rerank": 0.05, "model": 1.5}, {"rerank": 0.06, "model": 1.55})
        assert look.startswith("time outside the stages the endpoint reports")

    def test_no_stage_timings(self) -> None:
        """An endpoint without timings: say so."""
        assert "the endpoint reports none" in self._latency({}, {})


class TestPairedDeltas:
    """With intervals, quality deltas are paired: failed cases do not shift the population."""

    def test_outage_is_not_a_retrieval_regression(self) -> None:
        """Errors moved the summary MRR; the matched cases did not move: only errors found."""
        b = _summary(BASE)
        c = _summary({**BASE, "recall_at_k": 0.88, "mrr": 0.74}, error_rate=0.3)
        same = {m: Interval(m, 90, 0.0, 0.0, 0.0) for m in BASE if m != "p95_seconds"}
        assert ["errors", "retrieval"] == [f.area for f in diagnose(b, c)]
        assert ["errors"] == [f.area for f in diagnose(b, c, same)]


class TestLatencyAgreesWithTheRule:
    """The diagnosis reads P95 growth with the P95 rule's own limit and noise floor."""

    def _pair(self, b95: float, c95: float) -> tuple[Summary, Summary]:
        return _summary({**BASE, "p95_seconds": b95}), _summary({**BASE, "p95_seconds": c95})

    def test_growth_under_the_floor_is_no_finding(self) -> None:
        """4 ms -> 7 ms (+75%) on loopback is noise: no latency row."""
        assert () == diagnose(*self._pair(0.004, 0.007))

    def test_a_configured_floor_and_limit_are_used(self) -> None:
        """A stricter rule (no floor, 10%) makes the same change a finding, as it fails it."""
        b, c = self._pair(0.004, 0.007)
        (finding,) = diagnose(b, c, latency_growth=0.1, latency_floor=0.0)
        assert "latency" == finding.area

    def test_gate_passes_the_rules_limits_to_the_diagnosis(self) -> None:
        """evaluate_gate: with a 0 s floor, +75% on 4 ms fails the rule and is diagnosed."""
        from evaluator.gate.rules import Rule
        from evaluator.gate.verdict import evaluate_gate

        b = report_from_dict(summary_report({**BASE, "p95_seconds": 0.004}))
        c = report_from_dict(summary_report({**BASE, "p95_seconds": 0.007}))
        for floor, expected in ((0.05, True), (0.0, False)):
            rules = (Rule("p95_seconds", "max_relative_growth", 0.2, noise_floor=floor),)
            result = evaluate_gate(b, c, rules)
            assert expected is result.passed
            assert (not expected) is any(f.area == "latency" for f in result.diagnosis)

"""Comparability, shared cases on a changed golden set, missing cases and the per-case diff."""

from __future__ import annotations

import pytest

from evaluator.errors import GateError
from evaluator.gate import DEFAULT_RULES, evaluate_gate
from evaluator.gate.compare import align, diff_cases
from evaluator.models import CaseRecord
from evaluator.summary import summarise
from tests.gate.factories import record, report


def _cases(n: int, prefix: str = "c") -> list[CaseRecord]:
    return [record(f"{prefix}{i}") for i in range(n)]


class TestComparability:
    """Different golden sets or K cannot be compared unless the golden-set change is allowed."""

    def test_different_dataset(self) -> None:
        """A different content hash is refused, naming both and the number of shared cases."""
        b = report(_cases(5), dataset_hash="aaaa")
        c = report(_cases(4), dataset_hash="bbbb")
        with pytest.raises(GateError) as info:
            align(b, c)
        message = str(info.value)
        assert "different golden sets" in message
        assert "aaaa" in message and "bbbb" in message
        assert "--allow-dataset-change to compare the 4 shared case(s)" in message

    def test_different_k(self) -> None:
        """A different K is refused, even with the golden-set change allowed."""
        b, c = report(_cases(3), k=5), report(_cases(3), k=10)
        for allow in (False, True):
            with pytest.raises(GateError, match=r"different K \(baseline K=5, candidate K=10\)"):
                align(b, c, allow_dataset_change=allow)

    def test_allowed_change_compares_shared_cases(self) -> None:
        """Shared cases are compared; removed and added ids are listed; nothing is 'missing'."""
        b_cases = [record("a"), record("b", recall=0.0, rr=0.0), record("c")]
        c_cases = [record("b", recall=0.0, rr=0.0), record("c"), record("d", correct=False)]
        b = report(b_cases, dataset_hash="old")
        c = report(c_cases, dataset_hash="new")
        a = align(b, c, allow_dataset_change=True)
        assert (("b", "c"), ("a",), ("d",), ()) == (
            a.shared_ids,
            a.removed_ids,
            a.added_ids,
            a.missing_ids,
        )
        assert a.dataset_changed
        assert summarise(b_cases[1:]) == a.baseline_summary
        assert summarise(c_cases[:2]) == a.candidate_summary

    def test_allowed_change_recomputes_summaries(self) -> None:
        """A case dropped from the golden set no longer drags the baseline down."""
        b = report([record("a", recall=0.0, rr=0.0), record("b")], dataset_hash="old")
        c = report([record("b"), record("z")], dataset_hash="new")
        result = evaluate_gate(b, c, DEFAULT_RULES, allow_dataset_change=True)
        assert result.passed
        assert 0.5 == b.summary.get("recall_at_k")
        assert 1.0 == result.baseline_summary.get("recall_at_k")

    def test_no_shared_case(self) -> None:
        """A changed golden set sharing no case cannot be compared at all."""
        b = report(_cases(2, "x"), dataset_hash="old")
        c = report(_cases(2, "y"), dataset_hash="new")
        with pytest.raises(GateError, match="share no case"):
            align(b, c, allow_dataset_change=True)

    def test_same_dataset_flag_is_harmless(self) -> None:
        """The flag changes nothing when the golden set is the same."""
        b, c = report(_cases(3)), report(_cases(3))
        assert not align(b, c, allow_dataset_change=True).dataset_changed


class TestMissingCases:
    """A baseline case absent from the candidate fails the gate, whatever the rules say."""

    def test_missing_fails(self) -> None:
        """The candidate ran 4 of the 5 cases, all perfect: still a failure, naming the case."""
        b = report(_cases(5))
        c = report([r for r in _cases(5) if r.id != "c3"])
        result = evaluate_gate(b, c, DEFAULT_RULES)
        assert all(r.passed for r in result.rules)
        assert ("c3",) == result.missing_ids
        assert not result.passed

    def test_invented_cases_are_refused(self) -> None:
        """A candidate claiming the baseline's golden set (its hash) with cases that golden
        set does not have is refused, naming them: 30 invented perfect cases must not lift
        an answer accuracy that fell from 0.8 to 0.6 on the real ones above the baseline."""
        b = report([record(f"c{i}", correct=i >= 2) for i in range(10)])
        real = [record(f"c{i}", correct=i >= 4) for i in range(10)]
        c = report([*real, *(record(f"invented{i}") for i in range(30))])
        assert c.dataset_hash == b.dataset_hash
        assert c.summary.get("answer_accuracy") == 0.9  # the lie the summary would tell
        with pytest.raises(GateError) as info:
            evaluate_gate(b, c, DEFAULT_RULES)
        message = str(info.value)
        assert "30 case(s)" in message and "'invented0'" in message
        assert "golden-hash-" in message

    def test_rules_judge_the_matched_cases(self) -> None:
        """A candidate lacking a case fails, and the rules judge both summaries over the
        cases the two reports share, not the baseline's whole summary."""
        b = report([record("a"), record("b"), record("lost", correct=False)])
        c = report([record("a"), record("b")])
        result = evaluate_gate(b, c, DEFAULT_RULES)
        assert ("lost",) == result.missing_ids and not result.passed
        assert 2 == result.baseline_summary.case_count
        assert summarise(b.cases[:2]) == result.baseline_summary


class TestCaseDiff:
    """Regressed cases worst first, improved cases best first, with question and ids."""

    def test_order_and_phrases(self) -> None:
        """A new error outranks a flipped answer, which outranks lost rank."""
        b = report(
            [
                record("same"),
                record("rank", question="where is the refund policy?"),
                record("answer"),
                record("error"),
                record("fixed", error="timeout"),
                record("better", rr=0.5),
            ]
        )
        c = report(
            [
                record("same"),
                record("rank", rr=0.5, ranked=("faq", "d1")),
                record("answer", correct=False),
                record("error", error="http_status"),
                record("fixed"),
                record("better"),
            ]
        )
        diff = diff_cases(align(b, c))
        assert ["error", "answer", "rank"] == [x.id for x in diff.regressed]
        assert ["fixed", "better"] == [x.id for x in diff.improved]
        assert (6, 1) == (diff.compared, diff.unchanged)
        error, answer, rank = diff.regressed
        assert ("new error http_status: http_status talking to the target",) == error.changes
        assert ("answer correct → incorrect",) == answer.changes
        assert ("RR 1.00 → 0.50",) == rank.changes
        assert "where is the refund policy?" == rank.question
        assert (("d1",), ("d1",), ("faq", "d1")) == (
            rank.relevant_ids,
            rank.baseline_ranked_ids,
            rank.candidate_ranked_ids,
        )
        assert ("error fixed (was timeout)",) == diff.improved[0].changes

    def test_mixed_case_is_regressed(self) -> None:
        """A case that lost its answer but gained recall is listed as regressed, gain shown."""
        b = report([record("m", recall=0.5, rr=0.5)])
        c = report([record("m", recall=1.0, rr=0.5, correct=False)])
        (change,) = diff_cases(align(b, c)).regressed
        assert ("answer correct → incorrect", "recall 0.50 → 1.00") == change.changes

"""Label audit: worked examples of suspect, clean and unchecked labels."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import pytest

from evaluator.models import CaseRecord, CaseScores
from evaluator.scoring.labels import LabelAudit, audit_record, audit_run, describe_fact
from tests.support.records import record

POLICY = "退款审核通过后，款项将原路退回。退回到银行卡通常需要3-5个工作日到账。"
DEADLINE = "北风商城支持七天无理由退款。自签收之日起7天内，您可以提交退款申请。"


def _audit(
    facts: Sequence[Sequence[str]],
    texts: Mapping[str, str],
    relevance: Mapping[str, int] | None = None,
    *,
    unanswerable: bool = False,
    cut: Collection[str] = (),
) -> LabelAudit:
    return LabelAudit.of(
        unanswerable=unanswerable,
        expected_facts=facts,
        relevance={"policy": 1} if relevance is None else relevance,
        texts=texts,
        cut=cut,
    )


class TestWorkedExamples:
    def test_the_refund_arrival_question_labelled_with_the_deadline_is_suspect(self) -> None:
        """'七天' occurs in none of the relevant evidence: the label is suspect."""
        audit = _audit([["七天"]], {"policy": POLICY, "deadline": DEADLINE})

        assert (True, True) == (audit.checked, audit.suspect)
        assert "suspect label: '七天' is in none of the relevant evidence" == audit.message
        assert (("七天",),) == audit.missing

    def test_a_fact_found_through_normalisation_clears_the_label(self) -> None:
        """'3 - 5 个工作日' matches '3-5个工作日' the way scoring matches answers."""
        audit = _audit([["3 - 5 个工作日"]], {"policy": POLICY})

        assert (True, False, None) == (audit.checked, audit.suspect, audit.message)

    def test_any_alternative_counts(self) -> None:
        """The second alternative '7天' is in the text: not suspect."""
        assert not _audit([["七日", "7天"]], {"policy": DEADLINE}).suspect

    def test_one_fact_found_is_enough(self) -> None:
        """Only a label none of whose facts occurs is flagged; the missing one is listed."""
        audit = _audit([["3-5个工作日"], ["48小时"]], {"policy": POLICY})

        assert (True, False) == (audit.checked, audit.suspect)
        assert (("48小时",),) == audit.missing

    def test_several_missing_facts_are_named_with_their_alternatives(self) -> None:
        """A suspect label names every missing fact with its alternatives."""
        audit = _audit([["七日", "一周"], ["48小时"]], {"policy": POLICY})

        assert (
            "suspect label: '七日' (or '一周'), '48小时' are in none of the relevant evidence"
            == audit.message
        )

    def test_every_relevant_text_is_searched(self) -> None:
        """The fact in the second relevant text clears the label."""
        audit = _audit(
            [["七天"]], {"policy": POLICY, "deadline": DEADLINE}, {"policy": 2, "deadline": 1}
        )

        assert (True, False) == (audit.checked, audit.suspect)

    def test_irrelevant_texts_do_not_clear_the_label(self) -> None:
        """Grade 0 is not relevant: '七天' in it does not count."""
        audit = _audit(
            [["七天"]], {"policy": POLICY, "deadline": DEADLINE}, {"policy": 1, "deadline": 0}
        )

        assert audit.suspect


class TestNothingToCheck:
    @pytest.mark.parametrize(
        ("facts", "texts", "unanswerable"),
        [
            ([["七天"]], {}, False),  # no text came back
            ([["七天"]], {"policy": ""}, False),  # an empty text is no text
            ([], {"policy": POLICY}, False),  # retrieval-only case
            ([["七天"]], {"policy": POLICY}, True),  # unanswerable: the answer is a refusal
        ],
    )
    def test_unchecked(
        self, facts: list[list[str]], texts: dict[str, str], unanswerable: bool
    ) -> None:
        """A case without facts, without evidence text, or unanswerable is not checked."""
        audit = _audit(facts, texts, unanswerable=unanswerable)

        assert (False, False, None) == (audit.checked, audit.suspect, audit.message)

    def test_part_of_the_relevant_evidence_missing_proves_nothing(self) -> None:
        """The fact may sit in the relevant text that did not come back."""
        audit = _audit([["七天"]], {"policy": POLICY}, {"policy": 2, "deadline": 1})

        assert (False, False) == (audit.checked, audit.suspect)

    def test_a_cut_text_proves_nothing(self) -> None:
        """The fact may have been in the part of the text that was cut away."""
        audit = _audit([["七天"]], {"policy": POLICY}, cut={"policy"})

        assert (False, False) == (audit.checked, audit.suspect)

    def test_a_cut_text_that_holds_the_fact_still_clears_it(self) -> None:
        """A cut evidence text holding the fact still clears the label."""
        assert _audit([["3-5个工作日"]], {"policy": POLICY}, cut={"policy"}).checked


def test_describe_fact() -> None:
    """A fact is described by its first wording and its alternatives."""
    assert "'七天'" == describe_fact(["七天"])
    assert "'七天' (or '7天', '7 days')" == describe_fact(["七天", "7天", "7 days"])


def _record(case_id: str, facts: tuple[tuple[str, ...], ...], texts: dict[str, str]) -> CaseRecord:
    return record(
        case_id,
        outcome=CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0),
        question="退款多久到账？",
        relevance={"policy": 1},
        facts=facts,
        ranked=tuple(texts),
        answer="3-5个工作日",
        texts=texts,
    )


def test_a_run_counts_checked_and_suspect_cases_in_report_order() -> None:
    """A run's audit counts its checked and suspect cases, in report order."""
    records = [
        _record("wrong", (("七天",),), {"policy": POLICY}),
        _record("right", (("3-5个工作日",),), {"policy": POLICY}),
        _record("no-text", (("七天",),), {}),
        _record("wrong-too", (("24小时",),), {"policy": POLICY}),
    ]

    totals = audit_run(records)

    assert (3, 2) == (totals.checked, totals.suspect_count)
    assert ["wrong", "wrong-too"] == [case_id for case_id, _ in totals.suspect]
    assert audit_record(records[0]) == totals.suspect[0][1]
    assert {
        "checked": 3,
        "suspect": 2,
        "suspect_cases": [
            {"id": "wrong", "message": "suspect label: '七天' is in none of the relevant evidence"},
            {
                "id": "wrong-too",
                "message": "suspect label: '24小时' is in none of the relevant evidence",
            },
        ],
    } == totals.to_dict()

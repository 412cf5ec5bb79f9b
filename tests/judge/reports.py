"""Small reports for the judge's tests: scored cases with answers and evidence texts."""

from __future__ import annotations

from evaluator.models import Case, CaseRecord, Retrieved, TargetResponse
from evaluator.report import RunReport
from evaluator.scoring import score_case
from tests.support.records import report as support_report


def record(
    case_id: str,
    answer: str | None,
    facts: tuple[tuple[str, ...], ...] = (),
    *,
    unanswerable: bool = False,
    evidence: dict[str, str] | None = None,
) -> CaseRecord:
    """One scored case record as a run writes it: the case, the deterministic scoring of ``answer``,
    and the evidence texts the report keeps."""
    case = Case(
        id=case_id,
        question=f"question of {case_id}?",
        relevance={} if unanswerable else {"d1": 1},
        expected_facts=facts,
        unanswerable=unanswerable,
    )
    texts = evidence if evidence is not None else {"d1": "Refunds arrive within 5 business days."}
    response = TargetResponse(
        retrieved=tuple(Retrieved(doc_id, text=text) for doc_id, text in texts.items()),
        answer=answer,
    )
    return CaseRecord(
        case=case,
        outcome=score_case(case, response, 5),  # the deterministic scoring, as a run does
        ranked_ids=tuple(texts),
        answer=answer,
        citations=(),
        latency_seconds=0.01,
        stage_seconds={},
        texts=texts,
    )


def report(*records: CaseRecord) -> RunReport:
    """A run report holding ``records``."""
    return support_report(records)


def golden() -> RunReport:
    """Four answerable cases (one wrong) and one unanswerable refused one."""
    return report(
        record("ok1", "Refunds arrive within 5 business days.", (("5 business days",),)),
        record("ok2", "It takes 5 business days.", (("5 business days",),)),
        record("wrong", "Refunds take a month.", (("5 business days",),)),
        record("ok3", "Refunds arrive within 5 business days.", (("business days",),)),
        record("none", "I don't know.", unanswerable=True, evidence={}),
    )

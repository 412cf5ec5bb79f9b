"""The golden set of the reference service: valid, big enough, and fair to the corpus."""

from __future__ import annotations

from collections import Counter

from evaluator.models import Dataset
from evaluator.reference.corpus import load_corpus
from evaluator.scoring import normalise
from evaluator.scoring.labels import LabelAudit


def test_has_enough_cases_of_every_kind(golden: Dataset) -> None:
    """>= 80 cases, >= 15 unanswerable, some graded, some with alternative facts,
    some retrieval-only, in both languages."""
    cases = golden.questions

    assert len(cases) >= 80
    assert sum(c.unanswerable for c in cases) >= 15
    assert sum(c.graded for c in cases) >= 5
    assert sum(any(len(f) > 1 for f in c.expected_facts) for c in cases) >= 5
    assert any(c.answerable and not c.expected_facts for c in cases)
    langs = Counter(t for c in cases for t in c.tags if t in {"zh", "en"})
    assert len(cases) == sum(langs.values())
    assert min(langs.values()) >= 0.4 * len(cases)


def test_every_case_is_tagged_with_a_topic(golden: Dataset) -> None:
    """Besides its language each case has a topic tag, for slicing results."""
    for case in golden.questions:
        assert set(case.tags) - {"zh", "en", "unanswerable", "confuser", "paraphrase"}, case.id


def test_relevant_ids_exist_and_share_the_question_language(golden: Dataset) -> None:
    """Every relevant id is a chunk of the corpus, in the question's language."""
    chunks = {c.id: c for c in load_corpus()}
    for case in golden.questions:
        for chunk_id in case.relevance:
            assert chunk_id in chunks, (case.id, chunk_id)
            assert chunks[chunk_id].lang in case.tags, (case.id, chunk_id)


#: the one deliberately mislabelled case: a refund-arrival question labelled with the
#: application deadline, which the label audit must find
MISLABELLED = "zh-refund-arrival-mislabelled"


def test_expected_facts_are_quoted_by_the_evidence(golden: Dataset) -> None:
    """An extractive answer quoting the evidence can contain each fact: no mislabels like
    "退款多久到账" labelled with the application deadline, except the one planted on purpose."""
    texts = {c.id: normalise(c.text) for c in load_corpus()}
    for case in golden.questions:
        if case.id == MISLABELLED:
            continue
        evidence = [texts[i] for i in case.relevant_ids]
        for fact in case.expected_facts:
            assert any(normalise(alt) in text for alt in fact for text in evidence), (
                case.id,
                fact,
            )


def test_refund_arrival_is_not_labelled_with_the_deadline(golden: Dataset) -> None:
    """The classic labelling trap: "退款多久到账" expects the arrival time, not "七天"."""
    case = next(c for c in golden.questions if c.question == "退款多久到账？")

    assert ("七天",) not in case.expected_facts
    assert any("3-5个工作日" in fact for fact in case.expected_facts)


def test_the_label_audit_finds_exactly_the_planted_mislabel(golden: Dataset) -> None:
    """With the whole corpus as evidence, the audit flags the planted case and no other."""
    texts = {c.id: c.text for c in load_corpus()}
    suspect = {
        case.id: audit.message
        for case in golden.questions
        if (
            audit := LabelAudit.of(
                unanswerable=case.unanswerable,
                expected_facts=case.expected_facts,
                relevance=case.relevance,
                texts=texts,
            )
        ).suspect
    }

    assert {MISLABELLED: "suspect label: '七天' is in none of the relevant evidence"} == suspect
    case = next(c for c in golden.questions if c.id == MISLABELLED)
    assert "mislabelled" in case.tags

"""The SLI table: which cases are events of each SLI, and which of them are good."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from evaluator.models import CaseRecord, CaseScores
from evaluator.slo.sli import SLI_NAMES, SLIS, Events, RunEvidence, SliChoice, count_events
from evaluator.summary import summarise
from tests.support.records import record

RUN = [
    record("right"),
    record("wrong", correct=False, recall=0.0, rr=0.0),
    record("no-check", correct=None),
    record("failed", error="timeout"),
    record("slow", latency=3.0),
    record("refused", unanswerable=True, relevance={}, correct=True),
    record("answered", unanswerable=True, relevance={}, correct=False),
]


def _count(name: str, run: Sequence[CaseRecord] | None = None, **parameter: Any) -> Events:
    evidence = RunEvidence(tuple(run if run is not None else RUN))
    return count_events(SliChoice(name, **parameter), evidence)


def test_the_table_is_the_documented_list() -> None:
    """The SLIs an SLO can name, in the documented order (docs/slo.md)."""
    assert (
        "answer_correct",
        "hit_at_k",
        "citations_valid",
        "refused_when_unanswerable",
        "no_error",
        "latency",
        "conversation_success",
        "judged",
    ) == SLI_NAMES


def test_every_parameter_is_a_field_of_the_choice() -> None:
    """An SLI's parameter is what the configuration hands it, a field of SliChoice."""
    fields = {f.name for f in dataclasses.fields(SliChoice)}
    assert {s.parameter for s in SLIS if s.parameter} <= fields


def test_answer_correct_counts_the_cases_the_accuracy_averages() -> None:
    """Each scored case with an answer check is an event (failed and unchecked cases are
    not), the same cases and sum as the summary's answer accuracy."""
    total = summarise(RUN).totals["answer_accuracy"]
    assert Events(good=3, bad=2) == _count("answer_correct")
    assert (total.sum, total.count) == (3.0, 5)


def test_hit_at_k_is_a_relevant_id_in_the_top_k() -> None:
    """Answerable scored cases: good when recall@K is above 0."""
    assert Events(good=3, bad=1) == _count("hit_at_k")


def test_citations_valid_reads_the_per_case_flag() -> None:
    """Scored cases where citations were checked; None is no event."""

    def flagged(case_id: str, valid: bool | None) -> CaseRecord:
        scores = CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, citation_valid=valid)
        return record(case_id, outcome=scores)

    run = [flagged("a", True), flagged("b", False), flagged("c", None), flagged("d", True)]
    assert Events(good=2, bad=1) == _count("citations_valid", run)


def test_refused_when_unanswerable_counts_unanswerable_cases() -> None:
    """Only unanswerable cases are events: refused is good."""
    run = [
        record("u1", unanswerable=True, relevance={}, outcome=_refused(True)),
        record("u2", unanswerable=True, relevance={}, outcome=_refused(False)),
        record("a1", outcome=_refused(True)),
    ]
    assert Events(good=1, bad=1) == _count("refused_when_unanswerable", run)


def _refused(refused: bool) -> CaseScores:
    return CaseScores(recall_at_k=None, mrr=None, ndcg_at_k=None, refused=refused)


def test_no_error_counts_every_case() -> None:
    """Every case is an event; a failed one is bad."""
    assert Events(good=6, bad=1) == _count("no_error")


def test_latency_counts_scored_cases_at_most_the_threshold() -> None:
    """A scored case at or under the threshold is good; a failed case is no event."""
    assert Events(good=5, bad=1) == _count("latency", threshold_seconds=2.5)
    assert Events(good=6, bad=0) == _count("latency", threshold_seconds=3.0)


def test_conversation_success_is_one_event_a_conversation() -> None:
    """The conversation's last turn carries its success: one event each, good when every
    turn passed; turns without the value (earlier turns, plain cases) are no event."""

    def turn(case_id: str, success: bool | None) -> CaseRecord:
        scores = CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, answer_correct=True,
                            conversation_success=success)  # fmt: skip
        return record(case_id, outcome=scores)

    run = [turn("a#1", None), turn("a#2", True), turn("b#1", None), turn("b#2", False)]
    assert Events(good=1, bad=1) == _count("conversation_success", [*run, record("plain")])


def test_judged_reads_the_trusted_verdicts_of_its_check() -> None:
    """The judge's verdicts on the check, when the run's judge is trusted for it."""
    evidence = RunEvidence(tuple(RUN), {"fact_support": {"right": True, "wrong": False}})
    choice = SliChoice("judged", check="fact_support")
    assert Events(good=1, bad=1) == count_events(choice, evidence)
    other = SliChoice("judged", check="groundedness")
    assert Events() == count_events(other, evidence)


@pytest.mark.parametrize(("name", "missing"), [("latency", "threshold"), ("judged", "check")])
def test_a_parameter_left_out_is_an_error(name: str, missing: str) -> None:
    """The configuration never lets it happen; the table refuses all the same."""
    with pytest.raises(ValueError, match=missing):
        _count(name)


def test_docs_list_every_sli_of_the_table() -> None:
    """docs/slo.md's SLI table has one row per SLI, in the table's order."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "slo.md").read_text("utf-8")
    section = page.split("## SLIs", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip().strip("`") for line in section.splitlines()
            if line.startswith("| `")]  # fmt: skip
    assert list(SLI_NAMES) == rows

"""Properties over generated inputs: what holds for every report, answer, golden set, question."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.daemon.shard import shard_cases
from evaluator.models import Case, CaseError, CaseRecord
from evaluator.report import (
    RunReport,
    encode_json,
    parse_timestamp,
    report_from_dict,
    report_to_dict,
)
from evaluator.scoring.answer import normalise
from evaluator.summary import summarise
from evaluator.targets.templates import DEFAULT_BODY, render_body
from tests.support.strategies import case_scores

# identifiers and prose without anything a redactor could mistake for a secret
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
_PROSE = st.text(alphabet="abcdefghij XYZ,.?退款多久到账", max_size=40)
_SECONDS = st.floats(min_value=0.0, max_value=120.0, allow_nan=False)


@st.composite
def _record(draw: st.DrawFn, case_id: str) -> CaseRecord:
    failed = draw(st.booleans())
    unanswerable = draw(st.booleans())
    ranked = tuple(draw(st.lists(_WORD, max_size=5, unique=True)))
    case = Case(
        id=case_id,
        question=draw(_PROSE),
        unanswerable=unanswerable,
        relevance={} if unanswerable else draw(st.dictionaries(_WORD, st.integers(1, 3))),
        expected_facts=tuple(
            tuple(alts) for alts in draw(st.lists(st.lists(_WORD, min_size=1, max_size=3)))
        ),
        tags=tuple(draw(st.lists(_WORD, max_size=2, unique=True))),
    )
    return CaseRecord(
        case=case,
        outcome=(
            CaseError(kind=draw(st.sampled_from(["timeout", "connect"])), message=draw(_PROSE))
            if failed
            else draw(case_scores())
        ),
        ranked_ids=() if failed else ranked,
        answer=None if failed else draw(st.none() | _PROSE),
        citations=() if failed else tuple(draw(st.lists(st.integers(1, 5) | _WORD, max_size=3))),
        latency_seconds=draw(_SECONDS),
        stage_seconds=draw(st.dictionaries(_WORD, _SECONDS, max_size=3)),
        attempts=draw(st.integers(1, 3)),
    )


@st.composite
def _report(draw: st.DrawFn) -> RunReport:
    ids = draw(st.lists(_WORD, max_size=6, unique=True))
    cases = tuple(draw(_record(case_id)) for case_id in ids)
    return RunReport(
        run_id=draw(_WORD),
        generated_at=parse_timestamp("2026-01-02T03:04:05Z"),
        config_hash=draw(_WORD),
        dataset_hash=draw(_WORD),
        target=draw(_WORD),
        dataset=draw(_WORD),
        k=draw(st.integers(1, 20)),
        duration_seconds=draw(_SECONDS),
        summary=summarise(cases),
        cases=cases,
    )


@settings(max_examples=60, deadline=None)
@given(_report())
def test_report_round_trips_through_its_json(report: RunReport) -> None:
    """Any report written as JSON reads back equal: every case, score, error and total."""
    data = json.loads(encode_json(report_to_dict(report)))
    assert report == report_from_dict(data)


@given(st.text())
def test_normalise_is_idempotent(text: str) -> None:
    """Normalising twice changes nothing: a fact and an answer meet in one normal form."""
    once = normalise(text)
    assert once == normalise(once)


def test_normalise_composes_across_a_dropped_space() -> None:
    """Found by the property above: NFKC turns the spacing acute "´" into a space and a
    combining acute; once the space is dropped the mark must compose with its letter, or
    "A´" and "á" would normalise to different strings (and a normalised fact would not
    match itself)."""
    assert "\xe1" == normalise("A\xb4") == normalise("\xe1")


@settings(deadline=None)
@given(st.lists(_WORD, max_size=40, unique=True), st.integers(1, 8))
def test_shards_partition_the_golden_set(ids: list[str], shard_count: int) -> None:
    """Every case is in exactly one shard, and each shard keeps golden-set order."""
    cases = [Case(id=i, question="q", relevance={}) for i in ids]
    shards = [shard_cases(cases, index, shard_count) for index in range(shard_count)]
    assert sorted(ids) == sorted(c.id for shard in shards for c in shard)
    for shard in shards:
        assert [c.id for c in shard] == [c.id for c in cases if c in shard]


@given(st.text(), st.integers(1, 100))
def test_any_question_renders_to_valid_json(question: str, k: int) -> None:
    """Whatever the question holds (quotes, backslashes, control characters), the rendered
    body encodes as JSON and carries the question unchanged."""
    body = render_body(DEFAULT_BODY, {"question": question, "k": k})
    decoded = json.loads(json.dumps(body))
    assert question in _strings(decoded)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@settings(max_examples=40, deadline=None)
@given(_report(), st.booleans())
def test_retrieval_only_read_back_follows_the_cases(report: RunReport, written: bool) -> None:
    """Whatever a file says retrieval_only is, the report read back derives it from its cases."""
    data = json.loads(encode_json(report_to_dict(report)))
    assert data["retrieval_only"] == report.retrieval_only  # still written, for old readers
    data["retrieval_only"] = written
    scored = [c for c in report.cases if c.scores is not None]
    assert report_from_dict(data).retrieval_only == (
        bool(scored) and all(c.answer is None for c in scored)
    )

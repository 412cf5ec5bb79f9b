"""summarise, nearest_rank, Total and Summary: denominators and percentiles as
docs/metrics.md says."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.models import CaseError, CaseRecord, CaseScores, Outcome
from evaluator.summary import (
    QUALITY_METRICS,
    Summary,
    Total,
    id_mismatch_warning,
    nearest_rank,
    relevant_never_retrieved,
    summarise,
)
from tests.support.records import record
from tests.support.strategies import case_scores


def _record(
    case_id: str,
    outcome: Outcome,
    *,
    unanswerable: bool = False,
    facts: tuple[tuple[str, ...], ...] = (),
    tags: tuple[str, ...] = (),
    latency: float = 0.1,
    stages: Mapping[str, float] | None = None,
) -> CaseRecord:
    return record(
        case_id,
        outcome=outcome,
        relevance={} if unanswerable else {"doc": 1},
        facts=facts,
        unanswerable=unanswerable,
        tags=tags,
        ranked=("doc",),
        answer="answer" if isinstance(outcome, CaseScores) else None,
        citations=(),
        latency=latency,
        stages=stages,
    )


def _scores(
    retrieval: float = 1.0,
    *,
    citation_precision: float | None = None,
    citation_recall: float | None = None,
    answer_correct: bool | None = None,
    fact_recall: float | None = None,
    refused: bool | None = None,
) -> CaseScores:
    return CaseScores(
        recall_at_k=retrieval,
        mrr=retrieval,
        ndcg_at_k=retrieval,
        citation_precision=citation_precision,
        citation_recall=citation_recall,
        answer_correct=answer_correct,
        fact_recall=fact_recall,
        refused=refused,
    )


def _failed(
    case_id: str, kind: str = "timeout", *, latency: float = 0.1, tags: tuple[str, ...] = ()
) -> CaseRecord:
    return _record(
        case_id, CaseError(kind=kind, message=f"{kind} happened"), latency=latency, tags=tags
    )


FACT = (("七天",),)


class TestNearestRank:
    """Nearest-rank percentiles: the smallest value with at least p% of values at or below."""

    @pytest.mark.parametrize(
        ("percentile", "expected"),
        [(5, 15.0), (30, 20.0), (40, 20.0), (50, 35.0), (95, 50.0), (100, 50.0)],
    )
    def test_textbook_example(self, percentile: float, expected: float) -> None:
        """The classic five-value example, given unsorted."""
        assert expected == nearest_rank([35.0, 20.0, 50.0, 15.0, 40.0], percentile)

    def test_p95_and_p50_of_one_to_twenty(self) -> None:
        """Over 1..20, P95 is the 19th value and P50 the 10th (no interpolation)."""
        values = [float(v) for v in range(20, 0, -1)]
        assert (19.0, 10.0) == (nearest_rank(values, 95), nearest_rank(values, 50))

    def test_p95_of_one_to_hundred(self) -> None:
        """Over 1..100, P95 is exactly 95."""
        assert 95.0 == nearest_rank([float(v) for v in range(1, 101)], 95)

    def test_single_value(self) -> None:
        """One observation is every percentile."""
        assert (7.0, 7.0) == (nearest_rank([7.0], 1), nearest_rank([7.0], 100))

    def test_empty_is_none(self) -> None:
        """No observation has no percentile: None, not NaN or an error."""
        assert nearest_rank([], 95) is None


class TestTotal:
    """Total keeps the sum and count behind an average."""

    def test_mean(self) -> None:
        """The mean is sum / count."""
        assert 0.75 == Total(1.5, 2).mean

    def test_empty_mean_is_none(self) -> None:
        """A total of no case has no mean."""
        assert Total(0.0, 0).mean is None


class TestRetrievalDenominator:
    """Retrieval metrics and citation recall average over answerable scored cases."""

    def test_unanswerable_cases_left_out_when_some_answerable(self) -> None:
        """An unanswerable case that retrieved something (0.0) does not pull the mean down."""
        summary = summarise(
            [
                _record("a", _scores(1.0, citation_recall=1.0)),
                _record("b", _scores(0.5, citation_recall=0.0)),
                _record("u", _scores(0.0), unanswerable=True),
            ]
        )
        expected = {name: Total(1.5, 2) for name in ("recall_at_k", "mrr", "ndcg_at_k")}
        expected["citation_recall"] = Total(1.0, 2)
        assert expected == {name: summary.totals[name] for name in expected}
        assert 0.75 == summary.get("recall_at_k")

    def test_all_scored_when_none_answerable(self) -> None:
        """With only unanswerable cases, retrieval metrics average over all of them."""
        summary = summarise(
            [
                _record("u1", _scores(1.0), unanswerable=True),
                _record("u2", _scores(0.0), unanswerable=True),
            ]
        )
        assert [Total(1.0, 2)] * 3 == [
            summary.totals[m] for m in ("recall_at_k", "mrr", "ndcg_at_k")
        ]
        assert summary.get("citation_recall") is None

    def test_failed_answerable_case_does_not_switch_pool(self) -> None:
        """An answerable case that failed is not scored, so the pool is all scored cases."""
        summary = summarise([_failed("a"), _record("u", _scores(1.0), unanswerable=True)])
        assert Total(1.0, 1) == summary.totals["recall_at_k"]


class TestCitationPrecisionDenominator:
    """Citation precision averages over every scored case that has an answer."""

    def test_over_answerable_and_unanswerable(self) -> None:
        """Both kinds count; a retrieval-only case (no answer, None) does not."""
        summary = summarise(
            [
                _record("a", _scores(citation_precision=1.0)),
                _record("b", _scores(citation_precision=0.5)),
                _record("u", _scores(citation_precision=0.0), unanswerable=True),
                _record("r", _scores()),
            ]
        )
        assert Total(1.5, 3) == summary.totals["citation_precision"]
        assert 0.5 == summary.get("citation_precision")


class TestAnswerDenominators:
    """Answer accuracy over cases with an answer check; fact recall over answerable with facts."""

    def _records(self) -> list[CaseRecord]:
        return [
            _record("right", _scores(answer_correct=True, fact_recall=1.0), facts=FACT * 2),
            _record("half", _scores(answer_correct=False, fact_recall=0.5), facts=FACT * 2),
            _record("no-facts", _scores(refused=False)),
            _record("refusal", _scores(answer_correct=True, refused=True), unanswerable=True),
        ]

    def test_answer_accuracy(self) -> None:
        """Answerable with facts and unanswerable count; answerable without facts does not."""
        summary = summarise(self._records())
        assert Total(2.0, 3) == summary.totals["answer_accuracy"]
        assert 2 / 3 == summary.get("answer_accuracy")

    def test_fact_recall(self) -> None:
        """Only answerable cases with expected facts: partial credit averaged over two."""
        summary = summarise(self._records())
        assert Total(1.5, 2) == summary.totals["fact_recall"]

    def test_no_answer_check_is_none(self) -> None:
        """Retrieval-only cases leave answer accuracy and fact recall null."""
        summary = summarise([_record("a", _scores()), _record("b", _scores())])
        assert (None, None) == (summary.get("answer_accuracy"), summary.get("fact_recall"))


class TestRefusalRates:
    """False refusals are answerable cases refused; correct refusals unanswerable ones refused."""

    def test_rates_use_their_own_denominators(self) -> None:
        """1 of 3 answerable refused, 1 of 2 unanswerable refused."""
        summary = summarise(
            [
                _record("a1", _scores(refused=False)),
                _record("a2", _scores(refused=True)),
                _record("a3", _scores(refused=False)),
                _record("u1", _scores(refused=True), unanswerable=True),
                _record("u2", _scores(refused=False), unanswerable=True),
            ]
        )
        expected = {"false_refusal_rate": Total(1.0, 3), "correct_refusal_rate": Total(1.0, 2)}
        assert expected == {name: summary.totals[name] for name in expected}

    def test_no_unanswerable_case(self) -> None:
        """Without unanswerable cases the correct refusal rate is null."""
        summary = summarise([_record("a", _scores(refused=True))])
        assert (1.0, None) == (
            summary.get("false_refusal_rate"),
            summary.get("correct_refusal_rate"),
        )


class TestErrors:
    """Failed cases stay out of the averages but count in error_rate and errors_by_kind."""

    def test_excluded_from_averages_counted_in_rate(self) -> None:
        """Two scored cases and one failure: averages over two, error rate 1/3."""
        summary = summarise(
            [
                _record("a", _scores(1.0, citation_precision=1.0)),
                _record("b", _scores(0.0, citation_precision=0.0)),
                _failed("c", "connect"),
            ]
        )
        assert (3, 2, 1) == (summary.case_count, summary.scored_count, summary.error_count)
        assert Total(1.0, 2) == summary.totals["recall_at_k"]
        assert Total(1.0, 2) == summary.totals["citation_precision"]
        assert 1 / 3 == summary.error_rate
        assert {"connect": 1} == summary.errors_by_kind

    def test_errors_by_kind_sorted_counts(self) -> None:
        """Errors are counted per kind, keys sorted."""
        summary = summarise(
            [_failed("a", "timeout"), _failed("b", "http_status"), _failed("c", "timeout")]
        )
        assert [("http_status", 1), ("timeout", 2)] == list(summary.errors_by_kind.items())

    def test_all_failed(self) -> None:
        """Every case failed: every quality metric is null and the error rate is 1."""
        summary = summarise([_failed("a"), _failed("b")])
        assert dict.fromkeys(QUALITY_METRICS) == {
            name: summary.get(name) for name in QUALITY_METRICS
        }
        assert 1.0 == summary.error_rate


class TestLatency:
    """P50/P95 are nearest-rank over every case sent, failed ones included."""

    def test_failed_cases_count(self) -> None:
        """A slow timeout is the P95 of twenty cases."""
        records = [_record(f"c{i}", _scores(), latency=float(i)) for i in range(1, 20)]
        records.append(_failed("slow", latency=30.0))
        summary = summarise(records)
        assert (10.0, 19.0) == (summary.p50_seconds, summary.p95_seconds)
        records.append(_failed("slower", latency=40.0))
        assert 30.0 == summarise(records).p95_seconds

    def test_per_stage_p95(self) -> None:
        """Each stage's P95 is over the cases that reported it; stages in the endpoint's order."""
        records = [
            _record(f"c{i}", _scores(), stages={"rerank": i / 100, "model": float(i)})
            for i in range(1, 21)
        ]
        records.append(_record("x", _scores(), stages={"embedding": 0.5}))
        records.append(_failed("f"))
        summary = summarise(records)
        assert {"embedding": 0.5, "model": 19.0, "rerank": 0.19} == summary.stage_p95_seconds
        assert ["rerank", "model", "embedding"] == list(summary.stage_p95_seconds)


class TestByTag:
    """Each tag gets its own summary over its cases, with the same rules."""

    def test_per_tag_summaries(self) -> None:
        """A tag's summary averages only its cases and counts its own errors."""
        summary = summarise(
            [
                _record("a", _scores(1.0), tags=("refund",), latency=1.0),
                _record("b", _scores(0.0), tags=("refund", "hard"), latency=2.0),
                _failed("c", tags=("hard",), latency=3.0),
                _record("d", _scores(0.5)),
            ]
        )
        assert ["hard", "refund"] == sorted(summary.by_tag)
        refund, hard = summary.by_tag["refund"], summary.by_tag["hard"]
        assert (0.5, 0.0, 2.0) == (refund.get("recall_at_k"), refund.error_rate, refund.p95_seconds)
        assert (0.0, 0.5, 3.0) == (hard.get("recall_at_k"), hard.error_rate, hard.p95_seconds)
        assert Total(1.5, 3) == summary.totals["recall_at_k"]

    def test_tag_summaries_do_not_nest(self) -> None:
        """A tag's summary has no by_tag of its own, in memory or in the report."""
        summary = summarise([_record("a", _scores(), tags=("x", "y"))])
        assert {} == summary.by_tag["x"].by_tag
        assert "by_tag" not in summary.to_dict()["by_tag"]["x"]

    def test_without_tags(self) -> None:
        """Untagged cases give no by_tag key in the report."""
        assert "by_tag" not in summarise([_record("a", _scores())]).to_dict()


#: the quality ratios a run of questions writes (conversation success: only with conversations)
QUESTION_METRICS = tuple(m for m in QUALITY_METRICS if m != "conversation_success")


class TestNoCase:
    """A metric with no case to average is null (None), never NaN."""

    def test_empty_run(self) -> None:
        """summarise([]) reports zero counts and None everywhere else; JSON has no NaN."""
        summary = summarise([])
        out = summary.to_dict()
        assert dict.fromkeys(QUESTION_METRICS) == {n: out[n] for n in QUESTION_METRICS}
        assert (None, None, None) == (out["error_rate"], out["p50_seconds"], out["p95_seconds"])
        assert (0, 0, 0) == (out["case_count"], out["scored_count"], out["error_count"])
        json.dumps(out, allow_nan=False)


class TestSummaryAccess:
    """Summary.get and Summary.to_dict expose values by their report names."""

    def test_get(self) -> None:
        """Quality ratios, error_rate and percentiles by name; unknown names give None."""
        summary = summarise([_record("a", _scores(0.5), latency=2.0), _failed("b", latency=4.0)])
        assert {
            "mrr": 0.5,
            "error_rate": 0.5,
            "p50_seconds": 2.0,
            "p95_seconds": 4.0,
            "no_such_metric": None,
            "stage_p95_seconds": None,
        } == {
            name: summary.get(name)
            for name in (
                "mrr",
                "error_rate",
                "p50_seconds",
                "p95_seconds",
                "no_such_metric",
                "stage_p95_seconds",
            )
        }

    def test_to_dict_names(self) -> None:
        """The customary names lead, followed by our additions and the raw totals."""
        out = summarise([_record("a", _scores(1.0, citation_precision=1.0, refused=False))])
        d = out.to_dict()
        assert list(QUESTION_METRICS) == list(d)[: len(QUESTION_METRICS)]
        for name in ("answer_accuracy", "p95_seconds", "p50_seconds", "error_rate"):
            assert name in d
        assert {"sum": 1.0, "count": 1} == d["totals"]["recall_at_k"]
        assert {"citation_precision": 1.0, "mrr": 1.0} == {
            k: d[k] for k in ("citation_precision", "mrr")
        }

    def test_to_dict_tolerates_missing_totals(self) -> None:
        """A summary read from an older report without some totals reports them as null."""
        summary = Summary(
            case_count=1,
            scored_count=1,
            error_count=0,
            totals={"recall_at_k": Total(1.0, 1)},
            error_rate=0.0,
            p50_seconds=0.1,
            p95_seconds=0.1,
            stage_p95_seconds={},
            errors_by_kind={},
        )
        d = summary.to_dict()
        assert (1.0, None) == (d["recall_at_k"], d["fact_recall"])


@st.composite
def _records(draw: st.DrawFn) -> CaseRecord:
    failed = draw(st.booleans())
    outcome: Outcome = CaseError(kind="timeout", message="late")
    if not failed:
        outcome = draw(case_scores())
    return _record(
        draw(st.text(min_size=1, max_size=5)),
        outcome,
        unanswerable=draw(st.booleans()),
        facts=draw(st.sampled_from([(), FACT])),
        tags=tuple(draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True))),
        latency=draw(st.floats(min_value=0.0, max_value=120.0, allow_nan=False)),
        stages=draw(
            st.dictionaries(
                st.sampled_from(["model", "rerank"]),
                st.floats(min_value=0, max_value=60, allow_nan=False),
            )
        ),
    )


def _check_ratios(summary: Summary) -> None:
    for name in (*QUALITY_METRICS, "error_rate"):
        value = summary.get(name)
        assert value is None or 0.0 <= value <= 1.0, (name, value)
        assert value is None or not math.isnan(value)
    assert summary.error_count + summary.scored_count == summary.case_count


class TestSummaryProperties:
    """Invariants of summarise over arbitrary records."""

    @settings(deadline=None)
    @given(st.lists(_records(), max_size=30))
    def test_ratios_in_unit_interval_or_none(self, records: list[CaseRecord]) -> None:
        """Every ratio, overall and per tag, lies in [0, 1] or is None; P50 <= P95."""
        summary = summarise(records)
        _check_ratios(summary)
        for tag_summary in summary.by_tag.values():
            _check_ratios(tag_summary)
        if records:
            assert summary.p50_seconds is not None
            assert summary.p95_seconds is not None
            assert summary.p50_seconds <= summary.p95_seconds
        json.dumps(summary.to_dict(), allow_nan=False)


class TestIdsNeverMatched:
    """A run in which no relevant id was ever retrieved says so: the ids probably differ."""

    def test_no_relevant_id_anywhere_counts_the_answerable_cases(self) -> None:
        """Cases with no relevant id anywhere count among the answerable ones, with a warning
        asking whether the ids match."""
        records = [_record("a", _scores(0.0)), _record("b", _scores(0.0)), _failed("c")]
        records.append(_record("u", _scores(0.0), unanswerable=True))
        assert 2 == relevant_never_retrieved(records)
        warning = id_mismatch_warning(records)
        assert warning is not None
        assert "any of the 2 answerable case(s): do your golden set's ids match" in warning

    def test_one_relevant_id_ranked_anywhere_is_enough(self) -> None:
        """Reciprocal rank has no cutoff: a relevant id at rank 40 still shows the ids match."""
        records = [_record("a", _scores(0.0)), _record("b", _scores(0.025))]
        assert 0 == relevant_never_retrieved(records)
        assert id_mismatch_warning(records) is None

    def test_nothing_to_judge_is_no_warning(self) -> None:
        """Only unanswerable or failed cases: nothing says the ids are wrong."""
        records = [_record("u", _scores(0.0), unanswerable=True), _failed("c")]
        assert 0 == relevant_never_retrieved(records)

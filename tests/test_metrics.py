"""The metric registry: one table every consumer derives from, checked against the contract."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from evaluator.commands.display import format_summary
from evaluator.daemon.exporter import GAUGES_BY_METRIC, QUALITY_GAUGES, JobSnapshot, Metrics
from evaluator.gate.push import SUMMARY_GAUGES
from evaluator.gate.rules import GATE_METRICS, POSITIONED_METRICS
from evaluator.metrics import (
    LOWER_IS_BETTER,
    METRICS,
    QUALITY_METRICS,
    MetricSpec,
    case_values,
    metric,
)
from evaluator.models import CaseRecord, CaseScores
from evaluator.summary import Summary, Total, summarise
from tests.support.contract import CONVERSATION_GAUGES, DELIVERY_GAUGES
from tests.support.contract import QUALITY_GAUGES as CONTRACT_GAUGES
from tests.support.records import record


def _record(case_id: str, scores: CaseScores, *, unanswerable: bool = False) -> CaseRecord:
    return record(
        case_id,
        outcome=scores,
        question="q?",
        relevance={} if unanswerable else {"d": 1},
        facts=(),
        unanswerable=unanswerable,
        ranked=("d",),
        answer="a",
        citations=(),
    )


class TestTheTableIsTheContract:
    """The registry's names are the ones the metric contract spells out literally."""

    def test_quality_metrics_in_report_order(self) -> None:
        """The ten quality ratios of the report, in the report's order."""
        assert (
            "recall_at_k",
            "mrr",
            "ndcg_at_k",
            "citation_precision",
            "citation_recall",
            "answer_accuracy",
            "fact_recall",
            "false_refusal_rate",
            "correct_refusal_rate",
            "conversation_success",
        ) == QUALITY_METRICS

    def test_gauges_are_the_contract_names(self) -> None:
        """Every gauge the registry names is a contract gauge for the same summary key, and
        every summary metric has one (the error rate is rag_eval_error_ratio, of the last run)."""
        gauges = {spec.gauge: spec.name for spec in METRICS if spec.gauge is not None}
        assert {**CONTRACT_GAUGES, **DELIVERY_GAUGES, **CONVERSATION_GAUGES} == gauges
        assert {k: g for g, k in gauges.items()} == dict(GAUGES_BY_METRIC)
        assert {spec.name for spec in METRICS} - set(GAUGES_BY_METRIC) == {"error_rate"}
        assert set(QUALITY_GAUGES) == set(QUALITY_METRICS)

    def test_gate_vocabulary(self) -> None:
        """Rules may name every summary metric; a rise is bad for refusals, errors, latency,
        time to first token, cost and tokens."""
        streamed = ("p50_ttft_seconds", "p95_ttft_seconds", "p50_tokens_per_second")
        usage = ("cost_per_case", "cost_total", "output_tokens_total")
        assert (
            *QUALITY_METRICS,
            "error_rate",
            "p50_seconds",
            "p95_seconds",
            "p95_conversation_seconds",
            *streamed,
            *usage,
        ) == GATE_METRICS
        assert {
            "false_refusal_rate",
            "error_rate",
            "p50_seconds",
            "p95_seconds",
            "p95_conversation_seconds",
            "p50_ttft_seconds",
            "p95_ttft_seconds",
            *usage,
        } == {name for name in LOWER_IS_BETTER if "@" not in name}
        # each at a turn position of a conversation too, in the same direction
        assert {f"{m}@{p}" for m in GATE_METRICS for p in ("1", "2", "3", "4+")} == set(
            POSITIONED_METRICS
        )
        assert {"error_rate@4+", "p95_seconds@2"} <= LOWER_IS_BETTER

    def test_pushed_gauges(self) -> None:
        """The gate pushes the six gauged ratios, conversation success, the error ratio and
        the P95, as the daemon names them."""
        assert [
            ("recall_at_k", "recall_at_k", "recall@K"),
            ("mrr", "mrr", "mean reciprocal rank"),
            ("ndcg_at_k", "ndcg_at_k", "nDCG@K"),
            ("citation_precision", "citation_precision", "citation precision"),
            ("citation_recall", "citation_recall", "citation recall"),
            ("answer_accuracy", "answer_accuracy", "answer accuracy"),
            (
                "conversation_success",
                "conversation_success",
                "share of conversations whose every turn passed its answer check",
            ),
            ("error_rate", "error_ratio", "ratio of failed cases"),
            ("p95_seconds", "latency_p95_seconds", "P95 case latency"),
        ] == list(SUMMARY_GAUGES)

    def test_names_are_unique_and_run_level_values_have_no_per_case_pick(self) -> None:
        """One spec per name; only quality ratios carry a population and a per-case value."""
        assert len(METRICS) == len({spec.name for spec in METRICS})
        run_level = {spec.name for spec in METRICS if not spec.quality}
        measured = {spec.name for spec in METRICS if spec.measured_only}
        assert {"error_rate", "p50_seconds", "p95_seconds"} == run_level - measured

    def test_unknown_metric_is_a_key_error(self) -> None:
        """Looking up a name the registry lacks fails loudly."""
        with pytest.raises(KeyError):
            metric("recall")

    def test_a_score_must_be_a_case_scores_field(self) -> None:
        """A spec naming no CaseScores field fails when the table is built, not at the
        first summary."""
        with pytest.raises(ValueError, match="'accuracy' is not a CaseScores field"):
            MetricSpec("x", "x", "x", score="accuracy")
        assert 0.5 == metric("mrr").per_case(CaseScores(recall_at_k=1.0, mrr=0.5, ndcg_at_k=0.0))  # type: ignore[misc]

    def test_run_level_value_has_no_case_values(self) -> None:
        """A percentile is not a mean of per-case values: asking for them is a caller bug."""
        with pytest.raises(ValueError, match="run-level"):
            case_values([], "p95_seconds")


class TestDenominatorRule:
    """The one rule behind both the summary's means and the gate's per-case values."""

    RECORDS = (
        _record(
            "a",
            CaseScores(
                recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, citation_precision=0.5, refused=False
            ),
        ),
        _record(
            "b",
            CaseScores(recall_at_k=0.0, mrr=0.0, ndcg_at_k=0.0, answer_correct=True, refused=True),
        ),
        _record(
            "u",
            CaseScores(recall_at_k=0.0, mrr=0.0, ndcg_at_k=0.0, refused=True),
            unanswerable=True,
        ),
    )

    def test_worked_example(self) -> None:
        """Retrieval over the 2 answerable cases, refusals split by answerability, a None
        (no citation precision, no answer check) leaves the case out."""
        totals = summarise(list(self.RECORDS)).totals
        assert Total(1.0, 2) == totals["recall_at_k"]
        assert Total(0.5, 1) == totals["citation_precision"]
        assert Total(1.0, 1) == totals["answer_accuracy"]
        assert Total(1.0, 2) == totals["false_refusal_rate"]
        assert Total(1.0, 1) == totals["correct_refusal_rate"]
        assert Total(0.0, 0) == totals["fact_recall"]

    def test_case_values_are_the_summarys_population(self) -> None:
        """Each metric's per-case values sum and count to the summary's total."""
        summary = summarise(list(self.RECORDS))
        for name in QUALITY_METRICS:
            picked = case_values(list(self.RECORDS), name)
            assert Total(sum(picked.values()), len(picked)) == summary.totals[name], name

    def test_only_unanswerable_cases_still_score_retrieval(self) -> None:
        """With no answerable case, retrieval averages over every scored case."""
        only = [self.RECORDS[2]]
        assert {"u": 0.0} == case_values(only, "recall_at_k")
        assert {} == case_values(only, "false_refusal_rate")


def _partial_summary() -> Summary:
    return Summary(
        case_count=2,
        scored_count=2,
        error_count=0,
        totals={"mrr": Total(1.5, 2)},
        error_rate=0.0,
        p50_seconds=0.2,
        p95_seconds=0.3,
        stage_p95_seconds={},
        errors_by_kind={},
    )


class TestSummaryHasEveryMetric:
    """A summary read back without some totals (another version, a hand edit) is complete."""

    def test_missing_totals_read_as_no_case(self) -> None:
        """A missing total is Total(0, 0): its mean is None, the present ones are kept."""
        summary = _partial_summary()
        assert set(QUALITY_METRICS) <= set(summary.totals)
        assert Total(0.0, 0) == summary.totals["recall_at_k"]
        assert summary.get("recall_at_k") is None
        assert 0.75 == summary.get("mrr")

    def test_metrics_scrape_survives_a_partial_summary(self) -> None:
        """/metrics keeps answering (it raised KeyError on every scrape before)."""
        registry = CollectorRegistry()
        metrics = Metrics(registry, (0.1, 1.0))
        snapshot = JobSnapshot(
            target="t",
            dataset="d",
            k=5,
            config_hash="c" * 16,
            dataset_hash="h" * 64,
            interval_seconds=60.0,
            last_complete=_partial_summary(),
        )
        metrics.add_job(snapshot)
        text = generate_latest(registry).decode()
        assert 'rag_eval_mrr{dataset="d",target="t"} 0.75' in text
        assert "rag_eval_recall_at_k{" not in text
        assert 'rag_eval_quality_denominator{dataset="d",metric="recall_at_k",target="t"} 0.0' in (
            text
        )

    def test_terminal_table_survives_a_partial_summary(self) -> None:
        """The run table prints n/a with a zero denominator for the missing metric."""
        table = format_summary(_partial_summary())
        assert "recall_at_k" in table
        row = next(line for line in table.splitlines() if line.startswith("recall_at_k"))
        assert ["recall_at_k", "n/a", "0"] == row.split()


class TestTheReportReaderKnowsEveryMetric:
    """The report reader's typed structs (msgspec) are made from CaseScores and the registry,
    so a metric added there is decoded, range-checked and named in errors with no edit in
    evaluator/report/read.py."""

    def test_every_case_score_is_read_back(self) -> None:
        """The report reader reads back every per-case score."""
        from evaluator.report import read

        assert set(CaseScores.__struct_fields__) <= set(read._Case.__struct_fields__)

    def test_every_quality_ratio_and_total_is_read_back(self) -> None:
        """The report reader reads back every quality ratio and its total, in the summary and
        per tag."""
        from evaluator.report import read

        for struct in (read._Totals, read._TagSummary):
            assert set(QUALITY_METRICS) <= set(struct.__struct_fields__), struct.__name__

    @pytest.mark.parametrize("name", QUALITY_METRICS)
    def test_a_ratio_out_of_range_is_an_error_naming_it(self, name: str) -> None:
        """A ratio out of range is an error naming the metric."""
        import msgspec

        from evaluator.report import read

        with pytest.raises(msgspec.ValidationError, match=name):
            msgspec.json.decode(
                b'{"case_count": 1, "scored_count": 1, "error_count": 0, "%s": 1.5}'
                % name.encode(),
                type=read._TagSummary,
            )

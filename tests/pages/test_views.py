"""Views and rendering: escaping, redaction, bounds, directions (no browser needed)."""

from __future__ import annotations

from evaluator.models import Case, CaseError, CaseRecord, CaseScores
from evaluator.pages.case import RANKING_SHOWN, case_view
from evaluator.pages.metric_rows import metric_rows
from evaluator.pages.render import PageRenderer
from evaluator.pages.report import report_view
from evaluator.pages.status import JobPage, job_view
from evaluator.pages.trend import RunPoint
from evaluator.redaction import Redactor
from evaluator.report import RunReport
from evaluator.summary import summarise
from tests.support.records import replace, report

SECRET = "tok-9f8e7d6c5b4a"
RECORD = CaseRecord(
    case=Case(
        id="refund-time",
        question=f"退款多久到账？ {SECRET}",
        relevance={"policy": 2, "faq": 1},
        expected_facts=(("3-5个工作日",), ("七天", "7天")),
        unanswerable=False,
        tags=("refund",),
    ),
    outcome=CaseScores(
        recall_at_k=0.5,
        mrr=0.5,
        ndcg_at_k=0.4,
        citation_precision=1 / 3,
        citation_recall=0.5,
        citation_valid=False,
        answer_correct=False,
        fact_recall=0.5,
        refused=False,
    ),
    ranked_ids=("noise", "policy", "<b>x</b>"),
    answer=f"<script>alert(1)</script>一般 3 - 5 个工作日到账 {SECRET}",
    citations=(2, 9, "noise"),
    latency_seconds=0.0123,
    stage_seconds={"model": 0.01, "<i>stage</i>": 0.0004},
    texts={"policy": f"退回到银行卡通常需要3-5个工作日到账。{SECRET}", "noise": "七天无理由退款"},
)


def _report(*records: CaseRecord) -> RunReport:
    return report(records, k=2, target="rag")


class TestCaseView:
    def test_facts_found_and_missing_and_where(self) -> None:
        """The case view lists each expected fact, found or missing, with its alternatives."""
        view = case_view(RECORD, k=2)

        assert [(f.text, f.found) for f in view.facts] == [
            ("'3-5个工作日'", True),
            ("'七天' (or '7天')", False),
        ]
        assert ["'七天' (or '7天')"] == view.missing_facts
        assert ["3 - 5 个工作日"] == [s.text for s in view.answer or () if s.fact is not None]
        # the relevant text holds fact 0; the irrelevant one holds fact 1
        ranking = {r.id: r for r in view.ranking}
        assert ([0], 2, True) == (ranking["policy"].facts_in_text, ranking["policy"].grade, True)
        assert ([1], 0) == (ranking["noise"].facts_in_text, ranking["noise"].grade)
        assert (False, None) == (ranking["<b>x</b>"].in_top_k, ranking["<b>x</b>"].text)
        assert ["faq"] == view.relevant_not_retrieved

    def test_citations_resolve_and_are_judged(self) -> None:
        """Each citation resolves to a retrieved id (or not) and is judged supported or not."""
        view = case_view(RECORD, k=2)
        assert [("[2]", "policy", True), ("[9]", None, False), ("noise", "noise", False)] == [
            (c.label, c.resolves_to, c.supported) for c in view.citations
        ]
        assert {r.id for r in view.ranking if r.cited} == {"policy", "noise"}

    def test_trace_link_only_when_the_record_has_a_trace_id(self) -> None:
        """A trace link is shown only when the record carries a trace id."""
        assert (None, None) == (case_view(RECORD, k=2).trace_id, case_view(RECORD, k=2).trace_url)

        class Traced:
            trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"

            def __getattr__(self, name: str) -> object:
                return getattr(RECORD, name)

        view = case_view(Traced(), k=2, trace_url="https://traces.example/t/{trace_id}")  # type: ignore[arg-type]
        assert "https://traces.example/t/4bf92f3577b34da6a3ce929d0e0e4736" == view.trace_url

    def test_lists_are_bounded(self) -> None:
        """The case view's lists and texts are bounded, however much the service sent."""
        many = replace(
            RECORD,
            ranked_ids=tuple(f"d{i}" for i in range(500)),
            answer="x" * 100_000,
            stage_seconds={f"s{i}": 0.1 for i in range(100)},
            citations=tuple(range(1, 200)),
        )
        view = case_view(many, k=5)

        assert (RANKING_SHOWN, 500 - RANKING_SHOWN) == (len(view.ranking), view.ranking_more)
        assert view.answer_cut and sum(len(s.text) for s in view.answer or ()) == 8000
        assert (20, 20) == (len(view.stages), len(view.citations))

    def test_an_error_case(self) -> None:
        """A failed case's view shows its error kind and message instead of scores."""
        failed = replace(
            RECORD, outcome=CaseError(kind="timeout", message="deadline 5 s"), answer=None
        )
        view = case_view(failed, k=2)
        assert ("error", "timeout: deadline 5 s") == (view.verdict, view.error)


class TestRendering:
    def test_everything_from_an_endpoint_is_escaped_and_secrets_masked(self) -> None:
        """Everything that came from the endpoint is escaped and the target's secrets masked."""
        renderer = PageRenderer(Redactor([SECRET]))
        html = renderer.case(
            case_view(RECORD, k=2, redact=Redactor([SECRET])),
            job="rag / golden",
            run_id="r",
            run_age="now",
        )

        assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&lt;b&gt;x&lt;/b&gt;" in html and "&lt;i&gt;stage&lt;/i&gt;" in html
        # the question is the golden set's, not redacted by the view: the renderer masks it
        assert SECRET not in html
        assert html.count("***") >= 3

    def test_a_gate_report_and_a_run_report(self) -> None:
        """A gate report's view has the verdict, the regressed cases and the failing rules, and
        renders self-contained; a run report's has no verdict and lists the worst cases."""
        from evaluator.gate import evaluate_gate

        good = replace(RECORD, outcome=replace(_scores(), mrr=1.0, answer_correct=True))
        baseline, candidate = _report(good), _report(RECORD)
        result = evaluate_gate(baseline, candidate, with_intervals=False)
        view = report_view(candidate, source="cand.json", gate=result, baseline_source="base.json")

        assert "FAIL" == view.verdict
        assert ["refund-time"] == [c.id for c in view.regressed]
        assert any(r.status == "FAIL" and r.message.startswith("mrr") for r in view.rules)
        html = PageRenderer().report(view)
        assert "<script" not in html.replace("&lt;script", "")
        assert "<link" not in html and "http://" not in html and "https://" not in html

        run = report_view(candidate, source="cand.json")
        assert (None, ["refund-time"]) == (run.verdict, [c.id for c in run.worst])


def _scores() -> CaseScores:
    assert RECORD.scores is not None
    return RECORD.scores


def test_metric_rows_know_which_way_is_worse() -> None:
    """Each metric row says whether the change is better or worse by the metric's direction."""
    better = replace(RECORD, outcome=replace(_scores(), mrr=1.0), latency_seconds=0.5)
    rows = {r.name: r for r in metric_rows(summarise([better]), summarise([RECORD]))}

    assert (True, False) == (rows["mrr"].better, rows["mrr"].worse)
    assert (False, True) == (rows["p95_seconds"].better, rows["p95_seconds"].worse)
    assert "+0.5000" == rows["mrr"].diff
    assert not rows["recall_at_k"].worse and not rows["recall_at_k"].better


def test_a_status_page_of_many_jobs_is_bounded_and_draws_trends() -> None:
    """A status page of many jobs shows a bounded number of them, each with its trend lines."""
    from evaluator.daemon.pages import JOBS_SHOWN

    report = _report(RECORD)
    runs = [RunPoint(f"r{i}", 1000.0 - i, "complete", {"mrr": 0.5 + i / 100}) for i in range(10)]
    views = [
        job_view(
            JobPage(f"t{i}", "golden", report, "complete", 990.0, runs=runs),
            case_href=lambda t, d, c: f"/case?id={c}",
            report_href="/r",
            anchor=f"job-{i}",
            now=1000.0,
        )
        for i in range(JOBS_SHOWN)
    ]
    html = PageRenderer().status(views, jobs_more=50)

    assert JOBS_SHOWN == html.count('<section class="job"')
    assert f"showing {JOBS_SHOWN} of {JOBS_SHOWN + 50} jobs" in html
    assert views[0].trends[0].metric == "mrr" and views[0].trends[0].last == "0.5000"
    assert "10 s ago" == views[0].age


def test_the_pages_read_direction_and_unit_from_the_registry() -> None:
    """A metric's registry entry decides which way is worse and how its numbers read."""
    from evaluator.metrics import LOWER_IS_BETTER, METRICS
    from evaluator.pages.formatting import fmt_value

    assert {s.name for s in METRICS if s.lower_is_better} == {
        name for name in LOWER_IS_BETTER if "@" not in name
    }
    assert "250.0ms" == fmt_value("p95_ttft_seconds", 0.25)  # seconds by unit, no name guess
    assert "0.2500" == fmt_value("cost_per_case", 0.25)

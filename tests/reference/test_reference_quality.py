"""The reference service against its golden set: a realistic mix of right and wrong, and each
failure mode moving the metrics the way its row of the gate's decision table (docs/gate.md) says.

The baseline numbers are the ones the README quotes; a change to the corpus, the golden set
or the pipeline that moves them must update the README too.
"""

from __future__ import annotations

import httpx
import pytest

from evaluator.models import Dataset
from tests.reference.harness import SLOW_SECONDS, Run, ask, evaluate
from tests.support.reference import ReferenceServer

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

#: measured baseline (recall@5, MRR, nDCG@5, citation precision, accuracy, correct refusals)
README_BASELINE = {
    "recall_at_k": 0.945,
    "mrr": 0.895,
    "ndcg_at_k": 0.903,
    "citation_precision": 0.790,
    "answer_accuracy": 0.746,
    "correct_refusal_rate": 0.800,
}


@pytest.fixture(scope="module")
def baseline(reference_server: ReferenceServer, golden: Dataset) -> Run:
    """A run of the golden set against the healthy reference service."""
    reference_server.failure_modes.set([])
    with httpx.Client(base_url=reference_server.url, timeout=10) as http:
        return evaluate(http, golden.questions)


def run_with(
    reference_server: ReferenceServer, golden: Dataset, client: httpx.Client, *modes: str
) -> Run:
    """A run of the golden set with the reference service in failure ``modes``."""
    reference_server.failure_modes.set(modes)
    return evaluate(client, golden.questions)


class TestBaseline:
    def test_matches_the_readme(self, baseline: Run) -> None:
        """The summary is the one the README shows (to three decimals)."""
        summary = baseline.summary()

        assert README_BASELINE == pytest.approx(
            {name: summary[name] for name in README_BASELINE}, abs=5e-4
        )

    def test_is_realistic_not_perfect(self, baseline: Run) -> None:
        """Good retrieval, a fair share of wrong answers, most unanswerable cases refused."""
        assert 0.8 <= baseline.recall < 1.0
        assert 0.6 <= baseline.accuracy <= 0.85
        assert 0.6 <= baseline.correct_refusal_rate < 1.0
        assert 0.0 < baseline.false_refusal_rate < 0.25
        assert 0.0 == baseline.error_rate

    @pytest.mark.parametrize("lang", ["zh", "en"])
    def test_both_languages_retrieve_well(self, baseline: Run, lang: str) -> None:
        """Chinese and English questions each reach recall@5 >= 0.85 and MRR >= 0.8."""
        cases = [(c, s) for c, s, _ in baseline.scored if c.answerable and lang in c.tags]
        recall = sum(s.recall_at_k or 0.0 for _, s in cases) / len(cases)
        mrr = sum(s.mrr or 0.0 for _, s in cases) / len(cases)

        assert recall >= 0.85
        assert mrr >= 0.8


class TestFailureModes:
    def test_retrieval_degraded_lowers_recall_and_mrr(
        self,
        baseline: Run,
        reference_server: ReferenceServer,
        golden: Dataset,
        client: httpx.Client,
    ) -> None:
        """Row "recall down, MRR down": parsing, chunking, retrieval."""
        run = run_with(reference_server, golden, client, "retrieval_degraded")

        assert run.recall < baseline.recall - 0.1
        assert run.mrr < baseline.mrr - 0.1

    def test_rerank_degraded_keeps_recall_lowers_mrr(
        self,
        baseline: Run,
        reference_server: ReferenceServer,
        golden: Dataset,
        client: httpx.Client,
    ) -> None:
        """Row "recall flat, MRR down": the same top K, worse order."""
        run = run_with(reference_server, golden, client, "rerank_degraded")

        assert baseline.recall == run.recall
        assert run.mrr < baseline.mrr - 0.2

    def test_answer_degraded_keeps_retrieval_lowers_accuracy(
        self,
        baseline: Run,
        reference_server: ReferenceServer,
        golden: Dataset,
        client: httpx.Client,
    ) -> None:
        """Row "retrieval flat, accuracy down": prompt, model, context assembly."""
        run = run_with(reference_server, golden, client, "answer_degraded")

        assert (baseline.recall, baseline.mrr, baseline.ndcg) == (run.recall, run.mrr, run.ndcg)
        assert baseline.citation_precision == run.citation_precision
        assert run.accuracy < baseline.accuracy - 0.3

    def test_citations_degraded_keeps_accuracy_lowers_citation_precision(
        self,
        baseline: Run,
        reference_server: ReferenceServer,
        golden: Dataset,
        client: httpx.Client,
    ) -> None:
        """Row "accuracy flat, citation precision down": citation protocol or checking."""
        run = run_with(reference_server, golden, client, "citations_degraded")

        assert (baseline.recall, baseline.mrr) == (run.recall, run.mrr)
        assert baseline.accuracy == run.accuracy
        assert run.citation_precision < baseline.citation_precision - 0.5

    def test_slow_model_raises_latency_in_the_model_stage(
        self, reference_server: ReferenceServer, golden: Dataset, client: httpx.Client
    ) -> None:
        """P95 up: every call takes the model-stage delay longer, and the timing shows it."""
        questions = [c.question for c in golden.questions[:4]]
        fast = [ask(client, q).json()["timings"]["model"] for q in questions]
        reference_server.failure_modes.set(["slow_model"])
        slow = [ask(client, q).json()["timings"]["model"] for q in questions]

        assert max(fast) < 0.05
        assert min(slow) >= SLOW_SECONDS

    def test_server_errors_fail_a_stable_share(
        self,
        baseline: Run,
        reference_server: ReferenceServer,
        golden: Dataset,
        client: httpx.Client,
    ) -> None:
        """Error rate up: about 30% of questions get HTTP 500, the same ones every time."""
        first = run_with(reference_server, golden, client, "server_errors")
        second = evaluate(client, golden.questions)

        assert 0.2 <= first.error_rate <= 0.45
        assert {500} == {status for _, status in first.failed}
        assert [c.id for c, _ in first.failed] == [c.id for c, _ in second.failed]
        answered = {c.id for c, _, _ in first.scored}
        assert answered == {c.id for c, _, _ in baseline.scored} - {c.id for c, _ in first.failed}

    def test_modes_combine(
        self,
        baseline: Run,
        reference_server: ReferenceServer,
        golden: Dataset,
        client: httpx.Client,
    ) -> None:
        """Several modes at once each leave their own mark."""
        reference_server.failure_modes.set(["citations_degraded", "slow_model"])
        body = ask(client, "How long is the password reset link valid?").json()

        assert [0] == body["citations"]
        assert body["timings"]["model"] >= SLOW_SECONDS
        assert "30 minutes" in body["answer"]

"""Helpers for the reference-service tests: an HTTP call and a tiny evaluator that scores
the golden set against the service with :mod:`evaluator.scoring`, averaging as
docs/metrics.md says."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from evaluator.models import Case, CaseScores, Retrieved, TargetResponse
from evaluator.scoring import score_case

GOLDEN_SET = Path(__file__).resolve().parents[2] / "evals" / "rag_cases.jsonl"
K = 5
#: the model-stage delay the session server uses under ``slow_model``
SLOW_SECONDS = 0.25


def _ranked(value: float | None) -> float:
    """A retrieval score of the reference service, which maps its ids (never n/a)."""
    assert value is not None, "the reference service's retrieval is always scored"
    return value


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


@dataclass
class Run:
    """Scores of one pass over the golden set, with averages computed as docs/metrics.md says."""

    scored: list[tuple[Case, CaseScores, TargetResponse]] = field(default_factory=list)
    failed: list[tuple[Case, int]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def _answerable(self) -> list[CaseScores]:
        return [s for c, s, _ in self.scored if c.answerable]

    @property
    def recall(self) -> float:
        """Mean recall@K over the answerable cases."""
        return _mean([_ranked(s.recall_at_k) for s in self._answerable()])

    @property
    def mrr(self) -> float:
        """Mean reciprocal rank over the answerable cases."""
        return _mean([_ranked(s.mrr) for s in self._answerable()])

    @property
    def ndcg(self) -> float:
        """Mean nDCG@K over the answerable cases."""
        return _mean([_ranked(s.ndcg_at_k) for s in self._answerable()])

    @property
    def citation_precision(self) -> float:
        """Mean citation precision over the scored cases."""
        return _mean([s.citation_precision or 0.0 for _, s, _ in self.scored])

    @property
    def accuracy(self) -> float:
        """Share of correct answers among the cases with an answer check."""
        checked = [s.answer_correct for _, s, _ in self.scored if s.answer_correct is not None]
        return _mean([float(ok) for ok in checked])

    @property
    def correct_refusal_rate(self) -> float:
        """Share of unanswerable cases refused."""
        return _mean([float(bool(s.refused)) for c, s, _ in self.scored if c.unanswerable])

    @property
    def false_refusal_rate(self) -> float:
        """Share of answerable cases refused."""
        return _mean([float(bool(s.refused)) for s in self._answerable()])

    @property
    def error_rate(self) -> float:
        """Share of cases that failed."""
        return len(self.failed) / (len(self.failed) + len(self.scored))

    def summary(self) -> dict[str, float]:
        """Every figure of the run by its report name."""
        return {
            "recall_at_k": self.recall,
            "mrr": self.mrr,
            "ndcg_at_k": self.ndcg,
            "citation_precision": self.citation_precision,
            "answer_accuracy": self.accuracy,
            "correct_refusal_rate": self.correct_refusal_rate,
            "false_refusal_rate": self.false_refusal_rate,
            "error_rate": self.error_rate,
        }


def ask(http: httpx.Client, question: str, top_k: int = K) -> httpx.Response:
    """Ask the reference service one question."""
    return http.post("/rag", json={"question": question, "top_k": top_k})


def evaluate(http: httpx.Client, cases: Sequence[Case], k: int = K) -> Run:
    """Send every case to the service and score it; HTTP errors are recorded, not scored."""
    run = Run()
    for case in cases:
        started = time.perf_counter()
        response = ask(http, case.question, k)
        run.latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            run.failed.append((case, response.status_code))
            continue
        body = response.json()
        target = TargetResponse(
            retrieved=tuple(Retrieved(r["id"], r["score"], r["text"]) for r in body["retrieved"]),
            answer=body["answer"],
            citations=tuple(body["citations"]),
            timings=body["timings"],
        )
        run.scored.append((case, score_case(case, target, k), target))
    return run

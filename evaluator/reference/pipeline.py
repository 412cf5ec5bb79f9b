"""The RAG pipeline: tokenize, keyword retrieval, rerank, answer; timed stage by stage."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter

from evaluator.reference.answerer import ExtractiveAnswerer
from evaluator.reference.context import read_question
from evaluator.reference.corpus import first_sentence_only, load_corpus
from evaluator.reference.failures import FailureModes, question_fails
from evaluator.reference.rerank import rerank
from evaluator.reference.retriever import KeywordIndex
from evaluator.reference.tokenize import DEGRADED, STANDARD

__all__ = ["RagResult", "ReferenceRag"]

#: how many BM25 candidates the rerank stage sees (at least ``top_k``)
_CANDIDATES = 20


@dataclass(frozen=True, slots=True)
class RagResult:
    """One answered question in the default target contract's terms."""

    answer: str
    #: (id, score, text) of each retrieved chunk, best first
    retrieved: tuple[tuple[str, float, str], ...]
    citations: tuple[int, ...]
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The response body of ``POST /rag``."""
        return {
            "answer": self.answer,
            "retrieved": [
                {"id": i, "score": round(score, 6), "text": text}
                for i, score, text in self.retrieved
            ],
            "citations": list(self.citations),
            "timings": self.timings,
        }


class ReferenceRag:
    """The reference RAG service without its HTTP layer, over the bundled corpus.

    Both indexes (the healthy one and the one ``retrieval_degraded`` switches to) are built
    here, once, each with the answerer reading from it.

    Args:
        failure_modes: the switchboard consulted on every question.
        slow_model_seconds: extra model-stage time under ``slow_model``.
        error_share: share of questions answered with HTTP 500 under ``server_errors``.
    """

    def __init__(
        self,
        *,
        failure_modes: FailureModes | None = None,
        slow_model_seconds: float = 1.5,
        error_share: float = 0.3,
    ) -> None:
        self.chunks = load_corpus()
        self.failure_modes = failure_modes if failure_modes is not None else FailureModes()
        self.slow_model_seconds = slow_model_seconds
        self.error_share = error_share
        self._healthy = ExtractiveAnswerer(KeywordIndex(self.chunks, STANDARD))
        self._degraded = ExtractiveAnswerer(
            KeywordIndex(first_sentence_only(self.chunks), DEGRADED)
        )

    def injects_error(self, question: str) -> bool:
        """Whether ``server_errors`` makes this question fail."""
        return "server_errors" in self.failure_modes and question_fails(question, self.error_share)

    async def ask(self, question: str, top_k: int = 5, earlier: Sequence[str] = ()) -> RagResult:
        """Retrieve ``top_k`` chunks for ``question``, answer from them, time each stage.

        ``earlier`` are the earlier user questions of its conversation, oldest first: a
        follow-up is read with them (:mod:`evaluator.reference.context`), unless
        ``history_ignored`` is on.
        """
        modes = self.failure_modes.active
        answerer = self._degraded if "retrieval_degraded" in modes else self._healthy
        index = answerer.index
        timings: dict[str, float] = {}
        if "history_ignored" in modes:
            earlier = ()

        started = perf_counter()
        query = read_question(question, earlier, index.tokenizer)
        timings["tokenize"] = perf_counter() - started

        started = perf_counter()
        candidates = index.search(query.tokens, max(_CANDIDATES, top_k))
        timings["keyword"] = perf_counter() - started

        started = perf_counter()
        ranked = rerank(query.terms, candidates, index, query.types)[:top_k]
        if "rerank_degraded" in modes:
            random.Random(question).shuffle(ranked)  # same noise for the same question
        timings["rerank"] = perf_counter() - started

        started = perf_counter()
        answer = answerer.answer(
            question, query.terms, ranked, misread="answer_degraded" in modes, types=query.types
        )
        citations = answer.citations
        if "citations_degraded" in modes:
            citations = tuple(c - 1 for c in citations)
        if "slow_model" in modes:
            await asyncio.sleep(self.slow_model_seconds)
        timings["model"] = perf_counter() - started

        retrieved = tuple(
            (index.chunks[c.index].id, c.score, index.chunks[c.index].text) for c in ranked
        )
        return RagResult(answer.text, retrieved, citations, timings)

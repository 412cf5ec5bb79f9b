"""Helpers shared by the HTTP target tests: datasets, free ports, scripted reply sequences."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from evaluator.config import HttpTargetConfig
from evaluator.errors import TargetError
from evaluator.factory import build_target
from evaluator.models import Case, Dataset, TargetResponse
from evaluator.report import RunReport
from evaluator.retry import RetryPolicy
from evaluator.run.runner import RetryEvent, RunOptions, run_dataset
from tests.support.loopback import Reply

FAST_RETRY = RetryPolicy(retries=2, backoff_initial=0.01, backoff_max=2.0)

#: a correct default-contract body for a case about refunds
GOOD_BODY: dict[str, Any] = {
    "answer": "Refunds are accepted within 7 days. [1]",
    "retrieved": [{"id": "refund-policy", "score": 3.2, "text": "7 days"}, {"id": "faq"}],
    "citations": [1],
    "timings": {"retrieve": 0.01, "model": 0.2},
}


def case(question: str, case_id: str | None = None) -> Case:
    """An answerable case expecting ``refund-policy`` and the fact "7 days"."""
    return Case(
        id=case_id or question,
        question=question,
        relevance={"refund-policy": 1},
        expected_facts=(("7 days",),),
    )


def dataset(questions: Iterable[str], name: str = "failures") -> Dataset:
    """A dataset of one case a question."""
    cases = tuple(case(q) for q in questions)
    return Dataset(path=f"{name}.jsonl", name=name, cases=cases, content_hash="0" * 64)


class Sequenced:
    """A loopback script answering each question with its replies in turn (the last repeats)."""

    def __init__(self, replies: Mapping[str, Sequence[Reply]], question_key: str = "question"):
        self.replies = {q: list(r) for q, r in replies.items()}
        self.question_key = question_key
        self.calls: dict[str, int] = {}

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The next scripted reply to the request's question (the last one repeats; a good body
        when none is scripted)."""
        question = str(request.get(self.question_key, ""))
        n = self.calls.get(question, 0)
        self.calls[question] = n + 1
        replies = self.replies.get(question) or [Reply(body=GOOD_BODY)]
        return replies[min(n, len(replies) - 1)]


def run_config(
    config: HttpTargetConfig,
    data: Dataset,
    *,
    concurrency: int = 4,
    retry: RetryPolicy = FAST_RETRY,
    environ: Mapping[str, str] | None = None,
) -> tuple[RunReport, list[RetryEvent]]:
    """Build the target, run the whole dataset through the runner, close the target."""
    events: list[RetryEvent] = []

    async def go() -> RunReport:
        target = build_target(config, environ=environ)
        try:
            return await run_dataset(
                data,
                target,
                RunOptions(k=3, concurrency=concurrency, retry=retry),
                on_retry=events.append,
            )
        finally:
            await target.aclose()

    return asyncio.run(go()), events


def query_once(config: HttpTargetConfig, **env: str) -> TargetResponse:
    """One query of a target built from ``config`` (``env``: its environment), then closed."""

    async def go() -> TargetResponse:
        target = build_target(config, environ=env)
        try:
            return await target.query(case("How long?"), 4)
        finally:
            await target.aclose()

    return asyncio.run(go())


def query_error(config: HttpTargetConfig) -> TargetError:
    """The error one query of ``config`` raises (the test fails when it raises none)."""
    with pytest.raises(TargetError) as info:
        query_once(config)
    return info.value

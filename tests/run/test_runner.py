"""run_dataset: bounded concurrency, golden-set order, failures recorded, retries counted."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import types
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from evaluator.bounds import MAX_SCORED_ANSWER_CHARS, OFF_LOOP_ANSWER_CHARS
from evaluator.errors import TargetConnectError, TargetHTTPStatusError
from evaluator.models import Case, CaseRecord, Dataset
from evaluator.report import RunReport, format_timestamp
from evaluator.retry import RetryPolicy
from evaluator.run import runner
from evaluator.run.runner import (
    TEXT_KEEP_CHARS,
    RetryEvent,
    RunOptions,
    config_hash_for,
    run_dataset,
)
from evaluator.targets.callable import CallableTarget

MODULE = "evaluator_test_runner_rag"
FAST_RETRY = RetryPolicy(retries=2, backoff_initial=0.01, backoff_max=0.02)

AsyncAnswer = Callable[[Case, int], Awaitable[Any]]


def _dataset(count: int = 6) -> Dataset:
    cases = tuple(
        Case(
            id=f"case-{i:02d}",
            question=f"问题 {i}？",
            relevance={f"doc-{i}": 1},
            expected_facts=((f"fact {i}",),),
            tags=("even",) if i % 2 == 0 else (),
        )
        for i in range(count)
    )
    return Dataset(path="evals/golden.jsonl", name="golden", cases=cases, content_hash="d" * 64)


def _good_body(case: Case) -> dict[str, Any]:
    index = case.id.removeprefix("case-").lstrip("0") or "0"
    return {
        "answer": f"fact {int(index)} [1]",
        "retrieved": [{"id": f"doc-{int(index)}"}, {"id": "noise"}],
        "citations": [1],
        "timings": {"model": 0.01},
    }


@pytest.fixture
def make_target(monkeypatch: pytest.MonkeyPatch) -> Callable[[AsyncAnswer], CallableTarget]:
    """Wrap an async function as a CallableTarget, through a throwaway module."""
    module = types.ModuleType(MODULE)
    monkeypatch.setitem(sys.modules, MODULE, module)

    def make(function: AsyncAnswer) -> CallableTarget:
        module.answer = function  # type: ignore[attr-defined]
        return CallableTarget(f"{MODULE}:answer", name="fake-rag", timeout=5)

    return make


def _run(
    dataset: Dataset,
    target: CallableTarget,
    options: RunOptions | None = None,
    **kwargs: Any,
) -> RunReport:
    return asyncio.run(
        run_dataset(dataset, target, options or RunOptions(k=3, retry=FAST_RETRY), **kwargs)
    )


class TestConcurrency:
    """A fixed pool of workers keeps at most ``concurrency`` calls in flight."""

    @pytest.mark.parametrize("concurrency", [1, 3, 8])
    def test_never_more_than_concurrency(
        self, make_target: Callable[[AsyncAnswer], CallableTarget], concurrency: int
    ) -> None:
        """The in-flight count peaks at exactly the limit (or the case count), never above."""
        in_flight = 0
        peak = 0

        async def answer(case: Case, k: int) -> dict[str, Any]:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.005)
            in_flight -= 1
            return _good_body(case)

        report = _run(
            _dataset(12),
            make_target(answer),
            RunOptions(k=3, concurrency=concurrency, retry=FAST_RETRY),
        )
        assert (min(concurrency, 12), 0, 12) == (peak, in_flight, report.case_count)

    def test_concurrency_below_one_rejected(
        self, make_target: Callable[[AsyncAnswer], CallableTarget]
    ) -> None:
        """concurrency=0 is a programming error, not a silent hang."""

        async def answer(case: Case, k: int) -> dict[str, Any]:
            return _good_body(case)

        with pytest.raises(ValueError, match="concurrency"):
            _run(_dataset(1), make_target(answer), RunOptions(concurrency=0))


class TestOrder:
    """Report cases follow the golden set whatever order the calls finish in."""

    def test_golden_set_order(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """Later cases finish first; on_case sees completion order, the report golden order."""
        dataset = _dataset(6)
        # each case waits for the one after it to finish: the order holds on a busy machine,
        # where staggered sleeps of a few milliseconds did not
        done: dict[int, asyncio.Event] = {}

        async def answer(case: Case, k: int) -> dict[str, Any]:
            i = dataset.cases.index(case)
            for j in (i, i + 1):
                done.setdefault(j, asyncio.Event())
            if i + 1 < len(dataset.cases):
                await done[i + 1].wait()
            await asyncio.sleep(0)
            done[i].set()
            return _good_body(case)

        finished: list[str] = []
        report = _run(
            dataset,
            make_target(answer),
            RunOptions(k=3, concurrency=6, retry=FAST_RETRY),
            on_case=lambda record: finished.append(record.id),
        )
        golden = [c.id for c in dataset.cases]
        assert golden == [c.id for c in report.cases]
        assert list(reversed(golden)) == finished

    def test_subset_of_cases(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """``cases=`` runs only those cases, in the order given."""
        dataset = _dataset(5)

        async def answer(case: Case, k: int) -> dict[str, Any]:
            return _good_body(case)

        shard = (dataset.cases[3], dataset.cases[1])
        report = _run(dataset, make_target(answer), cases=shard)
        assert ["case-03", "case-01"] == [c.id for c in report.cases]


class TestFailures:
    """A failing case is recorded with its kind and the run goes on."""

    def test_raising_callable(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """One raising case ends in target_exception, unscored; the others are scored."""

        async def answer(case: Case, k: int) -> dict[str, Any]:
            if case.id == "case-02":
                raise RuntimeError("index corrupt")
            return _good_body(case)

        report = _run(_dataset(4), make_target(answer))
        failed = report.cases[2]
        assert failed.error is not None
        assert ("target_exception", "fake-rag raised RuntimeError: index corrupt") == (
            failed.error.kind,
            failed.error.message,
        )
        assert (None, 1, (), None) == (
            failed.scores,
            failed.attempts,
            failed.ranked_ids,
            failed.answer,
        )
        assert [True, True, False, True] == [c.scores is not None for c in report.cases]
        assert (1, 0.25, 1.0) == (
            report.error_count,
            report.summary.error_rate,
            report.summary.get("answer_accuracy"),
        )

    def test_http_status_kept(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """A permanent status error keeps its status code and is not retried."""

        async def answer(case: Case, k: int) -> dict[str, Any]:
            raise TargetHTTPStatusError("HTTP 500", status=500)

        record = _run(_dataset(1), make_target(answer)).cases[0]
        assert record.error is not None
        assert ("http_status", 500, 1) == (record.error.kind, record.error.status, record.attempts)

    def test_retries_exhausted(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """A target that never answers ends in its last error after every attempt."""
        calls = 0

        async def answer(case: Case, k: int) -> dict[str, Any]:
            nonlocal calls
            calls += 1
            raise TargetConnectError("connection refused")

        retries: list[RetryEvent] = []
        record = _run(_dataset(1), make_target(answer), on_retry=retries.append).cases[0]
        assert record.error is not None
        assert ("connect", 3, 3) == (record.error.kind, record.attempts, calls)
        assert [1, 2] == [event.attempt for event in retries]


class TestRetries:
    """A transient failure is retried; the case is scored with every attempt counted."""

    def test_transient_error_retried(
        self, make_target: Callable[[AsyncAnswer], CallableTarget]
    ) -> None:
        """First call fails to connect: two attempts, latency covering both, on_retry called."""
        attempts: dict[str, int] = {}

        async def answer(case: Case, k: int) -> dict[str, Any]:
            attempts[case.id] = attempts.get(case.id, 0) + 1
            await asyncio.sleep(0.03)
            if attempts[case.id] == 1:
                raise TargetConnectError("connection reset")
            return _good_body(case)

        retries: list[RetryEvent] = []
        started = time.perf_counter()
        report = _run(_dataset(1), make_target(answer), on_retry=retries.append)
        elapsed = time.perf_counter() - started
        record = report.cases[0]
        assert (True, 2, None) == (record.scores is not None, record.attempts, record.error)
        assert 0.06 <= record.latency_seconds <= elapsed
        assert 1 == len(retries)
        event = retries[0]
        assert ("case-00", 1, "connect", "connection reset") == (
            event.case_id,
            event.attempt,
            event.kind,
            event.message,
        )
        assert 0.0 <= event.sleep_seconds <= 0.02


class TestReport:
    """The report carries the run's identity and scores computed with the run's K."""

    def test_identity_fields(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """Target and dataset names, K, hashes, run id and a UTC timestamp."""
        seen_k: set[int] = set()

        async def answer(case: Case, k: int) -> dict[str, Any]:
            seen_k.add(k)
            return _good_body(case)

        dataset = _dataset(2)
        target = make_target(answer)
        options = RunOptions(k=4, retry=FAST_RETRY)
        records: list[CaseRecord] = []
        report = _run(dataset, target, options, run_id="run-42", on_case=records.append)
        assert ("fake-rag", "golden", 4, "d" * 64, "run-42", {4}) == (
            report.target,
            report.dataset,
            report.k,
            report.dataset_hash,
            report.run_id,
            seen_k,
        )
        assert config_hash_for(dataset, target, options) == report.config_hash
        assert report.generated_at.utcoffset() == timedelta(0)
        assert format_timestamp(report.generated_at).endswith("Z")
        assert sorted(report.cases, key=lambda c: c.id) == sorted(records, key=lambda c: c.id)
        assert (1.0, 1.0, False) == (
            report.summary.get("recall_at_k"),
            report.summary.get("answer_accuracy"),
            report.retrieval_only,
        )
        assert {"model": 0.01} == report.summary.stage_p95_seconds
        assert ["even"] == list(report.summary.by_tag)

    def test_retrieval_only(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """A target that never answers in text makes a retrieval-only report."""

        async def answer(case: Case, k: int) -> dict[str, Any]:
            return {"retrieved": ["doc-0"]}

        report = _run(_dataset(2), make_target(answer))
        assert (True, None) == (report.retrieval_only, report.summary.get("answer_accuracy"))

    def test_no_case(self, make_target: Callable[[AsyncAnswer], CallableTarget]) -> None:
        """An empty selection gives an empty report with null metrics."""

        async def answer(case: Case, k: int) -> dict[str, Any]:
            raise AssertionError("not called")

        report = _run(_dataset(2), make_target(answer), cases=())
        assert (0, None, None) == (
            report.case_count,
            report.summary.error_rate,
            report.summary.get("recall_at_k"),
        )


class TestKeptTexts:
    """Reports keep the evidence text of the top K and of relevant ids, each cut to size."""

    def test_top_k_and_relevant_texts_kept_and_long_ones_cut(
        self, make_target: Callable[[AsyncAnswer], CallableTarget]
    ) -> None:
        """The texts of the top K and the relevant documents are kept once each, a long one
        cut."""
        long_text = "x" * (TEXT_KEEP_CHARS + 10)

        async def answer(case: Case, k: int) -> dict[str, Any]:
            relevant = next(iter(case.relevance))
            return {
                "answer": "fact",
                "retrieved": [
                    {"id": "a", "text": "first"},
                    {"id": "a", "text": "duplicate, not kept"},
                    {"id": "b", "text": long_text},
                    {"id": "c"},  # no text
                    {"id": "d", "text": "past K, not relevant"},
                    {"id": relevant, "text": "relevant, past K"},
                ],
                "citations": [1],
            }

        report = _run(_dataset(1), make_target(answer))
        record = report.cases[0]

        assert {"a": "first", "b": "x" * TEXT_KEEP_CHARS, "doc-0": "relevant, past K"} == dict(
            record.texts
        )
        assert frozenset({"b"}) == record.cut_texts


class TestLongAnswers:
    """An answer is scored up to MAX_SCORED_ANSWER_CHARS, and a long one off the event loop
    (issue 24.2: 1.3 M U+FDFA normalised on the loop stalled /healthz for 10 s)."""

    @staticmethod
    def _threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """The thread each case is scored in, recorded by a wrapper of score_case."""
        seen: list[str] = []
        real = runner.score_case  # type: ignore[attr-defined]

        def recording(*args: Any, **kwargs: Any) -> Any:
            seen.append(threading.current_thread().name)
            return real(*args, **kwargs)

        monkeypatch.setattr(runner, "score_case", recording)
        return seen

    @pytest.mark.parametrize(
        ("chars", "off_loop"), [(100, False), (OFF_LOOP_ANSWER_CHARS + 1, True)]
    )
    def test_long_answers_are_scored_in_a_worker_thread(
        self,
        make_target: Callable[[AsyncAnswer], CallableTarget],
        monkeypatch: pytest.MonkeyPatch,
        chars: int,
        off_loop: bool,
    ) -> None:
        """Long answers are scored in the scoring thread, short ones on the event loop."""
        seen = self._threads(monkeypatch)

        async def answer(case: Case, k: int) -> dict[str, Any]:
            return {**_good_body(case), "answer": "fact 0 " + "\ufdfa" * chars}

        report = _run(_dataset(2), make_target(answer))
        # asyncio.run runs its loop in this thread; long answers go to the one scoring thread
        expected = "evaluator-scoring" if off_loop else threading.current_thread().name
        assert 2 == len(seen)
        assert all(name.startswith(expected) for name in seen), seen
        assert report.cases[0].scores is not None and report.cases[0].scores.answer_correct

    def test_a_fact_past_the_scored_length_is_not_found(
        self, make_target: Callable[[AsyncAnswer], CallableTarget]
    ) -> None:
        """The answer is scored up to the cap (facts past it are not looked for) and stored
        cut as before, counting what the target really sent."""
        padding = "\ufdfa" * MAX_SCORED_ANSWER_CHARS

        async def answer(case: Case, k: int) -> dict[str, Any]:
            fact = _good_body(case)["answer"]
            text = f"{fact} {padding}" if case.id == "case-00" else f"{padding} {fact}"
            return {**_good_body(case), "answer": text}

        report = _run(_dataset(2), make_target(answer))
        first, second = (c.scores for c in report.cases)
        assert first is not None and first.answer_correct
        assert second is not None and not second.answer_correct
        stored = report.cases[1].answer
        assert stored is not None
        more = MAX_SCORED_ANSWER_CHARS + len(" fact 1 [1]") - 10_000
        assert stored.endswith(f"({more} more chars)")

"""The default response parser and in-process callable targets (sync, async, failing, slow)."""

from __future__ import annotations

import asyncio
import math
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

import pytest

from evaluator.errors import (
    BadResponseError,
    ConfigError,
    TargetConnectError,
    TargetError,
    TargetExceptionError,
    TargetTimeout,
)
from evaluator.models import Case, Retrieved, TargetResponse
from evaluator.targets.base import parse_default_response
from evaluator.targets.callable import CallableTarget, load_callable

CASE = Case(id="refund", question="退款申请有期限吗？", relevance={"refund-policy": 1})
MODULE = "evaluator_test_fake_rag"

Register = Callable[..., str]


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch) -> Register:
    """Put attributes on a throwaway module and return ``module:name`` specs for them."""
    module = types.ModuleType(MODULE)
    monkeypatch.setitem(sys.modules, MODULE, module)

    def add(obj: object, name: str = "answer") -> str:
        setattr(module, name, obj)
        return f"{MODULE}:{name}"

    return add


def _query(target: CallableTarget, case: Case = CASE, k: int = 3) -> TargetResponse:
    return asyncio.run(target.query(case, k))


class TestParseDefaultResponse:
    """A body in the default contract maps onto TargetResponse."""

    def test_full_body(self) -> None:
        """Every documented field is read; int ids become strings, float positions ints."""
        body = {
            "answer": "七天内可以申请。[1]",
            "retrieved": [
                {"id": "refund-policy", "score": 12.1, "text": "七天"},
                {"id": 42, "score": "high"},
                "faq",
            ],
            "citations": [1, "faq", 2.0],
            "timings": {"embedding": 0.011, "model": 1},
        }
        expected = TargetResponse(
            retrieved=(
                Retrieved("refund-policy", 12.1, "七天"),
                Retrieved("42"),
                Retrieved("faq"),
            ),
            answer="七天内可以申请。[1]",
            citations=(1, "faq", 2),
            timings={"embedding": 0.011, "model": 1.0},
        )
        assert expected == parse_default_response(body)

    def test_retrieval_only(self) -> None:
        """An empty object (or nulls) is a retrieval-only response with nothing retrieved."""
        expected = TargetResponse()
        assert expected == parse_default_response({})
        assert expected == parse_default_response(
            {"answer": None, "retrieved": None, "citations": None, "timings": None}
        )

    def test_max_ranked_ids_reads_only_the_first_items(self) -> None:
        """Items past ``max_ranked_ids`` are neither built nor checked: the runner keeps no more,
        and a legal 350,000-item ranking must not cost a second of interpreter time."""
        body = {"retrieved": ["a", {"id": "b", "score": 2}, 42, {"no": "id"}]}
        response = parse_default_response(body, max_ranked_ids=2)
        assert (Retrieved("a"), Retrieved("b", 2.0)) == response.retrieved
        with pytest.raises(BadResponseError, match=r"retrieved\[2\]"):
            parse_default_response(body, max_ranked_ids=3)

    def test_huge_score_is_dropped(self) -> None:
        """An integer score beyond float range is not kept, and does not crash the parser."""
        response = parse_default_response({"retrieved": [{"id": "a", "score": 10**400}]})
        assert (Retrieved("a"),) == response.retrieved
        assert ("scores",) == response.out_of_range

    @pytest.mark.parametrize("seconds", [-0.1, math.nan, math.inf, 10**400, 86_401])
    def test_stage_out_of_range_is_dropped(self, seconds: float) -> None:
        """A stage out of range (negative, not finite, over a day) is dropped and named."""
        response = parse_default_response({"timings": {"model": seconds, "retrieve": 0.5}})
        assert ({"retrieve": 0.5}, ("timings",)) == (dict(response.timings), response.out_of_range)

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ([], "response is a list, expected a JSON object"),
            ("text", "response is a string"),
            ({"answer": 42}, "field 'answer' is a number"),
            ({"answer": ["a"]}, "field 'answer' is a list"),
            ({"retrieved": {"id": "a"}}, "field 'retrieved' is an object"),
            ({"retrieved": [42]}, "field 'retrieved[0]' is a number"),
            ({"retrieved": ["a", {"score": 1}]}, "field 'retrieved[1].id'"),
            ({"retrieved": [{"id": True}]}, "field 'retrieved[0].id'"),
            ({"retrieved": [{"id": 1.5}]}, "field 'retrieved[0].id'"),
            ({"citations": "1"}, "field 'citations' is a string"),
            ({"citations": [1, 1.5]}, "field 'citations[1]' is a number"),
            ({"citations": [True]}, "field 'citations[0]' is a boolean"),
            ({"citations": [None]}, "field 'citations[0]' is null"),
            ({"citations": [math.nan]}, "field 'citations[0]'"),
            ({"timings": [0.1]}, "field 'timings' is a list"),
            ({"timings": {"model": "fast"}}, "field 'timings.model'"),
            ({"timings": {"model": True}}, "field 'timings.model'"),
        ],
    )
    def test_wrong_types_name_the_field(self, body: object, message: str) -> None:
        """A missing or mistyped field raises BadResponseError naming it."""
        with pytest.raises(BadResponseError) as info:
            parse_default_response(body)
        assert message in str(info.value)
        assert "bad_response" == info.value.kind


def _sync_answer(case: Case, k: int) -> dict[str, Any]:
    return {
        "answer": f"{case.id}:{k}:{threading.current_thread() is threading.main_thread()}",
        "retrieved": [{"id": "refund-policy"}],
        "citations": [1],
    }


async def _async_answer(case: Case, k: int) -> TargetResponse:
    await asyncio.sleep(0)
    return TargetResponse(retrieved=(Retrieved("refund-policy"),), answer=f"{case.question} {k}")


class _AsyncCallable:
    async def __call__(self, case: Case, k: int) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"answer": "awaited", "retrieved": ["a"]}


class _Service:
    def answer(self, case: Case, k: int) -> dict[str, Any]:
        return {"answer": "method", "retrieved": ["m"]}


class TestCallableTarget:
    """Sync and async callables answer in-process; sync ones run off the event loop."""

    def test_sync_function(self, register: Register) -> None:
        """A sync function gets (case, k), runs in a worker thread, and its dict is parsed."""
        target = CallableTarget(register(_sync_answer))
        response = _query(target, k=7)
        assert ("refund:7:False", ("refund-policy",), (1,)) == (
            response.answer,
            response.ranked_ids,
            response.citations,
        )

    def test_async_function(self, register: Register) -> None:
        """An async function is awaited and its TargetResponse returned as is."""
        target = CallableTarget(register(_async_answer))
        expected = TargetResponse(
            retrieved=(Retrieved("refund-policy"),), answer="退款申请有期限吗？ 3"
        )
        assert expected == _query(target)

    def test_async_callable_object(self, register: Register) -> None:
        """An object with ``async def __call__`` is awaited too, not parsed as a coroutine."""
        target = CallableTarget(register(_AsyncCallable()))
        assert "awaited" == _query(target).answer

    def test_class_method_spec(self, register: Register) -> None:
        """``module:Object.method`` resolves attribute by attribute."""
        register(_Service(), "service")
        target = CallableTarget(f"{MODULE}:service.answer")
        assert ("method", "service.answer") == (_query(target).answer, target.name)

    def test_name_and_identity(self, register: Register) -> None:
        """The label defaults to the function part; identity is the spec, never the code."""
        spec = register(_sync_answer)
        default, named = CallableTarget(spec), CallableTarget(spec, name="in-process")
        assert ("answer", "in-process") == (default.name, named.name)
        assert {"kind": "callable", "spec": spec} == default.identity()
        assert asyncio.run(default.aclose()) is None


class TestCallableFailures:
    """Whatever the callable does wrong ends in a TargetError with the right kind."""

    def test_exception_is_target_exception(self, register: Register) -> None:
        """A raising callable gives kind target_exception, naming the exception."""

        def broken(case: Case, k: int) -> None:
            raise ValueError("index not loaded")

        with pytest.raises(TargetExceptionError) as info:
            _query(CallableTarget(register(broken)))
        assert "target_exception" == info.value.kind
        assert "answer raised ValueError: index not loaded" == info.value.message
        assert isinstance(info.value.__cause__, ValueError)

    def test_async_exception(self, register: Register) -> None:
        """An async callable's exception is wrapped the same way."""

        async def broken(case: Case, k: int) -> None:
            raise RuntimeError("vector store down")

        with pytest.raises(TargetExceptionError, match="RuntimeError: vector store down"):
            _query(CallableTarget(register(broken)))

    def test_target_errors_pass_through(self, register: Register) -> None:
        """A TargetError raised on purpose keeps its kind (so transient ones can be retried)."""

        async def unreachable(case: Case, k: int) -> None:
            raise TargetConnectError("upstream refused")

        with pytest.raises(TargetConnectError) as info:
            _query(CallableTarget(register(unreachable)))
        assert ("connect", True) == (info.value.kind, info.value.transient)

    def test_bad_return_value(self, register: Register) -> None:
        """A return value outside the contract is a bad_response naming the field."""
        target = CallableTarget(register(lambda case, k: {"answer": 1}))
        with pytest.raises(BadResponseError, match="field 'answer'"):
            _query(target)

    def test_async_timeout(self, register: Register) -> None:
        """An async callable past its deadline is a timeout."""

        async def slow(case: Case, k: int) -> None:
            await asyncio.sleep(0.2)

        with pytest.raises(TargetTimeout) as info:
            _query(CallableTarget(register(slow), timeout=0.02))
        assert ("timeout", "answer did not return within 0.02s") == (
            info.value.kind,
            info.value.message,
        )

    def test_sync_timeout(self, register: Register) -> None:
        """A blocking sync callable past its deadline is a timeout; the loop is not blocked."""

        def slow(case: Case, k: int) -> None:
            time.sleep(0.15)

        started = time.perf_counter()

        async def query() -> float:
            with pytest.raises(TargetTimeout):
                await CallableTarget(register(slow), timeout=0.02).query(CASE, 3)
            return time.perf_counter() - started

        assert asyncio.run(query()) < 0.12

    def test_own_timeout_error_is_exception(self, register: Register) -> None:
        """A TimeoutError the callable raises itself, well within the deadline, is its failure."""

        async def gives_up(case: Case, k: int) -> None:
            raise TimeoutError("database timed out")

        with pytest.raises(TargetExceptionError, match="TimeoutError: database timed out"):
            _query(CallableTarget(register(gives_up), timeout=30))

    def test_all_kinds_are_target_errors(self) -> None:
        """The kinds raised here all derive from TargetError."""
        for cls in (TargetExceptionError, TargetTimeout, BadResponseError):
            assert issubclass(cls, TargetError)


class TestLoadCallable:
    """load_callable turns ``module:function`` into a callable or a ConfigError."""

    def test_loads(self, register: Register) -> None:
        """A registered function is returned as is."""
        assert _sync_answer is load_callable(register(_sync_answer))

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ("no_colon", "expected 'module:function'"),
            (":answer", "expected 'module:function'"),
            (f"{MODULE}:", "expected 'module:function'"),
            ("evaluator_no_such_module_xyz:f", "cannot import module"),
            (f"{MODULE}:missing", "has no attribute 'missing'"),
            (f"{MODULE}:not_callable", "'not_callable' is not callable"),
        ],
    )
    def test_errors(self, register: Register, spec: str, message: str) -> None:
        """Each bad spec is a ConfigError naming the spec and the problem."""
        register(42, "not_callable")
        with pytest.raises(ConfigError) as info:
            load_callable(spec)
        assert message in str(info.value)
        assert f"target {spec!r}" in str(info.value)

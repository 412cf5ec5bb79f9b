"""Response mapping with JMESPath: shapes, strict types naming the expression, diagnosis."""

from __future__ import annotations

import math
from typing import Any

import jmespath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.commands.run import mapping_diagnosis
from evaluator.errors import BadResponseError
from evaluator.models import CaseError, CaseRecord, CaseScores, Retrieved, TargetResponse
from evaluator.report import RunReport
from evaluator.targets.base import parse_default_response
from evaluator.targets.mapping import ResponseMapper, truthy
from tests.support.records import record, replace, report


def mapper(**expressions: str) -> ResponseMapper:
    """A response mapper of the given field expressions."""
    return ResponseMapper({k: jmespath.compile(v) for k, v in expressions.items()})


DEFAULT_EQUIVALENT = mapper(
    ids="retrieved[].id",
    answer="answer",
    citations="citations",
    timings="timings",
    texts="retrieved[].text",
    scores="retrieved[].score",
)

CHAT = {
    "output": {
        "message": {"role": "assistant", "content": "七天内可以申请。"},
        "citations": [{"source": 1}, {"source": 2}],
    },
    "context": {
        "sources": [
            {"doc_id": "refund-policy", "relevance": 0.9, "snippet": "七天"},
            {"doc_id": 42, "relevance": 0.5},
        ]
    },
    "debug": {"timings": {"retrieve": 0.01, "generate": 1}},
}


class TestShapes:
    """Each supported shape maps onto the same TargetResponse fields."""

    def test_default_contract_equivalent(self) -> None:
        """Spelled out as expressions, the default contract maps as the built-in parser does."""
        body = {
            "answer": "a",
            "retrieved": [{"id": "x", "score": 1.5, "text": "t"}, {"id": "y"}],
            "citations": [1, "y"],
            "timings": {"model": 0.5},
        }
        assert parse_default_response(body) == DEFAULT_EQUIVALENT(body)

    def test_top_level_list(self) -> None:
        """A bare list of hits is retrieval-only: answer None, scores and texts aligned."""
        search = mapper(ids="[].id", scores="[].score", texts="[].text")
        response = search([{"id": "a", "score": 2, "text": "t"}, {"id": "b", "score": None}])
        assert TargetResponse(retrieved=(Retrieved("a", 2.0, "t"), Retrieved("b"))) == response
        assert search.retrieval_only

    def test_nested_chat_shape(self) -> None:
        """Answer, citations, sources and timings deep in nested objects."""
        chat = mapper(
            ids="context.sources[].doc_id",
            answer="output.message.content",
            citations="output.citations[].source",
            timings="debug.timings",
            scores="context.sources[].relevance",
            texts="context.sources[].snippet",
        )
        expected = TargetResponse(
            retrieved=(Retrieved("refund-policy", 0.9, "七天"), Retrieved("42", 0.5, None)),
            answer="七天内可以申请。",
            citations=(1, 2),
            timings={"retrieve": 0.01, "generate": 1.0},
        )
        assert expected == chat(CHAT)
        assert not chat.retrieval_only

    def test_empty_hit_list_is_an_empty_ranking(self) -> None:
        """Zero hits is a valid answer, not a mapping failure."""
        assert () == mapper(ids="hits[].id")({"hits": []}).retrieved

    def test_missing_list_accepted_with_default(self) -> None:
        """`expr || `[]`` turns a missing list into an empty one."""
        m = mapper(ids="hits[].id || `[]`", answer="answer")
        assert TargetResponse(answer="none") == m({"answer": "none"})

    def test_identity_lists_expressions(self) -> None:
        """The config hash sees each field's expression, in field order."""
        assert {"ids": "[].id", "texts": "[].text"} == mapper(
            texts="[].text", ids="[].id"
        ).identity()


def _error(m: ResponseMapper, body: object) -> str:
    with pytest.raises(BadResponseError) as info:
        m(body)
    assert "bad_response" == info.value.kind
    return str(info.value)


class TestStrictTypes:
    """A field missing or of the wrong type is a bad_response naming its expression."""

    @pytest.mark.parametrize(
        ("expressions", "body", "message"),
        [
            (
                {"ids": "results[].id"},
                {"hits": [{"id": "a"}]},
                'response.ids expression "results[].id" matched nothing (null)',
            ),
            (
                {"ids": "hits[].docid"},
                {"hits": [{"id": "a"}]},
                'response.ids expression "hits[].docid" matched nothing for hit 0',
            ),
            (
                {"ids": "hits"},
                {"hits": [{"id": "a"}]},
                'response.ids expression "hits" gave an object for hit 0, expected a string',
            ),
            ({"ids": "hits"}, {"hits": "a"}, 'response.ids expression "hits" gave a string'),
            ({"ids": "[].id"}, [{"id": True}], "gave a boolean for hit 0"),
            ({"ids": "[].id"}, [{"id": 1.5}], "gave a number for hit 0"),
            (
                {"ids": "[].id", "answer": "answer"},
                [{"id": "a"}],
                'response.answer expression "answer" matched nothing (null)',
            ),
            (
                {"ids": "ids", "answer": "answer"},
                {"ids": [], "answer": ["x"]},
                'response.answer expression "answer" gave a list, expected a string',
            ),
            (
                {"ids": "ids", "citations": "cites"},
                {"ids": [], "cites": "1"},
                'response.citations expression "cites" gave a string, expected a list',
            ),
            (
                {"ids": "ids", "citations": "cites"},
                {"ids": [], "cites": [1, None]},
                "gave null for citation 1",
            ),
            (
                {"ids": "ids", "citations": "cites"},
                {"ids": [], "cites": [1.5]},
                "gave 1.5 for citation 0",
            ),
            (
                {"ids": "ids", "timings": "t"},
                {"ids": [], "t": [0.1]},
                'response.timings expression "t" gave a list, expected an object',
            ),
            (
                {"ids": "ids", "timings": "t"},
                {"ids": [], "t": {"model": "fast"}},
                "gave a string for stage 'model'",
            ),
            (
                {"ids": "[].id", "texts": "[].text"},
                [{"id": "a", "text": 3}],
                'response.texts expression "[].text" gave a number for hit 0',
            ),
            (
                {"ids": "[].id", "scores": "[].score"},
                [{"id": "a", "score": "high"}],
                'response.scores expression "[].score" gave a string for hit 0',
            ),
            (
                {"ids": "[].id", "texts": "texts"},
                [{"id": "a"}],
                'response.texts expression "texts" matched nothing',
            ),
        ],
    )
    def test_names_the_expression(
        self, expressions: dict[str, str], body: Any, message: str
    ) -> None:
        """The message says which field and which expression, and what was wrong."""
        assert message in _error(mapper(**expressions), body)

    def test_misaligned_texts(self) -> None:
        """Texts that do not line up with ids are an error, not a silent shift."""
        m = mapper(ids="[].id", texts="[?text].text")
        message = _error(m, [{"id": "a"}, {"id": "b", "text": "t"}])
        assert "gave 1 value(s) for 2 id(s)" in message

    def test_max_ranked_ids_reads_only_the_first_hits(self) -> None:
        """Hits past ``max_ranked_ids`` are not checked; misaligned lists are still caught."""
        expressions = {"ids": "[].id", "texts": "[].text"}
        m = ResponseMapper({k: jmespath.compile(v) for k, v in expressions.items()}).limited(2)
        body: list[dict[str, Any]] = [{"id": "a", "text": "t"}, {"id": "b"}, {"id": 1.5}]
        response = m(body)
        assert (Retrieved("a", text="t"), Retrieved("b")) == response.retrieved
        assert 2 == m.without("answer").max_ranked_ids
        misaligned = ResponseMapper(
            {"ids": jmespath.compile("[].id"), "texts": jmespath.compile("[?text].text")}
        ).limited(1)
        assert "gave 1 value(s) for 3 id(s)" in _error(misaligned, body)

    @pytest.mark.parametrize("score", [math.inf, -math.inf, 10**400, 1e300])
    def test_score_out_of_range_is_dropped(self, score: float) -> None:
        """An infinite score, or one beyond float or the border's range, is dropped and named."""
        response = mapper(ids="[].id", scores="[].s")(
            [{"id": "a", "s": score}, {"id": "b", "s": 2}]
        )
        assert ((None, 2.0), ("scores",)) == (
            tuple(r.score for r in response.retrieved),
            response.out_of_range,
        )

    @pytest.mark.parametrize("seconds", [-1, math.inf, 86_401])
    def test_stage_out_of_range_is_dropped(self, seconds: float) -> None:
        """A stage out of range is dropped and named; the other stages are kept."""
        response = mapper(ids="ids", timings="t")({"ids": [], "t": {"model": seconds, "db": 1}})
        assert ({"db": 1.0}, ("timings",)) == (dict(response.timings), response.out_of_range)

    def test_function_type_error(self) -> None:
        """A JMESPath function failing on the data is a bad_response naming the expression."""
        m = mapper(ids="sort_by(hits, &score)[].id")
        message = _error(m, {"hits": [{"id": "a", "score": 1}, {"id": "b", "score": "x"}]})
        assert message.startswith('response.ids expression "sort_by(hits, &score)[].id" failed:')

    def test_unknown_field_rejected(self) -> None:
        """The mapper only knows the documented fields, and needs ids."""
        with pytest.raises(ValueError):
            ResponseMapper({"answer": jmespath.compile("a")})


class TestMappingFailure:
    """A mapping error carries its field and expression as attributes, quotes and all."""

    @pytest.mark.parametrize("expression", ["hits[].id", 'hits[?kind==`"doc"`].id', 'a."b c"'])
    def test_field_and_expression(self, expression: str) -> None:
        """A mapping that fails names its field and expression."""
        m = ResponseMapper({"ids": jmespath.compile(expression)})
        with pytest.raises(BadResponseError) as info:
            m({"hits": None})
        assert ("ids", expression) == (info.value.field, info.value.expression)

    def test_default_contract_names_the_field_without_expression(self) -> None:
        """The default contract's shape errors name the field; there is no expression."""
        with pytest.raises(BadResponseError) as info:
            parse_default_response({"answer": 3})
        assert ("answer", None) == (info.value.field, info.value.expression)
        with pytest.raises(BadResponseError) as info:
            parse_default_response([])
        assert ("response", None) == (info.value.field, info.value.expression)


def _record(case_id: str, error: CaseError | None) -> CaseRecord:
    return record(
        case_id,
        outcome=error if error is not None else CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0),
        question="q",
        relevance={"a": 1},
        facts=(),
        ranked=() if error is not None else ("a",),
        answer=None,
        citations=(),
        latency=0.01,
    )


def _report(*errors: CaseError | None) -> RunReport:
    cases = tuple(_record(f"c{i}", e) for i, e in enumerate(errors))
    return report(cases, k=3)


IDS = CaseError(
    kind="bad_response",
    message='response.ids expression "results[].id" matched nothing (null)',
    field="ids",
    expression="results[].id",
)
ANSWER = CaseError(
    kind="bad_response",
    message='response.answer expression "out.text" gave a list, expected',
    field="answer",
    expression="out.text",
)
TIMEOUT = CaseError(kind="timeout", message="slow")
JSON = CaseError(
    kind="bad_response", message="response is not valid JSON (x); it starts with '<html>'"
)
SHAPE = CaseError(
    kind="bad_response", message="response is a list, expected a JSON object", field="response"
)


class TestDiagnosis:
    """A mapping that failed on every answered case is reported as a configuration error."""

    def test_every_case_failed_the_mapping(self) -> None:
        """The message names the expression that failed most often."""
        message = mapping_diagnosis(_report(IDS, IDS, ANSWER, TIMEOUT))
        assert message is not None
        assert "all 3 case(s) that got a response" in message
        assert 'response.ids = "results[].id"' in message

    def test_a_case_scored_without_ids_does_not_vouch(self) -> None:
        """An unanswerable case's empty hit list "satisfied" a typo in ids: still reported."""
        report = _report(IDS, IDS, None)
        empty = replace(report.cases[2], ranked_ids=())
        report = replace(report, cases=(*report.cases[:2], empty))
        message = mapping_diagnosis(report)
        assert message is not None
        assert "all 2 case(s) that returned anything (1 returned no ids)" in message

    def test_default_contract_shape(self) -> None:
        """Every response off the default contract: suggests a mapping."""
        message = mapping_diagnosis(_report(SHAPE, SHAPE))
        assert message is not None
        assert "[targets.response]" in message

    @pytest.mark.parametrize(
        "errors",
        [
            (IDS, None),  # one case scored: the mapping works
            (TIMEOUT, TIMEOUT),  # no response at all: the target is down
            (IDS, JSON),  # not every failure is the mapping's
            (),
        ],
        ids=["one-scored", "all-down", "mixed", "empty"],
    )
    def test_no_diagnosis(self, errors: tuple[CaseError | None, ...]) -> None:
        """No diagnosis when the failures are not all mapping failures of responses."""
        assert mapping_diagnosis(_report(*errors)) is None


#: expressions of every shape the quick "key absent" test must judge soundly, one per field
_MATCHED = mapper(
    ids="sources[].id",
    answer="a.to_string(@)",
    citations="a.[b, c]",
    timings="a.b[0]",
    texts="a || `[]`",
    scores="a[?b].c",
    input_tokens="a.*.b | [0]",
    output_tokens="usage.prompt_tokens",
)
_KEYS = st.sampled_from(["a", "b", "c", "sources", "usage", "id", "prompt_tokens"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.text(max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


class TestMatching:
    """``matching`` names the fields a streamed event holds, skipping the evaluation of an
    expression whose first key the event lacks."""

    @given(body=_JSON)
    def test_same_as_evaluating_every_expression(self, body: Any) -> None:
        """The quick test never changes the answer: it equals evaluating each expression."""
        expected = []
        for name in _MATCHED.expressions:
            try:
                value = _MATCHED.search(name, body)
            except BadResponseError:
                continue
            if truthy(value):
                expected.append(name)
        assert expected == _MATCHED.matching(body)

    def test_empty_and_null_do_not_match(self) -> None:
        """Null, false and empty values are not a match; a value is."""
        m = mapper(ids="sources[].id || `[]`", input_tokens="usage.prompt_tokens")
        assert [] == m.matching({"usage": None, "choices": []})
        assert [] == m.matching({"sources": []})
        assert ["ids"] == m.matching({"sources": [{"id": "a"}]})
        assert ["input_tokens"] == m.matching({"usage": {"prompt_tokens": 0}})

    def test_found_bodies_win(self) -> None:
        """A field named in ``found`` is read from its own body, the rest from the one given."""
        m = mapper(ids="hits[].id", timings="took")
        response = m({"took": {"model": 1}}, {"ids": {"hits": [{"id": "a"}]}})
        assert (("a",), {"model": 1.0}) == (response.ranked_ids, dict(response.timings))

"""The judge's verdict parsing: bounded, and a bad verdict is an error, never a pass."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.judge.checks import Subject, check
from evaluator.judge.errors import JudgeMalformedError
from evaluator.judge.parse import MAX_DEPTH, extract_object, parse_completion


def _completion(content: object, **extra: object) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}], **extra}).encode()


def test_a_json_content_is_read_whole() -> None:
    """Content that is one JSON object is read whole."""
    assert extract_object('{"refusal": true, "reason": "x"}') == {"refusal": True, "reason": "x"}


def test_the_first_object_is_found_in_prose_and_code_fences() -> None:
    """The first balanced JSON object is found in prose or a code fence, braces inside strings
    respected."""
    text = 'Verdict:\n```json\n{"reason": "a } in a string", "refusal": false}\n```\n{"x": 1}'
    assert extract_object(text) == {"reason": "a } in a string", "refusal": False}


@pytest.mark.parametrize(
    "content",
    ["", "no json here", "{unclosed", "[1, 2]", "{" * 10_000, '{"a": ' + "[" * 50 + "]" * 50 + "}"],
)
def test_no_object_is_an_error(content: str) -> None:
    """Content holding no JSON object is judge_malformed."""
    with pytest.raises(JudgeMalformedError):
        extract_object(content)


def test_nesting_is_bounded() -> None:
    """An object nested up to the depth bound is read and a deeper one is refused."""
    shallow = '{"a": ' * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1)
    assert extract_object(shallow)
    with pytest.raises(JudgeMalformedError):
        extract_object('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"choices": []}',
        b'{"choices": [{"message": {"content": null}}]}',
        b'{"choices": [{"message": {"content": "   "}}]}',
        _completion("x" * 70_000),
    ],
)
def test_a_body_that_is_no_completion_is_malformed(body: bytes) -> None:
    """A response body that is no chat completion with text content is judge_malformed."""
    with pytest.raises(JudgeMalformedError):
        parse_completion(body)


def test_usage_is_read_when_sane() -> None:
    """Token counts are read when they are plausible counts and dropped otherwise."""
    completion = parse_completion(
        _completion("{}", usage={"prompt_tokens": 7, "completion_tokens": True})
    )
    assert (completion.input_tokens, completion.output_tokens) == (7, None)


_SUBJECT = Subject("c", "q?", (("a",), ("b",)), False, "a and b", (("d", "a b"),))


@pytest.mark.parametrize(
    "verdict",
    [
        {},
        {"facts": "yes"},
        {"facts": [{"index": 0, "stated": True}]},  # one fact of two: missing is no pass
        {"facts": [{"index": 0, "stated": True}, {"index": 0, "stated": True}]},
        {"facts": [{"index": 0, "stated": True}, {"index": 5, "stated": True}]},
        {"facts": [{"index": 0, "stated": "yes"}, {"index": 1, "stated": True}]},
        {"facts": [{"index": True, "stated": True}, {"index": 1, "stated": True}]},
        {"facts": [1, 2]},
    ],
)
def test_a_fact_verdict_of_the_wrong_shape_is_malformed(verdict: dict[str, object]) -> None:
    """A fact-support verdict missing, repeating or inventing a fact, or of the wrong types, is
    judge_malformed."""
    with pytest.raises(JudgeMalformedError):
        check("fact_support").read(_SUBJECT, verdict)


def test_a_fact_verdict_is_read() -> None:
    """A fact-support verdict gives fact recall and answer correctness, its reason on one line."""
    values = check("fact_support").read(
        _SUBJECT,
        {"facts": [{"index": 1, "stated": False}, {"index": 0, "stated": True}], "reason": "r\n x"},
    )
    assert values.values == {"fact_recall": 0.5, "answer_correct": False}
    assert values.reason == "r x"


def test_groundedness_lists_the_unsupported_claims() -> None:
    """A groundedness verdict gives the share of supported claims and lists the unsupported ones,
    and too many claims are malformed."""
    values = check("groundedness").read(
        _SUBJECT,
        {"claims": [{"claim": "a", "supported": True}, {"claim": "b", "supported": False}]},
    )
    assert values.values == {"faithfulness": 0.5}
    assert values.unsupported == ("b",)
    with pytest.raises(JudgeMalformedError):
        check("groundedness").read(_SUBJECT, {"claims": [{"claim": "a"}] * 51})


def test_a_refusal_verdict_needs_a_boolean() -> None:
    """A refusal verdict is read only from a boolean."""
    with pytest.raises(JudgeMalformedError):
        check("refusal").read(_SUBJECT, {"refusal": "true"})
    assert check("refusal").read(_SUBJECT, {"refusal": False}).values == {"refused": False}


@given(st.text(max_size=300))
def test_any_text_gives_an_object_or_the_error_kind(text: str) -> None:
    """Any text gives a JSON object or judge_malformed, never another exception."""
    with contextlib.suppress(JudgeMalformedError):
        assert isinstance(extract_object(text), dict)


@given(st.binary(max_size=300))
def test_any_body_gives_a_completion_or_the_error_kind(body: bytes) -> None:
    """Any response body gives a completion or judge_malformed, never another exception."""
    with contextlib.suppress(JudgeMalformedError):
        parse_completion(body)

"""Request templates: placeholder substitution, environment secrets, masking, identity."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from evaluator.errors import ConfigError
from evaluator.redaction import is_secret_name
from evaluator.targets.request import (
    MASK,
    OutgoingRequest,
    Redactor,
    RequestTemplate,
    encode_body,
)
from evaluator.targets.templates import DEFAULT_BODY, render_body, render_text

CHAT_BODY: dict[str, JsonValue] = {
    "model": "rag-large",
    "messages": [{"role": "user", "content": "{question}"}],
    "k": "{k}",
    "label": "top-{k} for {question}",
    "stream": False,
    "temperature": 0.0,
}


def _build(template: RequestTemplate, question: str = "q", k: int = 5) -> OutgoingRequest:
    return template.build(question, k)


class TestRenderBody:
    """Placeholders are substituted in the parsed template, never in JSON text."""

    def test_whole_value_placeholders_keep_their_type(self) -> None:
        """ "{k}" alone becomes an int, "{question}" alone the question; other types pass."""
        rendered = render_body(CHAT_BODY, {"question": "How long?", "k": 7})
        assert {
            "model": "rag-large",
            "messages": [{"role": "user", "content": "How long?"}],
            "k": 7,
            "label": "top-7 for How long?",
            "stream": False,
            "temperature": 0.0,
        } == rendered

    def test_hostile_question_is_data(self) -> None:
        """Quotes, backslashes, braces and a literal {k} in the question survive verbatim."""
        question = 'say "hi"\\n {k} {question} }"]'
        body = json.loads(json.dumps(render_body(CHAT_BODY, {"question": question, "k": 3})))
        assert question == body["messages"][0]["content"]
        assert f"top-3 for {question}" == body["label"]

    def test_keys_and_unknown_braces_untouched(self) -> None:
        """Object keys are not templates; {other} is not a placeholder."""
        values: dict[str, JsonValue] = {"question": "q", "k": 5}
        assert {"{k}": "{other} 5"} == render_body({"{k}": "{other} {k}"}, values)

    def test_render_text(self) -> None:
        """Parameter values are text: K becomes its decimal string."""
        assert "q=refund&n=5" == render_text("q={question}&n={k}", {"question": "refund", "k": 5})

    def test_body_is_the_rendered_template_as_json(self) -> None:
        """The request's bytes: the rendered body as json.dumps writes it, UTF-8, with
        non-ASCII text as it is."""
        template = RequestTemplate(method="POST", url="http://127.0.0.1:1/rag", body=CHAT_BODY)
        question = '退款多久到账？ "7 天"\n'
        rendered = render_body(CHAT_BODY, {"question": question, "k": 4})
        expected = json.dumps(rendered, ensure_ascii=False).encode()
        assert expected == _build(template, question, 4).content


class TestSecrets:
    """${NAME} values are read from the environment and kept out of the built request."""

    def test_env_reference_resolved_and_split(self) -> None:
        """Header and parameter values with ${NAME} become secrets; others stay plain."""
        template = RequestTemplate.from_config(
            "http://h/search",
            method="GET",
            params={"q": "{question}", "api_key": "${KEY}", "region": "eu-${REGION}"},
            headers={"Authorization": "Bearer ${TOKEN}", "X-Team": "search"},
            environ={"KEY": "k-123", "TOKEN": "t-456", "REGION": "west"},
        )
        assert (("q", "{question}"),) == template.params
        assert (("X-Team", "search"),) == template.headers
        assert {"api_key": "k-123", "region": "eu-west"} == {
            n: v.get_secret_value() for n, v in template.secret_params
        }
        assert ("Bearer t-456",) == tuple(v.get_secret_value() for _, v in template.secret_headers)
        assert "t-456" not in repr(template)

    def test_missing_variable_names_it_not_a_value(self) -> None:
        """An unset variable is a ConfigError naming the variable and where it is used."""
        with pytest.raises(ConfigError) as info:
            RequestTemplate.from_config(
                "http://h/rag",
                headers={"Authorization": "Bearer ${RAG_API_TOKEN}"},
                environ={"OTHER": "value-xyz"},
            )
        message = str(info.value)
        assert "RAG_API_TOKEN" in message
        assert "request.headers.Authorization" in message
        assert "value-xyz" not in message

    def test_empty_variable_is_missing(self) -> None:
        """An empty token is as good as none."""
        with pytest.raises(ConfigError, match="TOKEN"):
            RequestTemplate.from_config(
                "http://h/rag", headers={"X-Token": "${TOKEN}"}, environ={"TOKEN": ""}
            )

    def test_built_request_has_no_secret(self) -> None:
        """The request built (and shown by probe) holds neither secret headers nor params."""
        template = RequestTemplate.from_config(
            "http://h/search",
            method="GET",
            params={"q": "{question}", "api_key": "${KEY}"},
            headers={"Authorization": "Bearer ${TOKEN}"},
            environ={"KEY": "k-123", "TOKEN": "t-456"},
        )
        request = _build(template, "refund")
        assert "http://h/search?q=refund" == str(request.url)
        assert "authorization" not in {name.lower() for name in request.own_headers}

    @pytest.mark.parametrize(
        ("name", "secret"),
        [
            ("Authorization", True),
            ("X-API-Key", True),
            ("api_key", True),
            ("access_token", True),
            ("Cookie", True),
            ("key", True),
            ("client_secret", True),
            ("keyword", False),
            ("q", False),
            ("X-Request-Id", False),
            ("limit", False),
        ],
    )
    def test_secret_names(self, name: str, secret: bool) -> None:
        """Names that carry credentials are secret whatever their value."""
        assert secret == is_secret_name(name)

    def test_bare_token_is_a_secret_too(self) -> None:
        """An endpoint echoing only the token (no "Bearer ") still gets it redacted."""
        template = RequestTemplate.from_config(
            "http://h/rag", headers={"Authorization": "Bearer ${T}"}, environ={"T": "tok-1"}
        )
        assert {"Bearer tok-1", "tok-1"} == set(template.secrets())
        assert "bad token ***" == Redactor(template.secrets())("bad token tok-1")

    def test_literal_secret_header_is_masked(self) -> None:
        """A literal Authorization value in a config file is still treated as a secret."""
        template = RequestTemplate.from_config(
            "http://h/rag", headers={"Authorization": "Basic abc"}, environ={}
        )
        assert ("Basic abc",) == template.secrets()


class TestRedactor:
    """Known secrets are replaced in every form they travel in."""

    @pytest.mark.parametrize(
        "form",
        ["to/k+en&=", "to%2Fk%2Ben%26%3D", "to%2Fk%2Ben%26%3D", 'to/k+en&="'],
        ids=["raw", "quote", "quote_plus", "json"],
    )
    def test_forms(self, form: str) -> None:
        """Raw, URL-encoded and JSON-escaped occurrences are all masked."""
        secret = 'to/k+en&="' if form.endswith('"') else "to/k+en&="
        redact = Redactor([secret])
        escaped = json.dumps(secret)[1:-1]
        text = f"before {form if form != secret else secret} {escaped} after"
        assert secret not in redact(text)
        assert escaped not in redact(text)
        assert MASK in redact(text)

    def test_no_secrets_is_identity(self) -> None:
        """With nothing to hide, text passes unchanged."""
        assert "abc" == Redactor([""])("abc")


class TestDescribeAndIdentity:
    """What probe shows and what the config hash sees."""

    def test_describe_masks_secrets(self) -> None:
        """Secret params and headers are shown as *** next to the real request."""
        template = RequestTemplate.from_config(
            "http://h/search",
            method="GET",
            params={"q": "{question}", "api_key": "${KEY}"},
            headers={"Authorization": "Bearer ${TOKEN}", "X-Team": "search"},
            environ={"KEY": "k-123", "TOKEN": "t-456"},
        )
        shown = template.describe(_build(template, "refund"))
        assert shown.startswith("GET http://h/search?q=refund&api_key=***\n")
        assert "Authorization: ***" in shown
        assert "X-Team: search" in shown
        assert "k-123" not in shown
        assert "t-456" not in shown

    def test_default_identity_is_url_only(self) -> None:
        """The default contract's identity is the URL without its query string."""
        template = RequestTemplate.from_config("http://h:8900/rag?key=abc")
        assert DEFAULT_BODY == template.body
        assert template.is_default
        assert {"url": "http://h:8900/rag"} == template.identity()

    def test_identity_masks_secrets(self) -> None:
        """A mapped request's identity has its templates, with secrets as ***."""
        template = RequestTemplate.from_config(
            "http://h/search",
            method="GET",
            params={"q": "{question}", "api_key": "${KEY}"},
            environ={"KEY": "k-123"},
        )
        identity = template.identity()
        assert [("api_key", MASK), ("q", "{question}")] == identity["params"]
        assert "k-123" not in json.dumps(identity)


#: JSON values as a body template renders them: any text (escapes, quotes, CJK, astral,
#: control characters), integers of any size, finite floats, nested objects and lists
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=["Cs"])),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(blacklist_categories=["Cs"])), inner, max_size=4)
    ),
    max_leaves=12,
)


def _has_exponent(value: JsonValue) -> bool:
    """Whether a float anywhere in ``value`` is written in exponent form by json.dumps."""
    if isinstance(value, float):
        return "e" in repr(value)
    if isinstance(value, list):
        return any(map(_has_exponent, value))
    if isinstance(value, dict):
        return any(map(_has_exponent, value.values()))
    return False


class TestEncodeBody:
    """The body sent is json.dumps's text, its numbers in their shortest form."""

    @given(_JSON_VALUES)
    @settings(max_examples=400, deadline=None)
    def test_the_same_value_as_json_dumps(self, value: JsonValue) -> None:
        """Any rendered body decodes to the value json.dumps's text decodes to."""
        assert json.loads(json.dumps(value, ensure_ascii=False)) == json.loads(encode_body(value))

    @given(_JSON_VALUES.filter(lambda v: not _has_exponent(v)))
    @settings(max_examples=400, deadline=None)
    def test_the_same_text_as_json_dumps_without_exponents(self, value: JsonValue) -> None:
        """Without a number in exponent form (1e+16), the bytes are json.dumps's."""
        assert json.dumps(value, ensure_ascii=False).encode() == encode_body(value)

    def test_exponents_in_their_shortest_form(self) -> None:
        """1e+16 and 1.5e-07 are written 1e16 and 1.5e-7: the same numbers."""
        assert b'{"big": 1e16, "small": 1.5e-7}' == encode_body({"big": 1e16, "small": 1.5e-7})

    def test_a_lone_surrogate_is_refused_as_before(self) -> None:
        """A lone surrogate cannot be UTF-8: the same error as json.dumps(...).encode()."""
        with pytest.raises(UnicodeEncodeError):
            encode_body({"q": "\ud800"})

"""Config values after ``${ENV}`` expansion pass the border (issue 24.1): a value that no
request can carry (bytes of the environment that are not UTF-8 become lone surrogates in
Python; CR, LF or another control in a header) is refused where the setting is read, naming
it and never quoting the value, instead of failing every case, export or page later."""

from __future__ import annotations

import os

import pytest

from evaluator import border
from evaluator.daemon.access import resolve_token
from evaluator.errors import ConfigError
from evaluator.run import otlp
from evaluator.targets.request import RequestTemplate

#: what os.environ holds for the bytes b"tok\xff" (surrogateescape)
UNDECODABLE = "tok\udcff"


def _setenv(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    """As the environment holds it: bytes (a lone surrogate is what b"\\xff" reads as)."""
    encoded = value.encode("utf-8", "surrogateescape")
    monkeypatch.setitem(os.environb, name.encode(), encoded)


def test_text_problem_names_the_offset_not_the_value() -> None:
    """A setting that is not UTF-8 is named by its offset, never its value."""
    assert border.text_problem("plain") is None
    assert border.text_problem("天气 ok") is None
    problem = border.text_problem(UNDECODABLE)
    assert problem is not None and "offset 3" in problem and "tok" not in problem
    assert border.header_problem("X-Key", UNDECODABLE) == problem


def test_query_parameter_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query parameter read from the environment must be UTF-8, named if not."""
    monkeypatch.setenv("FUZZ_PARAM", "ok")
    RequestTemplate.from_config("http://127.0.0.1:9/rag", params={"key": "${FUZZ_PARAM}"})
    with pytest.raises(ConfigError, match=r"request\.params\.key: the value is not UTF-8"):
        RequestTemplate.from_config(
            "http://127.0.0.1:9/rag",
            params={"key": "${FUZZ_PARAM}"},
            environ={"FUZZ_PARAM": UNDECODABLE},
        )


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\x1b[2J", UNDECODABLE])
def test_otlp_header_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """An OTLP header read from the environment that cannot be sent is refused without its
    value."""
    _setenv(monkeypatch, "FUZZ_OTLP", value)
    with pytest.raises(ConfigError, match=r"otlp\.headers\.X-Key: .*cannot be sent") as caught:
        otlp.resolve(headers={"X-Key": "${FUZZ_OTLP}"})
    assert value not in str(caught.value)


@pytest.mark.parametrize("value", ["tok\nverdict: PASS", UNDECODABLE])
def test_server_token_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """A UI token read from the environment that cannot be used is refused without its value."""
    _setenv(monkeypatch, "FUZZ_TOKEN_VALUE", value)
    with pytest.raises(ConfigError, match=r"server\.token: ") as caught:
        resolve_token("${FUZZ_TOKEN_VALUE}")
    assert value not in str(caught.value)
    monkeypatch.setenv("FUZZ_TOKEN_VALUE", "a-good-token")
    assert "a-good-token" == resolve_token("${FUZZ_TOKEN_VALUE}")

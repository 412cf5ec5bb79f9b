"""Target configuration: strict nested models, compiled expressions, example files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluator.config import TargetConfig, load_settings
from evaluator.errors import ConfigError
from evaluator.factory import build_target
from evaluator.targets.http import HttpTarget

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "targets"


def _load(tmp_path: Path, toml: str) -> str:
    path = tmp_path / "evaluator.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    return str(info.value)


class TestValidation:
    """A wrong target config stops at load time with a message naming the field."""

    def test_bad_jmespath_names_the_field(self, tmp_path: Path) -> None:
        """An expression that does not compile names targets.N.response.<field>."""
        message = _load(
            tmp_path,
            '[[targets]]\nurl = "http://h/rag"\n[targets.response]\nids = "hits[].id"\n'
            'answer = "output.["\n',
        )
        assert "targets.0.response.answer" in message
        assert "invalid JMESPath expression 'output.['" in message

    @pytest.mark.parametrize(
        ("expression", "complete"),
        [
            ("results[?.id", "invalid token '.' at column 9 ('results[?' <- here -> '.id')"),
            ("results[", "incomplete expression at column 8 ('results[' <- here -> '')"),
            ("a.$b", "Unknown token $ at column 2 ('a.' <- here -> '$b')"),
        ],
    )
    def test_jmespath_error_is_complete_on_one_line(
        self, tmp_path: Path, expression: str, complete: str
    ) -> None:
        """What is wrong and where, with the expression: not jmespath's first line only."""
        message = _load(
            tmp_path,
            f'[[targets]]\nurl = "http://h/rag"\n[targets.response]\nids = "{expression}"\n',
        )
        assert "\n" not in message
        assert f"invalid JMESPath expression {expression!r}: {complete}" in message

    @pytest.mark.parametrize(
        ("target", "message"),
        [
            (
                {"request": {"method": "GET", "body": {"q": "{question}"}}},
                "GET request has no body",
            ),
            ({"request": {"method": "GET"}}, "the question is sent nowhere"),
            ({"request": {"body": {"q": "{questoin}"}}}, "the question is sent nowhere"),
            ({"request": {"method": "PUT"}}, "request.method"),
            ({"request": {"headers": {"A": "${BAD NAME}"}}}, "headers.A: malformed"),
            ({"request": {"params": {"q": "{question}", "t": "${T"}}}, "params.t: malformed"),
            ({"request": {"body": {"q": "{question}", "t": "${T}"}}}, "not resolved in the body"),
            ({"request": {"verb": "GET"}}, "request.verb"),
            ({"response": {"answer": "a"}}, "response.ids"),
            ({"response": {"ids": "a", "extra": "b"}}, "response.extra"),
            ({"tls": {"verify": False, "ca_bundle": "/x.pem"}}, "ca_bundle is set but verify"),
            ({"max_response_bytes": 10}, "max_response_bytes"),
            ({"requests_per_second": 0}, "requests_per_second"),
            ({"url": "http://h/${PATH}"}, "not resolved in the url"),
        ],
    )
    def test_rejected(self, target: dict[str, Any], message: str) -> None:
        """Each mistake is reported with the field it concerns."""
        with pytest.raises(ConfigError) as info:
            load_settings(None, {"targets": [{"url": "http://h/rag", **target}]})
        assert message in str(info.value)

    def test_http_options_on_a_callable(self) -> None:
        """HTTP-only settings on a callable target are a mistake, not ignored."""
        with pytest.raises(ConfigError, match="response: only for a 'url' target"):
            load_settings(None, {"targets": [{"callable": "m:f", "response": {"ids": "a"}}]})

    @pytest.mark.parametrize(
        "target",
        [
            {"callable": "m:f"},
            {"url": "http://h/s", "request": {"method": "GET", "params": {"q": "{question}"}}},
            {"url": "http://h/s", "response": {"ids": "[].id"}, "tls": {"verify": False}},
        ],
    )
    def test_dump_and_reload(self, target: dict[str, Any]) -> None:
        """The command line dumps a TargetConfig and loads it again: it must survive."""
        config = TargetConfig.model_validate(target)
        reloaded = TargetConfig.model_validate(config.model_dump())
        assert config == reloaded

    def test_expressions_compiled_once(self) -> None:
        """Compiled expressions are kept on the config and reused by the target."""
        config = TargetConfig(url="http://h/rag", response={"ids": "[].id", "answer": "a"})
        assert config.response is not None
        assert {"ids", "answer"} == set(config.response.compiled)
        target = build_target(config)
        assert isinstance(target, HttpTarget)
        assert target.mapper is not None
        assert config.response.compiled["ids"] is target.mapper.expressions["ids"]

    def test_missing_env_at_build_time(self) -> None:
        """The config loads without the variable; building the target names it."""
        config = TargetConfig(
            url="http://h/rag", request={"headers": {"Authorization": "Bearer ${NOPE_TOKEN}"}}
        )
        with pytest.raises(ConfigError, match="NOPE_TOKEN is not set"):
            build_target(config, environ={})

    def test_unreadable_ca_bundle(self, tmp_path: Path) -> None:
        """A CA bundle that cannot be loaded is a config error naming the file."""
        config = TargetConfig(url="https://h/rag", tls={"ca_bundle": str(tmp_path / "no.pem")})
        with pytest.raises(ConfigError, match=r"tls\.ca_bundle"):
            build_target(config)


class TestExamples:
    """The shipped example configs load and describe the shapes they claim."""

    @pytest.mark.parametrize(
        ("name", "method", "retrieval_only"),
        [
            ("default-contract.toml", "POST", False),
            ("search-api.toml", "GET", True),
            ("chat-api.toml", "POST", False),
        ],
    )
    def test_loads(self, name: str, method: str, retrieval_only: bool) -> None:
        settings = load_settings(EXAMPLES / name)
        target = settings.targets[0]
        assert (method, retrieval_only) == (target.request.method, target.retrieval_only)
        assert target.label == settings.jobs[0].target

    def test_default_identity_unchanged(self) -> None:
        """A default-contract target hashes as before mapping existed: kind and URL only."""
        target = build_target(load_settings(EXAMPLES / "default-contract.toml").targets[0])
        assert {"kind": "http", "url": "http://127.0.0.1:8900/rag"} == target.identity()

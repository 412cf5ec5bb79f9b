"""Target configuration: strict nested models, compiled expressions, example files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from evaluator.config import (
    TARGET_KINDS,
    CallableTargetConfig,
    HttpTargetConfig,
    Settings,
    TargetConfig,
    load_settings,
)
from evaluator.config.load import _tagged
from evaluator.errors import ConfigError
from evaluator.factory import build_target
from evaluator.targets.callable import CallableTarget
from evaluator.targets.http import HttpTarget

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "targets"


def _load(tmp_path: Path, toml: str) -> str:
    path = tmp_path / "evaluator.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    return str(info.value)


UNKNOWN = "unknown key (did you mean"
ONE_KIND = "set exactly one of 'url' or 'callable'"


def _toml_value(value: object) -> str:
    """A default value as TOML (the tests write each key with its default)."""
    if value is None:
        return '"x"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int | float):
        return str(value)
    return "{}"  # a table: an empty one takes the defaults


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
            ({"request": {"body": {"q": "{question}", "t": float("nan")}}}, "not JSON numbers"),
            ({"request": {"body": ["{question}", [float("-inf")]]}}, "not JSON numbers"),
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
        with pytest.raises(ConfigError, match=r"targets\.0\.response: only for a 'url' target"):
            load_settings(None, {"targets": [{"callable": "m:f", "response": {"ids": "a"}}]})

    @pytest.mark.parametrize(
        "key", sorted(set(HttpTargetConfig.model_fields) - set(CallableTargetConfig.model_fields))
    )
    def test_every_http_key_on_a_callable_is_named(self, key: str, tmp_path: Path) -> None:
        """Each HTTP-only key on a callable target is named where it was written, even with
        the default value (``kind = "http"``): the model says which keys a callable has, no
        hand-kept list."""
        value = HttpTargetConfig.model_fields[key].get_default() if key != "url" else "x"
        written = {"url": '"http://h/rag"'}.get(key) or _toml_value(value)
        message = _load(tmp_path, f'[[targets]]\ncallable = "m:f"\n{key} = {written}\n')
        if key == "url":
            assert message.endswith(f"targets.0: {ONE_KIND}")
        else:
            assert message.endswith(f"evaluator.toml: targets.0.{key}: only for a 'url' target")

    def test_several_http_keys_on_a_callable(self) -> None:
        """Every wrong key is named, each on its own, in the order written."""
        with pytest.raises(ConfigError) as info:
            load_settings(
                None,
                {"targets": [{"callable": "m:f", "max_connections": 3, "tls": {"verify": False}}]},
            )
        assert str(info.value) == (
            "invalid configuration: targets.0.max_connections: only for a 'url' target; "
            "targets.0.tls: only for a 'url' target"
        )

    @pytest.mark.parametrize(
        ("target", "message"),
        [
            (
                'callable = "m:f"\ntimeout_secnds = 3',
                f'timeout_secnds: {UNKNOWN} "timeout_seconds"?)',
            ),
            (
                'url = "http://h/rag"\nmax_conections = 3',
                f'max_conections: {UNKNOWN} "max_connections"?)',
            ),
            ('url = "http://h/rag"\ntls = { verfy = false }', f'tls.verfy: {UNKNOWN} "verify"?)'),
            ('callable = "m:f"\nretry = { retris = 1 }', f'retry.retris: {UNKNOWN} "retries"?)'),
            ('url = "http://h/rag"\ncallable = "m:f"', f"targets.0: {ONE_KIND}"),
            ('callabel = "m:f"', f'targets.0.callabel: {UNKNOWN} "callable"?)'),
            ('urll = "http://h/rag"\ntoken = "s3cr3t"', "targets.0.token: unknown key"),
            ('name = "x"', f"targets.0: {ONE_KIND}"),
            ("url = 3", "targets.0.url: Input should be a valid string"),
            ("callable = 3", "targets.0.callable: Input should be a valid string"),
            (
                'callable = "m:f"\nmax_ranked_ids = 0',
                "0.max_ranked_ids: Input should be greater than or equal to 1",
            ),
        ],
    )
    def test_kind_specific_messages(self, tmp_path: Path, target: str, message: str) -> None:
        """Typos get the closest key of that kind of target; the kind's tag never shows."""
        text = _load(tmp_path, f"[[targets]]\n{target}\n")
        assert text.endswith(message), text
        assert ".http." not in text and ".callable." not in text
        assert "s3cr3t" not in text  # only the keys of a target of no kind are read

    def test_bad_target_in_the_environment_names_the_variable(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """A list of targets set whole as JSON: the message names that variable."""
        monkeypatch.chdir(tmp_path)  # no config/evaluator.toml
        monkeypatch.setenv("EVALUATOR_TARGETS", '[{"callable": "m:f", "max_connections": 3}]')
        with pytest.raises(ConfigError) as info:
            load_settings(None)
        assert str(info.value) == (
            "invalid configuration: environment variable EVALUATOR_TARGETS "
            "(targets.0.max_connections): only for a 'url' target"
        )

    def test_kinds(self) -> None:
        """The key that names the endpoint decides the kind, as config files always wrote it."""
        chat = {"url": "http://h/rag", "kind": "openai-chat", "model": "m"}
        settings = Settings.model_validate({"targets": [chat, {"callable": "m:f"}]})
        assert [HttpTargetConfig, CallableTargetConfig] == [type(t) for t in settings.targets]
        assert {"http": HttpTargetConfig, "callable": CallableTargetConfig} == TARGET_KINDS
        # the messages' table of kinds is the union's own tags
        assert TARGET_KINDS == _tagged(Settings.model_fields["targets"].annotation)

    def test_factory_dispatches_on_the_kind(self) -> None:
        """A callable config builds a CallableTarget; an HTTP config an HttpTarget."""
        callable_target = build_target(CallableTargetConfig(callable="json:dumps", name="c"))
        assert isinstance(callable_target, CallableTarget)
        assert "c" == callable_target.name
        assert isinstance(build_target(HttpTargetConfig(url="http://h/rag")), HttpTarget)

    @pytest.mark.parametrize(
        "target",
        [
            {"callable": "m:f"},
            {"url": "http://h/s", "request": {"method": "GET", "params": {"q": "{question}"}}},
            {"url": "http://h/s", "response": {"ids": "[].id"}, "tls": {"verify": False}},
        ],
    )
    def test_dump_and_reload(self, target: dict[str, Any]) -> None:
        """The command line dumps a target config and loads it again: it must survive."""
        adapter: TypeAdapter[TargetConfig] = TypeAdapter(TargetConfig)
        config = adapter.validate_python(target)
        reloaded = adapter.validate_python(config.model_dump())
        assert config == reloaded
        assert type(config) is type(reloaded)

    def test_expressions_compiled_once(self) -> None:
        """Compiled expressions are kept on the config and reused by the target."""
        config = HttpTargetConfig(url="http://h/rag", response={"ids": "[].id", "answer": "a"})
        assert config.response is not None
        assert {"ids", "answer"} == set(config.response.compiled)
        target = build_target(config)
        assert isinstance(target, HttpTarget)
        assert target.mapper is not None
        assert config.response.compiled["ids"] is target.mapper.expressions["ids"]

    def test_missing_env_at_build_time(self) -> None:
        """The config loads without the variable; building the target names it."""
        config = HttpTargetConfig(
            url="http://h/rag", request={"headers": {"Authorization": "Bearer ${NOPE_TOKEN}"}}
        )
        with pytest.raises(ConfigError, match="NOPE_TOKEN is not set"):
            build_target(config, environ={})

    def test_unreadable_ca_bundle(self, tmp_path: Path) -> None:
        """A CA bundle that cannot be loaded is a config error naming the file."""
        config = HttpTargetConfig(url="https://h/rag", tls={"ca_bundle": str(tmp_path / "no.pem")})
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
        """Each example target configuration loads with its method and retrieval-only
        setting."""
        settings = load_settings(EXAMPLES / name)
        target = settings.targets[0]
        assert isinstance(target, HttpTargetConfig)
        assert (method, retrieval_only) == (target.request.method, target.retrieval_only)
        assert target.label == settings.jobs[0].target

    def test_default_identity_unchanged(self) -> None:
        """A default-contract target hashes as before mapping existed: kind and URL only."""
        target = build_target(load_settings(EXAMPLES / "default-contract.toml").targets[0])
        assert {"kind": "http", "url": "http://127.0.0.1:8900/rag"} == target.identity()

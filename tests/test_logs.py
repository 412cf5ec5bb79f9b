"""Structured logging: secrets are redacted by key, stage names are not."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from evaluator.logs import REDACTED, configure_logging, redact_secrets


class TestRedactSecrets:
    def test_secret_keys_redacted_at_any_depth(self) -> None:
        """Credential-looking keys are replaced, also inside nested mappings."""
        event = {
            "Authorization": "Bearer abc",
            "headers": {"X-API-Key": "k", "cookie": "c"},
            "api_token": "t",
            "password": "p",
        }
        expected = {
            "Authorization": REDACTED,
            "headers": {"X-API-Key": REDACTED, "cookie": REDACTED},
            "api_token": REDACTED,
            "password": REDACTED,
        }
        assert expected == redact_secrets(None, "info", event)

    def test_words_that_merely_contain_a_secret_word_are_kept(self) -> None:
        """A stage called "tokenize" is a timing, not a token."""
        event = {"stage_seconds": {"tokenize": 0.01, "keyword": 0.02}, "secretary": "x"}
        assert {"stage_seconds": {"tokenize": 0.01, "keyword": 0.02}, "secretary": "x"} == (
            redact_secrets(None, "info", dict(event))
        )


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


class TestConfigureLogging:
    def test_json_lines_with_redaction(self) -> None:
        """In JSON mode each event is one line, redacted, with level and UTC timestamp."""
        out = io.StringIO()
        configure_logging("json", "info", stream=out)
        structlog.get_logger("evaluator.test").info("case", case_id="c1", token="s3cret")
        line = json.loads(out.getvalue().strip().splitlines()[-1])
        assert ("case", "c1", REDACTED, "info") == (
            line["event"], line["case_id"], line["token"], line["level"],
        )  # fmt: skip
        assert line["timestamp"].endswith("Z")
        assert "s3cret" not in out.getvalue()

    def test_exception_tracebacks_carry_no_locals(self) -> None:
        """A traceback is structured JSON without frame locals, which could hold secrets."""
        out = io.StringIO()
        configure_logging("json", "info", stream=out)

        def fails(api_secret: str) -> None:
            raise ValueError("boom")

        try:
            fails("hunter2")
        except ValueError:
            structlog.get_logger("evaluator.test").exception("run_failed")
        assert "hunter2" not in out.getvalue()
        line = json.loads(out.getvalue().strip().splitlines()[-1])
        assert "ValueError" == line["exception"][0]["exc_type"]

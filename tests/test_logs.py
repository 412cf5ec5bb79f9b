"""Structured logging: secrets are redacted by key, stage names are not."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from evaluator.logs import REDACTED, configure_logging, redact_secrets
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import DaemonProcess


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

    def test_token_counts_are_not_secrets(self) -> None:
        """Keys that measure usage (input_tokens, tokens_per_second) keep their values;
        the known secret names (token, access_token, client_secret) do not."""
        event = {
            "input_tokens": 120,
            "output_tokens": 9,
            "tokens_per_second": 41.5,
            "summary": {"input_tokens_total": 360, "max_tokens": 512, "tokens": 3},
            "access_token": "t",
            "x-auth-token": "t",
            "client_secret": "s",
            "credentials": "c",
        }
        expected = {
            "input_tokens": 120,
            "output_tokens": 9,
            "tokens_per_second": 41.5,
            "summary": {"input_tokens_total": 360, "max_tokens": 512, "tokens": 3},
            "access_token": REDACTED,
            "x-auth-token": REDACTED,
            "client_secret": REDACTED,
            "credentials": REDACTED,
        }
        assert expected == redact_secrets(None, "info", event)


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


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestUnixConventions:
    def test_logs_go_to_stderr_by_default(self, capsys: pytest.CaptureFixture[str]) -> None:
        """docs/daemon.md: the daemon logs to stderr, as daemons do; stdout stays free."""
        configure_logging("json", "info")
        structlog.get_logger("evaluator.test").info("run", job="j")
        captured = capsys.readouterr()
        assert "" == captured.out
        assert "run" == json.loads(captured.err.strip().splitlines()[-1])["event"]

    def test_no_color_turns_console_colour_off(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """NO_COLOR turns the console's colours off."""
        monkeypatch.setenv("NO_COLOR", "1")
        out = _Terminal()
        configure_logging("console", "info", stream=out)
        structlog.get_logger("evaluator.test").warning("case", case_id="c1")
        assert "case" in out.getvalue()
        assert "\033[" not in out.getvalue()

    def test_console_colour_without_no_color(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The console log is coloured on a terminal without NO_COLOR."""
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.delenv("TERM", raising=False)
        out = _Terminal()
        configure_logging("console", "info", stream=out)
        structlog.get_logger("evaluator.test").warning("case", case_id="c1")
        assert "\033[" in out.getvalue()

    def test_console_run_line_shows_nested_fields_as_json(self) -> None:
        """The demo's run line: the summary as JSON with readable numbers, not a dict repr
        with 17-digit floats."""
        out = io.StringIO()
        configure_logging("console", "info", stream=out)
        summary = {"recall_at_k": 0.8333333333333334, "p95_seconds": 0.012345678901, "n": 3}
        structlog.get_logger("evaluator.test").info("run", summary=summary, rate=2 / 3)
        text = out.getvalue()
        assert '{"recall_at_k": 0.833333, "p95_seconds": 0.0123457, "n": 3}' in text
        assert "rate=0.666667" in text
        assert "'recall_at_k'" not in text

    def test_json_lines_round_floats_to_six_significant_digits(self) -> None:
        """JSON log lines round floats to six significant digits."""
        out = io.StringIO()
        configure_logging("json", "info", stream=out)
        structlog.get_logger("evaluator.test").info("run", summary={"mrr": 0.8333333333333334})
        assert '"summary": {"mrr": 0.833333}' in out.getvalue()

    def test_library_lines_have_a_stable_shape(self) -> None:
        """APScheduler's free-text lines: ``event: "library_log"``, the logger, the text."""
        out = io.StringIO()
        configure_logging("json", "info", stream=out)
        logging.getLogger("apscheduler.executors.default").warning(
            'Run time of job "%s" was missed by %s', "nightly", "0:00:03"
        )
        line = json.loads(out.getvalue().strip().splitlines()[-1])
        assert {
            "event": "library_log",
            "logger": "apscheduler.executors.default",
            "level": "warning",
            "message": 'Run time of job "nightly" was missed by 0:00:03',
        } == {k: line[k] for k in ("event", "logger", "level", "message")}
        assert {"event", "logger", "level", "message", "timestamp"} == set(line)

    def test_apscheduler_info_lines_do_not_double_the_run_line(self) -> None:
        """``evaluator demo``: one line per run, not APScheduler's two more around it."""
        out = io.StringIO()
        configure_logging("json", "info", stream=out)
        logging.getLogger("apscheduler.executors.default").info('Running job "%s"', "j")
        logging.getLogger("apscheduler.executors.default").warning("missed by %s", "0:00:03")
        (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
        assert "missed by 0:00:03" == line["message"]


@pytest.mark.e2e
def test_a_daemons_case_and_run_lines_show_token_counts(tmp_path: Path) -> None:
    """A real daemon over a loopback service reporting usage: its case lines carry the
    token counts and tokens per second, its run line the totals, none redacted."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "c1", "question": "q", "relevant_ids": ["a"]}) + "\n")
    body = {"answer": "7 days", "hits": [{"id": "a"}], "usage": {"in": 120, "out": 9}}
    with LoopbackServer(lambda _r: Reply(body=body)) as server:
        config = tmp_path / "evaluator.toml"
        config.write_text(
            f'reports_dir = "{tmp_path / "reports"}"\nlog_format = "json"\n\n'
            f'[[targets]]\nname = "t"\nurl = "{server.url}"\n\n[targets.response]\n'
            f'ids = "hits[].id"\nanswer = "answer"\ninput_tokens = "usage.in"\n'
            f'output_tokens = "usage.out"\n\n'
            f'[[jobs]]\ntarget = "t"\ndataset = "{golden}"\ninterval_seconds = 60\n',
            encoding="utf-8",
        )
        daemon = DaemonProcess(["--config", str(config)], workdir=tmp_path).start()
        try:
            daemon.wait_ready()
            run = daemon.wait_for_log(lambda e: e.get("event") == "run", 30)
        finally:
            daemon.stop()
    case = next(e for e in daemon.logs() if e.get("event") == "case")
    assert (120, 9) == (case["input_tokens"], case["output_tokens"])
    assert (120, 9) == (run["summary"]["input_tokens_total"], run["summary"]["output_tokens_total"])
    assert REDACTED not in json.dumps([case, run])

"""A token from the environment never appears in logs, reports, messages or exceptions,
even when the endpoint answers 401 and echoes the request back."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import traceback
from pathlib import Path

import pytest
import structlog

from evaluator.cli import main
from evaluator.config import HttpTargetConfig
from evaluator.errors import TargetHTTPStatusError
from evaluator.factory import build_target
from evaluator.logs import configure_logging
from evaluator.models import CaseRecord
from evaluator.report import RunReport, report_to_dict, write_report
from evaluator.run.runner import RetryEvent, RunOptions, run_dataset
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import FAST_RETRY, case, dataset

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

TOKEN = "tok-5ecret-Zq81/x+y="
KEY = "key-5ecret-77"
SECRETS = (TOKEN, KEY)


def _echo(request: dict[str, object]) -> Reply:
    status = 503 if request.get("question") == "busy" else 401
    return Reply(status=status, echo_headers=True)


def _config(url: str) -> HttpTargetConfig:
    return HttpTargetConfig(
        url=url,
        request={
            "params": {"api_key": "${SEARCH_KEY}"},
            "headers": {"Authorization": "Bearer ${RAG_API_TOKEN}"},
        },
    )


def _assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        forms = {secret, json.dumps(secret)[1:-1], secret.replace("/", "%2F")}
        for form in forms:
            assert form not in text, f"secret leaked into {where}"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The target's secrets in the environment."""
    monkeypatch.setenv("RAG_API_TOKEN", TOKEN)
    monkeypatch.setenv("SEARCH_KEY", KEY)


@pytest.mark.usefixtures("env")
class TestNoLeak:
    """The endpoint sees the secrets; nothing evaluator writes or raises contains them."""

    def test_run_logs_report_and_exceptions(
        self, caplog: pytest.LogCaptureFixture, tmp_path: Path
    ) -> None:
        """The target's secrets reach the endpoint but never the logs, the report, the
        exceptions or the config identity, even when the endpoint echoes them."""
        stream = io.StringIO()
        configure_logging("json", "debug", stream)
        caplog.set_level(logging.DEBUG)
        for noisy in ("httpx", "httpcore", "aiohttp"):
            caplog.set_level(logging.DEBUG, logger=noisy)
        log = structlog.get_logger("evaluator")

        def on_case(record: CaseRecord) -> None:
            log.info("case", case_id=record.id, error=record.error and record.error.message)

        def on_retry(event: RetryEvent) -> None:
            log.warning("retry", case_id=event.case_id, error_message=event.message)

        with LoopbackServer(_echo) as server:
            target = build_target(_config(server.url))

            async def go() -> tuple[RunReport, TargetHTTPStatusError]:
                try:
                    report = await run_dataset(
                        dataset(["denied", "busy"]),
                        target,
                        RunOptions(k=3, retry=FAST_RETRY),
                        on_case=on_case,
                        on_retry=on_retry,
                    )
                    with pytest.raises(TargetHTTPStatusError) as info:
                        await target.query(case("denied"), 3)
                    return report, info.value
                finally:
                    await target.aclose()

            report, exc = asyncio.run(go())
            seen_headers = server.request_headers
            seen_lines = server.request_lines

        # the endpoint did get the secrets
        assert all(h["Authorization"] == f"Bearer {TOKEN}" for h in seen_headers)
        assert all("api_key=key-5ecret-77" in line for line in seen_lines)
        # and the error body it echoed reached the message only redacted
        assert 401 == exc.status
        assert "invalid credentials *** for /rag?api_key=***" in exc.message
        _assert_clean(str(exc), "exception str")
        _assert_clean(repr(exc), "exception repr")
        _assert_clean("".join(traceback.format_exception(exc)), "traceback")
        data = report_to_dict(report)
        assert ["http_status", "http_status"] == [c["error"]["kind"] for c in data["cases"]]
        _assert_clean(json.dumps(data, ensure_ascii=False), "report")
        write_report(report, tmp_path / "report.json")
        _assert_clean((tmp_path / "report.json").read_text(encoding="utf-8"), "report file")
        _assert_clean(stream.getvalue(), "structured logs")
        assert '"retry"' in stream.getvalue()
        _assert_clean(caplog.text, "standard-library logs")
        _assert_clean(json.dumps(dict(target.identity())), "config identity")

    def test_cli_run_and_probe(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`evaluator run` and `evaluator probe` output, and the report file, stay clean."""
        with LoopbackServer(_echo) as server:
            config = tmp_path / "evaluator.toml"
            config.write_text(
                f'[[targets]]\nname = "secured"\nurl = "{server.url}"\n'
                '[targets.request]\nparams = { api_key = "${SEARCH_KEY}" }\n'
                'headers = { Authorization = "Bearer ${RAG_API_TOKEN}" }\n'
                "[targets.retry]\nbackoff_initial_seconds = 0.01\n"
                f'[[jobs]]\ntarget = "secured"\ndataset = "{tmp_path / "golden.jsonl"}"\n',
                encoding="utf-8",
            )
            (tmp_path / "golden.jsonl").write_text(
                '{"id": "a", "question": "denied", "relevant_ids": ["x"]}\n', encoding="utf-8"
            )
            report = tmp_path / "out.json"
            run_code = main(["run", "--config", str(config), "--output", str(report)])
            run_out = capsys.readouterr()
            probe_code = main(["probe", "--config", str(config), "--question", "denied"])
            probe_out = capsys.readouterr()
        assert (1, 1) == (run_code, probe_code)
        assert "Authorization: ***" in probe_out.out
        assert "api_key=***" in probe_out.out
        assert "HTTP 401" in probe_out.out
        for name, text in [
            ("run stdout", run_out.out),
            ("run stderr", run_out.err),
            ("probe stdout", probe_out.out),
            ("probe stderr", probe_out.err),
            ("report", report.read_text(encoding="utf-8")),
        ]:
            _assert_clean(text, name)

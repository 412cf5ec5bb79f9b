"""`evaluator probe` on each shape, and `evaluator run` reporting a mapping that never matched."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest

from evaluator.cli import main
from evaluator.models import Case
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import GOOD_BODY
from tests.targets.test_http_shapes import EXAMPLES, chat_reply, search_reply

GOLDEN = (
    '{"id": "refund", "question": "How long for a refund?", "relevant_ids": ["refund-policy"],'
    ' "expected_facts": ["7 days"]}\n'
    '{"id": "shipping", "question": "Which carrier?", "relevant_ids": ["shipping"]}\n'
)


def _example(tmp_path: Path, name: str, url: str) -> Path:
    """A copy of ``config/targets/<name>`` pointed at ``url``, its job on a temp golden set."""
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    text = re.sub(r'^url = ".*"$', f'url = "{url}"', text, count=1, flags=re.MULTILINE)
    golden = tmp_path / "golden.jsonl"
    golden.write_text(GOLDEN, encoding="utf-8")
    text = re.sub(r'^dataset = ".*"$', f'dataset = "{golden}"', text, flags=re.MULTILINE)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestProbe:
    """Probe prints the request (masked), the raw response and the mapped fields."""

    @pytest.mark.e2e
    def test_search_api(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A retrieval-only GET target: exit 0, says it is retrieval-only."""
        with LoopbackServer(search_reply, path="/search") as server:
            config = _example(tmp_path, "search-api.toml", server.url)
            code = main(["probe", "--target-config", str(config), "--question", "refund?"])
        out = capsys.readouterr().out
        assert 0 == code
        assert f"GET {server.url}?q=refund?&limit=10" in out
        assert "response: HTTP 200" in out
        assert '"id": "refund-policy"' in out  # the raw body, pretty-printed
        assert 'ids        [].id\n             -> ["refund-policy", "shipping", "faq"]' in out
        assert "answer     (not mapped)" in out
        assert "retrieval-only target" in out
        assert out.rstrip().endswith("mapping ok")

    @pytest.mark.e2e
    def test_chat_api_question_from_dataset(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The job's golden set supplies the question; the token is masked."""
        monkeypatch.setenv("RAG_API_TOKEN", "tok-probe-123")
        with LoopbackServer(
            chat_reply, path="/v1/chat", question_of=lambda r: r["messages"][0]["content"]
        ) as server:
            config = _example(tmp_path, "chat-api.toml", server.url)
            code = main(["probe", "--target-config", str(config), "--k", "2"])
            sent = server.requests
        out = capsys.readouterr().out
        assert 0 == code
        assert "How long for a refund?" == sent[0]["messages"][0]["content"]
        assert 2 == sent[0]["retrieval"]["top_k"]
        assert "Authorization: ***" in out
        assert "tok-probe-123" not in out
        assert 'answer     output.message.content\n             -> "You have 7 days. [2]"' in out

    @pytest.mark.e2e
    def test_default_contract_by_url(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--target-url probes the default contract."""
        with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as server:
            code = main(["probe", "--target-url", server.url, "--question", "q", "--k", "3"])
        out = capsys.readouterr().out
        assert 0 == code
        assert f"POST {server.url}" in out
        assert '{"question": "q", "top_k": 3}' in out
        assert "ids        (default contract)" in out

    @pytest.mark.e2e
    def test_mapping_failure_exits_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A mapping that matches nothing: the raw response is shown, then one error line."""
        with LoopbackServer(lambda _r: Reply(body={"hits": [{"id": "a"}]})) as server:
            config = tmp_path / "t.toml"
            config.write_text(
                f'[[targets]]\nurl = "{server.url}"\n[targets.response]\nids = "results[].id"\n',
                encoding="utf-8",
            )
            code = main(["probe", "--target-config", str(config), "--question", "q"])
        captured = capsys.readouterr()
        assert 1 == code
        assert '"hits"' in captured.out
        assert [
            "evaluator: error: probe failed (bad_response): response.ids expression "
            '"results[].id" matched nothing (null)'
        ] == captured.err.splitlines()

    def test_callable_target(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An in-process target shows its mapped fields too."""
        module = types.ModuleType("probe_fake_rag")

        def answer(case: Case, k: int) -> dict[str, object]:
            return {"answer": case.question, "retrieved": [{"id": "x"}] * k}

        module.answer = answer  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "probe_fake_rag", module)
        code = main(["probe", "--target", "probe_fake_rag:answer", "--question", "hi", "--k", "1"])
        out = capsys.readouterr().out
        assert 0 == code
        assert 'answer     (default contract)\n             -> "hi"' in out

    def test_nothing_to_ask(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``evaluator probe`` without a question or a dataset exits 1 saying what to pass."""
        code = main(["probe", "--target-url", "http://127.0.0.1:9/rag"])
        assert 1 == code
        assert "pass --question TEXT or --dataset FILE" in capsys.readouterr().err


@pytest.mark.e2e
class TestRunDiagnosis:
    """`evaluator run` whose mapping matched nothing on every case: exit 1 naming it."""

    def test_wrong_ids_expression(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A run whose ids expression fails on every response ends in one line naming the
        failure and the expression to fix, and still writes its report."""
        with LoopbackServer(lambda _r: Reply(body={"hits": [{"id": "refund-policy"}]})) as server:
            config = _example(tmp_path, "search-api.toml", server.url)
            text = config.read_text(encoding="utf-8").replace(
                'ids = "[].id"', 'ids = "results[].id"'
            )
            text = text.replace('scores = "[].score"\n', "").replace('texts = "[].text"\n', "")
            config.write_text(text, encoding="utf-8")
            report = tmp_path / "report.json"
            code = main(["run", "--config", str(config), "--output", str(report)])
        err = capsys.readouterr().err
        assert 1 == code
        assert 1 == len(err.splitlines())
        assert "response mapping failed on all 2 case(s) that got a response" in err
        assert 'fix response.ids = "results[].id"' in err
        data = json.loads(report.read_text(encoding="utf-8"))
        assert ["refund", "shipping"] == [c["id"] for c in data["cases"]]

    def test_default_contract_mismatch(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A bare-list endpoint run without a mapping is told to add one."""
        with LoopbackServer(lambda _r: Reply(body=[{"id": "a"}])) as server:
            config = _example(tmp_path, "default-contract.toml", server.url)
            code = main(["run", "--config", str(config), "--output", str(tmp_path / "r.json")])
        err = capsys.readouterr().err
        assert 1 == code
        assert "follows the default contract" in err
        assert "[targets.response]" in err

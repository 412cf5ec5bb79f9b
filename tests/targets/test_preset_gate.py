"""The ``openai-chat`` preset configured exactly as docs/streaming.md shows passes its own
gate against an unchanged service: its citations are not mapped, so citation metrics are
n/a (with a warning), not a precision of 0.17 that fails the gates file's floor. And a
mapping typo that only an empty hit list "satisfied" stops ``run`` with exit 1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaluator.cli import main
from tests.support.loopback import LoopbackServer, Reply
from tests.support.streams import Chunk, StreamServer, openai_chunks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "streaming.md"
REPO_GATES = Path(__file__).resolve().parents[2] / "config" / "gates.toml"

GOLDEN = [
    {
        "id": f"refund-{i}",
        "question": f"How long for a refund ({i})?",
        "relevant_ids": ["refund-policy"],
        "expected_facts": ["7 days"],
    }
    for i in range(5)
] + [{"id": "bitcoin", "question": "Do you accept Bitcoin?", "unanswerable": True}]


def _chat_block() -> str:
    """The TOML block of docs/streaming.md that configures the openai-chat preset."""
    blocks = re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return next(b for b in blocks if 'kind = "openai-chat"' in b)


def _stream(request: dict[str, Any]) -> list[Chunk]:
    """An OpenAI-compatible RAG service: cites inline ([1]), sources in the finish chunk."""
    question = request["messages"][0]["content"]
    if "Bitcoin" in question:
        parts = openai_chunks(["I don't know."], usage=(30, 4))
    else:
        parts = openai_chunks(
            ["Refunds are accepted ", "within 7 days [1]."],
            sources=["refund-policy", "faq"],
            usage=(120, 9),
        )
    return [Chunk(0, p) for p in parts]


def _config(tmp_path: Path, block: str, url: str) -> Path:
    block = re.sub(r'^url = ".*"$', f'url = "{url}"', block, count=1, flags=re.M)
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in GOLDEN), encoding="utf-8")
    name = re.search(r'^name = "(.*)"$', block, re.M)
    assert name is not None
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'reports_dir = "{tmp_path / "reports"}"\n\n{block}\n'
        f'[[jobs]]\ntarget = "{name.group(1)}"\ndataset = "{golden}"\n',
        encoding="utf-8",
    )
    return config


@pytest.mark.e2e
def _without_latency(path: Path) -> str:
    """The gates file with its latency tables left out: two runs a moment apart on a shared
    machine differ in P95 by load alone, and what is judged here is quality."""
    kept: list[str] = []
    skipping = False
    for line in path.read_text("utf-8").splitlines():
        if line.startswith("[rules."):
            skipping = line.rstrip("]").endswith("_seconds")
        if not skipping:
            kept.append(line)
    return "\n".join(kept) + "\n"


@pytest.mark.e2e
def test_docs_preset_passes_its_own_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented chat preset, streamed, runs twice and the two reports pass the
    repository's own gates."""
    monkeypatch.setenv("CHAT_API_TOKEN", "t0ken-of-the-preset-test")
    with StreamServer(_stream) as server:
        config = _config(tmp_path, _chat_block(), server.url)
        baseline, candidate = tmp_path / "baseline.json", tmp_path / "candidate.json"
        assert 0 == main(["run", "--config", str(config), "--output", str(baseline)])
        err = capsys.readouterr().err
        assert 0 == main(["run", "--config", str(config), "--output", str(candidate)])
        capsys.readouterr()
        gates = tmp_path / "gates.toml"
        gates.write_text(_without_latency(REPO_GATES), "utf-8")
        code = main(
            [
                "gate",
                "--config",
                str(config),
                "--gates",
                str(gates),
                "--baseline",
                str(baseline),
                "--candidate",
                str(candidate),
            ]
        )
    out = capsys.readouterr().out
    assert "citations are not mapped, so citation metrics are n/a" in err
    assert "citation_precision: not applicable" in out
    assert 0 == code, out
    report = json.loads(baseline.read_text(encoding="utf-8"))
    assert report["summary"]["citation_precision"] is None
    assert report["summary"]["recall_at_k"] == 1.0


@pytest.mark.e2e
def test_typo_that_an_empty_hit_list_satisfies_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ids = "sources[].idd"``: five cases fail on it; the unanswerable case's empty list
    "matches". That is still a broken mapping: exit 1 naming the expression."""

    def reply(request: dict[str, Any]) -> Reply:
        sources = [] if "Bitcoin" in request["question"] else [{"id": "refund-policy"}]
        return Reply(body={"answer": "7 days", "sources": sources})

    with LoopbackServer(reply) as server:
        block = (
            f'[[targets]]\nname = "typo"\nurl = "{server.url}"\n\n'
            f'[targets.response]\nids = "sources[].idd"\nanswer = "answer"\n'
        )
        config = _config(tmp_path, block, server.url)
        code = main(["run", "--config", str(config), "--output", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert 1 == code
    assert 'response.ids = "sources[].idd"' in err
    assert "5 case(s) that returned anything (1 returned no ids)" in err


@pytest.mark.e2e
def test_some_mapping_failures_warn_with_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mapping that failed on some cases only: run exits 0 but warns with the path."""

    def reply(request: dict[str, Any]) -> Reply:
        if "(3)" in request["question"]:
            return Reply(body={"answer": "7 days", "sources": [{"doc": "x"}]})
        return Reply(body={"answer": "7 days", "sources": [{"id": "refund-policy"}]})

    with LoopbackServer(reply) as server:
        block = (
            f'[[targets]]\nname = "flaky-shape"\nurl = "{server.url}"\n\n'
            f'[targets.response]\nids = "sources[].id"\nanswer = "answer"\n'
        )
        config = _config(tmp_path, block, server.url)
        code = main(["run", "--config", str(config), "--output", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert 0 == code
    assert "the response mapping failed on 1 of 6 case(s)" in err
    assert 'response.ids = "sources[].id"' in err


@pytest.mark.e2e
def test_milliseconds_read_as_seconds_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stage timings in milliseconds, declared as seconds: run and probe warn."""

    def reply(_request: dict[str, Any]) -> Reply:
        body = {
            "answer": "7 days",
            "sources": [{"id": "refund-policy"}],
            "took": {"retrieve": 120, "generate": 340},
        }
        return Reply(body=body)

    with LoopbackServer(reply) as server:
        block = (
            f'[[targets]]\nname = "ms"\nurl = "{server.url}"\n\n'
            f'[targets.response]\nids = "sources[].id"\nanswer = "answer"\ntimings = "took"\n'
        )
        config = _config(tmp_path, block, server.url)
        assert 0 == main(["run", "--config", str(config), "--output", str(tmp_path / "r.json")])
        run_err = capsys.readouterr().err
        assert 0 == main(["probe", "--config", str(config), "--question", "How long?"])
        probe = capsys.readouterr()
    assert "these look like milliseconds: set timings_unit" in run_err
    assert "stage timings exceed the measured latency many times over in 6 of 6" in run_err
    # probe's warnings are warnings: on stderr, as run's are, never in its stdout
    warnings = [line for line in probe.err.splitlines() if line.startswith("evaluator: warning:")]
    assert 2 == len(warnings), probe.err
    assert "stage 'generate' took 340s" in warnings[1]
    assert "these look like milliseconds" in warnings[1]
    assert "citations are not mapped, so citation metrics are n/a" in warnings[0]
    assert "warning" not in probe.out


def test_check_warns_about_a_preset_without_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evaluator check` on an openai-chat target without response.ids: ok (exit 0), with
    warnings that retrieval says nothing and citations are n/a."""
    block = (
        '[[targets]]\nname = "bare"\nkind = "openai-chat"\n'
        'url = "http://127.0.0.1:9/v1/chat/completions"\nmodel = "m"\n'
    )
    config = _config(tmp_path, block, "http://127.0.0.1:9/v1/chat/completions")
    assert 0 == main(["check", "--config", str(config)])
    out = capsys.readouterr().out
    assert "warn  target 'bare': no response.ids: the openai-chat preset returns no ids" in out
    assert "warn  target 'bare': citations are not mapped" in out
    assert out.rstrip().endswith("configuration ok; nothing was sent to any target")


@pytest.mark.e2e
def test_a_preset_without_ids_scores_retrieval_na(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An openai-chat target without response.ids ranks nothing: its retrieval metrics are
    n/a (null), not 0 (and not 1 for an unanswerable case's empty list), `run` warns as
    `check` does, and the gate's retrieval rules are not applicable."""

    def reply(request: dict[str, Any]) -> Reply:
        question = request["messages"][0]["content"]
        answer = "I don't know." if "Bitcoin" in question else "Refunds within 7 days."
        return Reply(body={"choices": [{"message": {"content": answer}}]})

    with LoopbackServer(reply) as server:
        block = f'[[targets]]\nname = "bare"\nkind = "openai-chat"\nurl = "{server.url}"\n'
        block += 'model = "m"\n'
        config = _config(tmp_path, block, server.url)
        baseline = tmp_path / "baseline.json"
        assert 0 == main(["run", "--config", str(config), "--output", str(baseline)])
        err = capsys.readouterr().err
    # the report judged against itself: what is asserted is how the gate treats null
    # retrieval, not latency between two runs on a shared machine
    args = ["--baseline", str(baseline), "--candidate", str(baseline)]
    code = main(["gate", "--config", str(config), *args])
    out = capsys.readouterr().out
    assert "no response.ids: the openai-chat preset returns no ids" in err
    report = json.loads(baseline.read_text(encoding="utf-8"))
    for name in ("recall_at_k", "mrr", "ndcg_at_k"):
        assert report["summary"][name] is None
        assert {c[name] for c in report["cases"]} == {None}
    assert report["summary"]["answer_accuracy"] == 1.0
    assert "recall_at_k: not applicable" in out
    assert 0 == code, out

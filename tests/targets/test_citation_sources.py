"""Citations where real services put them, against loopback services that put them there:
inline markers in the answer (``[1]``, ``[1][3]``, ``[1, 3]``, ``[^1]``, ``【1】``,
``[refund-policy]``, a pattern of one's own), OpenAI chat ``annotations[]``, the Responses
API's ``output[].content[].annotations[]`` (the ``openai-responses`` preset, plain and
streamed); and a target whose citations are not mapped scores them n/a, not 0."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaluator.cli import main
from evaluator.config import HttpTargetConfig
from evaluator.models import Case, Retrieved, TargetResponse
from evaluator.scoring import ScoringSettings, score_case
from evaluator.targets.markers import MAX_MARKERS, compile_markers
from tests.support.loopback import LoopbackServer, Reply
from tests.support.streams import Chunk, StreamServer, sse
from tests.targets.helpers import dataset, query_once, run_config

SOURCES = [{"id": "faq"}, {"id": "shipping"}, {"id": "refund-policy"}]


class TestMarkers:
    @pytest.mark.parametrize(
        ("answer", "expected"),
        [
            ("Within 7 days [1].", (1,)),
            ("Within 7 days [1][3].", (1, 3)),
            ("Within 7 days [1, 3].", (1, 3)),
            ("Within 7 days.[^3]\n\n[^3]: the policy", (3, 3)),
            ("七天内可以申请【3】。", (3,)),
            ("Within 7 days【3†source】.", (3,)),
            ("No markers here, [not a number].", ()),
            ("A link [text](http://x) and [2024-01-01]", ()),
        ],
    )
    def test_numbers(self, answer: str, expected: tuple[int, ...]) -> None:
        """The ``numbers`` marker style reads the answer's bracketed numbers as citation
        positions, in order."""
        assert expected == compile_markers("numbers")(answer)

    @pytest.mark.parametrize(
        ("answer", "expected"),
        [
            ("Within 7 days [refund-policy].", ("refund-policy",)),
            ("See [refund-policy, faq].", ("refund-policy", "faq")),
            ("See [3].", ("3",)),  # in the ids style, a number is an id
            ("A [link](http://x) is not a citation.", ()),
        ],
    )
    def test_ids(self, answer: str, expected: tuple[str, ...]) -> None:
        """The ``ids`` marker style reads the answer's bracketed document ids, in order."""
        assert expected == compile_markers("ids")(answer)

    def test_own_pattern(self) -> None:
        """A regex of one's own: its group split on commas; digits are positions."""
        markers = compile_markers(r"\{\{cite:([^}]+)\}\}")
        assert (3, "faq") == markers("7 days {{cite:3}} {{cite:faq}}")

    def test_bad_pattern_names_the_setting(self) -> None:
        """A marker pattern that does not compile, or has more than one group, is refused naming
        the setting."""
        with pytest.raises(ValueError, match="citation_markers"):
            compile_markers("([a-z]")
        with pytest.raises(ValueError, match="2 groups"):
            compile_markers(r"(\d)(\d)")

    def test_bounded(self) -> None:
        """A million markers in one answer: at most MAX_MARKERS are read."""
        assert MAX_MARKERS == len(compile_markers("numbers")("[1]" * 1_000_000))

    def test_config_rejects_a_bad_pattern(self) -> None:
        """A target configuration with a bad marker pattern is refused naming
        ``citation_markers``."""
        with pytest.raises(ValueError, match="citation_markers"):
            HttpTargetConfig(url="http://h/rag", response={"ids": "a", "citation_markers": "("})


def _chat(answer: str, **message: Any) -> Reply:
    return Reply(
        body={
            "choices": [
                {
                    "message": {"role": "assistant", "content": answer, **message},
                    "finish_reason": "stop",
                }
            ],
            "usage": None,
            "sources": SOURCES,
        }
    )


@pytest.mark.e2e
class TestInlineOverHttp:
    def test_numbered_markers_are_positions(self) -> None:
        """Numbered markers in a chat answer become the case's citations as positions."""
        with LoopbackServer(lambda _r: _chat("Within 7 days [3][1]."), path="/v1/chat") as srv:
            config = HttpTargetConfig(
                url=srv.url,
                kind="openai-chat",
                model="m",
                response={"ids": "sources[].id", "citation_markers": "numbers"},
            )
            response = query_once(config)
        assert (3, 1) == response.citations

    def test_id_markers_and_a_field_together(self) -> None:
        """Markers follow the citations of the field when both are mapped."""
        body = {"answer": "7 days [refund-policy]", "hits": SOURCES, "cites": ["faq"]}
        with LoopbackServer(lambda _r: Reply(body=body)) as srv:
            config = HttpTargetConfig(
                url=srv.url,
                response={
                    "ids": "hits[].id",
                    "answer": "answer",
                    "citations": "cites",
                    "citation_markers": "ids",
                },
            )
            response = query_once(config)
        assert ("faq", "refund-policy") == response.citations

    def test_streamed_answer_markers(self) -> None:
        """The markers are read from the assembled answer, split across events."""
        base: dict[str, Any] = {"object": "chat.completion.chunk", "usage": None}
        events: list[dict[str, Any]] = [
            {**base, "choices": [{"delta": {"content": p}, "finish_reason": None}]}
            for p in ("Within 7 days [", "3", "].")
        ]
        events.append(
            {**base, "choices": [{"delta": {}, "finish_reason": "stop"}], "sources": SOURCES}
        )
        with StreamServer(lambda _r: [Chunk(0, p) for p in sse(*events)]) as srv:
            config = HttpTargetConfig(
                url=srv.url,
                kind="openai-chat",
                model="m",
                stream=True,
                response={"ids": "sources[].id", "citation_markers": "numbers"},
            )
            response = query_once(config)
        assert ("Within 7 days [3].", (3,)) == (response.answer, response.citations)


@pytest.mark.e2e
class TestChatAnnotations:
    def test_url_citations(self) -> None:
        """OpenAI chat completions' url_citation annotations, evidence identified by url."""
        annotations = [
            {
                "type": "url_citation",
                "url_citation": {
                    "url": "https://kb/refund",
                    "title": "Refunds",
                    "start_index": 0,
                    "end_index": 6,
                },
            },
        ]
        body = _chat("7 days", annotations=annotations).body
        assert isinstance(body, dict)
        body["sources"] = [{"url": "https://kb/faq"}, {"url": "https://kb/refund"}]
        with LoopbackServer(lambda _r: Reply(body=body), path="/v1/chat") as srv:
            config = HttpTargetConfig(
                url=srv.url,
                kind="openai-chat",
                model="m",
                response={
                    "ids": "sources[].url",
                    "citations": "choices[0].message.annotations[].url_citation.url",
                },
            )
            response = query_once(config)
        assert ("https://kb/refund",) == response.citations


@pytest.mark.e2e
class TestChatFileAndUrlAnnotations:
    def test_both_kinds(self) -> None:
        """file_citation (file id) and url_citation (url) annotations, with the expression
        docs/targets.md gives for them."""
        annotations = [
            {
                "type": "file_citation",
                "text": "【4:0†source】",
                "file_citation": {"file_id": "f-1"},
            },
            {"type": "url_citation", "url_citation": {"url": "https://kb/refund"}},
        ]
        body = _chat("7 days", annotations=annotations).body
        assert isinstance(body, dict)
        body["sources"] = [{"id": "https://kb/refund"}, {"id": "f-1"}]
        page = (Path(__file__).resolve().parents[2] / "docs" / "targets.md").read_text("utf-8")
        found = re.search(r'`citations = "(choices\[0\][^"]*map[^"]*)"`', page)
        assert found is not None
        expression = found.group(1).replace("\\|", "|")
        with LoopbackServer(lambda _r: Reply(body=body), path="/v1/chat") as srv:
            config = HttpTargetConfig(
                url=srv.url,
                kind="openai-chat",
                model="m",
                response={"ids": "sources[].id", "citations": expression},
            )
            response = query_once(config)
        assert ("f-1", "https://kb/refund") == response.citations


def _responses_body(question: str) -> dict[str, Any]:
    """A Responses API answer with file search: results, output text, file citations."""
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "file_search_call",
                "id": "fs_1",
                "status": "completed",
                "queries": [question],
                "results": [
                    {
                        "file_id": "file-refund",
                        "filename": "refund.md",
                        "score": 0.9,
                        "text": "Refunds within 7 days.",
                    },
                    {"file_id": "file-faq", "filename": "faq.md", "score": 0.4, "text": "FAQ"},
                ],
            },
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": "Refunds are accepted within 7 days.",
                        "annotations": [
                            {
                                "type": "file_citation",
                                "file_id": "file-refund",
                                "filename": "refund.md",
                                "index": 34,
                            },
                        ],
                    }
                ],
            },
        ],
        "usage": {"input_tokens": 120, "output_tokens": 9, "total_tokens": 129},
    }


class TestResponsesPreset:
    @pytest.mark.e2e
    def test_plain(self) -> None:
        """The openai-responses preset sends the question as ``input`` without streaming and
        reads the answer and sources of the Responses API body."""

        def reply(request: dict[str, Any]) -> Reply:
            return Reply(body=_responses_body(request["input"]))

        with LoopbackServer(reply, path="/v1/responses", question_of=lambda r: r["input"]) as srv:
            config = HttpTargetConfig(url=srv.url, kind="openai-responses", model="rag")
            response = query_once(config)
            sent = srv.requests[0]
        assert {"model": "rag", "input": "How long?", "stream": False} == {
            k: sent[k] for k in ("model", "input", "stream")
        }
        assert ["file_search_call.results"] == sent["include"]
        assert "Refunds are accepted within 7 days." == response.answer
        assert ("file-refund", "file-faq") == response.ranked_ids
        assert "Refunds within 7 days." == response.retrieved[0].text
        assert ("file-refund",) == response.citations
        d = response.delivery
        assert d is not None and (120, 9) == (d.input_tokens, d.output_tokens)

    @pytest.mark.e2e
    @pytest.mark.parametrize("end", ["response.completed", "response.incomplete"])
    def test_streamed(self, end: str) -> None:
        """Streamed: the output_text deltas are the answer; response.completed (or
        .incomplete, cut at the token limit) carries the fields and ends the stream: there
        is no [DONE] in this API."""
        final = _responses_body("How long?")

        def events(_r: dict[str, Any]) -> list[Chunk]:
            out = [f"event: response.created\ndata: {json.dumps({'type': 'response.created'})}\n\n"]
            for piece in ("Refunds are accepted ", "within 7 days."):
                data = {"type": "response.output_text.delta", "delta": piece}
                out.append(f"event: response.output_text.delta\ndata: {json.dumps(data)}\n\n")
            done = {"type": end, "response": final}
            out.append(f"event: {end}\ndata: {json.dumps(done)}\n\n")
            return [Chunk(0, e.encode()) for e in out]

        with StreamServer(events, path="/v1/responses") as srv:
            config = HttpTargetConfig(url=srv.url, kind="openai-responses", model="m", stream=True)
            response = query_once(config)
        assert "Refunds are accepted within 7 days." == response.answer
        assert ("file-refund",) == response.citations
        assert ("file-refund", "file-faq") == response.ranked_ids
        d = response.delivery
        assert d is not None and d.streamed and (120, 9) == (d.input_tokens, d.output_tokens)

    @pytest.mark.parametrize(
        ("stream", "prefix"),
        [(True, "response."), ("true", "response."), ("false", "output"), (False, "output")],
    )
    def test_streamed_mapping_reads_the_completed_event(self, stream: object, prefix: str) -> None:
        """The streamed preset's fields sit under "response" (a stream flag from the
        environment is a string)."""
        config = HttpTargetConfig.model_validate(
            {
                "url": "http://h/v1/responses",
                "kind": "openai-responses",
                "model": "m",
                "stream": stream,
            }
        )
        assert config.response is not None and config.response.ids.startswith(prefix)

    @pytest.mark.e2e
    def test_run_scores_citations(self) -> None:
        """A run through the preset scores citation precision from the annotations."""
        with LoopbackServer(
            lambda r: Reply(body=_responses_body(r["input"])),
            path="/v1/responses",
            question_of=lambda r: r["input"],
        ) as srv:
            config = HttpTargetConfig(url=srv.url, kind="openai-responses", model="m")
            report, _ = run_config(config, _file_dataset())
        assert 1.0 == report.summary.get("citation_precision")


def _file_dataset() -> Any:
    base = dataset(["How long?"])
    cases = tuple(
        Case(
            id=c.id,
            question=c.question,
            relevance={"file-refund": 1},
            expected_facts=c.expected_facts,
        )
        for c in base.questions
    )
    return type(base)(path=base.path, name=base.name, cases=cases, content_hash=base.content_hash)


class TestNotMapped:
    def test_scores_are_na(self) -> None:
        """ScoringSettings(citations=False): precision, recall and validity are None."""
        case = Case(id="a", question="q", relevance={"d": 1}, expected_facts=(("x",),))
        response = TargetResponse(retrieved=(Retrieved("d"),), answer="x")
        scores = score_case(case, response, 5, ScoringSettings(citations=False))
        assert (None, None, None) == (
            scores.citation_precision,
            scores.citation_recall,
            scores.citation_valid,
        )
        assert scores.answer_correct is True

    @pytest.mark.e2e
    def test_preset_without_citations_is_na_in_a_run(self) -> None:
        """openai-chat as docs/streaming.md shows it (no citations mapped): the run's
        citation precision is n/a, not 0."""
        with LoopbackServer(lambda _r: _chat("Within 7 days [3]."), path="/v1/chat") as srv:
            config = HttpTargetConfig(
                url=srv.url, kind="openai-chat", model="m", response={"ids": "sources[].id"}
            )
            assert not config.reports_citations
            report, _ = run_config(config, dataset(["a", "b"]))
        assert report.summary.scored_count == 2
        assert report.summary.get("citation_precision") is None
        assert report.summary.get("recall_at_k") == 1.0

    def test_mapped_or_default_contract_reports(self) -> None:
        """A target reports citations under the default contract, with mapped citation markers,
        or with the Responses preset."""
        assert HttpTargetConfig(url="http://h/rag").reports_citations
        marked = HttpTargetConfig(
            url="http://h/rag",
            kind="openai-chat",
            model="m",
            response={"ids": "a", "citation_markers": "numbers"},
        )
        assert marked.reports_citations
        responses = HttpTargetConfig(url="http://h/r", kind="openai-responses", model="m")
        assert responses.reports_citations


@pytest.mark.e2e
def test_probe_shows_the_markers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`evaluator probe` names the marker style as the citations' source, and what it found."""
    body = {"answer": "7 days [2][1]", "hits": SOURCES}
    with LoopbackServer(lambda _r: Reply(body=body)) as srv:
        config = tmp_path / "t.toml"
        config.write_text(
            f'[[targets]]\nname = "m"\nurl = "{srv.url}"\n[targets.response]\n'
            f'ids = "hits[].id"\nanswer = "answer"\ncitation_markers = "numbers"\n',
            encoding="utf-8",
        )
        assert 0 == main(["probe", "--target-config", str(config), "--question", "q"])
    out = capsys.readouterr().out
    assert "citations  markers 'numbers' in the answer\n             -> [2, 1]" in out
    assert "citations are not mapped" not in out


class TestMistypedMarkers:
    """A ``citation_markers`` pattern that cannot name a marker is refused, and one that
    finds no marker in answers that hold bracketed markers is reported."""

    @pytest.mark.parametrize(
        ("style", "hint"),
        [
            ("number", " (did you mean 'numbers'?)"),
            ("id", " (did you mean 'ids'?)"),
            (r"\[\d+\]", ""),
        ],
    )
    def test_a_pattern_without_a_group_is_refused(self, style: str, hint: str) -> None:
        """A pattern with no group (a mistyped style compiles as one) is an error naming
        the setting, where it silently scored the wrong citations."""
        with pytest.raises(ValueError) as info:
            compile_markers(style)
        assert (
            f"citation_markers {style!r} has no group: the pattern needs exactly one group "
            f"around the marker{hint}"
        ) == str(info.value)

    def test_check_refuses_the_mistyped_style(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`evaluator check` fails on ``citation_markers = "number"``, naming the field."""
        config = tmp_path / "evaluator.toml"
        config.write_text(
            '[[targets]]\nname = "m"\nurl = "http://127.0.0.1:9/rag"\n[targets.response]\n'
            'ids = "hits[].id"\nanswer = "answer"\ncitation_markers = "number"\n',
            encoding="utf-8",
        )
        assert 1 == main(["check", "--config", str(config)])
        err = capsys.readouterr().err
        assert "citation_markers" in err and "did you mean 'numbers'?" in err

    @pytest.mark.e2e
    def test_run_and_probe_say_when_no_marker_was_found(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A pattern of one group that matches nothing while the answers cite with [n]:
        `run` and `probe` warn, naming the setting and an example marker."""
        golden = tmp_path / "golden.jsonl"
        golden.write_text(
            "".join(
                json.dumps({"id": q, "question": q, "relevant_ids": ["faq"]}) + "\n" for q in "ab"
            ),
            encoding="utf-8",
        )
        body = {"answer": "Within 7 days [3].", "hits": SOURCES}
        with LoopbackServer(lambda _r: Reply(body=body)) as srv:
            toml = tmp_path / "t.toml"
            toml.write_text(
                f'[[targets]]\nname = "m"\nurl = "{srv.url}"\n[targets.response]\n'
                f'ids = "hits[].id"\nanswer = "answer"\n'
                f"citation_markers = '\\{{\\{{cite:([^}}]+)\\}}\\}}'\n\n"
                f'[[jobs]]\ntarget = "m"\ndataset = "{golden}"\n',
                encoding="utf-8",
            )
            assert 0 == main(["run", "--config", str(toml), "--output", str(tmp_path / "r.json")])
            run_err = capsys.readouterr().err
            assert 0 == main(["probe", "--config", str(toml), "--question", "q"])
            probe_err = capsys.readouterr().err
        expected = (
            "citation_markers '\\\\{\\\\{cite:([^}]+)\\\\}\\\\}' found no marker in any of 2 "
            "answer(s), yet 2 hold bracketed markers such as '[3]': citation metrics count no "
            "citation from the answer; set the style that matches them ('numbers' for [1], "
            "'ids' for [doc-id])"
        )
        assert f"evaluator: warning: target 'm': {expected}\n" in run_err
        probe_expected = expected.replace("2 answer(s), yet 2 hold", "1 answer(s), yet 1 hold")
        assert f"evaluator: warning: {probe_expected}\n" in probe_err


def _without_file_search(question: str) -> dict[str, Any]:
    """A Responses API answer of a model without the file search tool: no
    ``file_search_call`` item, the message alone."""
    body = _responses_body(question)
    body["output"] = [item for item in body["output"] if item["type"] != "file_search_call"]
    return body


@pytest.mark.e2e
@pytest.mark.parametrize("stream", [False, True])
def test_responses_without_file_search_score_retrieval_na(stream: bool) -> None:
    """A Responses API answer without file search reports no retrieval: its recall, MRR and
    nDCG are n/a (null), not 0, while its answer is scored; one with file search ranks."""

    def plain(request: dict[str, Any]) -> Reply:
        return Reply(body=_without_file_search(request["input"]))

    def events(request: dict[str, Any]) -> list[Chunk]:
        delta = {"type": "response.output_text.delta", "delta": "Refunds within 7 days."}
        final = {"type": "response.completed", "response": _without_file_search("How long?")}
        return [
            Chunk(0, f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode())
            for e in (delta, final)
        ]

    server: LoopbackServer | StreamServer = (
        StreamServer(events, path="/v1/responses")
        if stream
        else LoopbackServer(plain, path="/v1/responses", question_of=lambda r: r["input"])
    )
    with server as srv:
        config = HttpTargetConfig(url=srv.url, kind="openai-responses", model="m", stream=stream)
        report, _ = run_config(config, dataset(["How long?"]))
    (case,) = report.cases
    scores = case.scores
    assert scores is not None
    assert (None, None, None) == (scores.recall_at_k, scores.mrr, scores.ndcg_at_k)
    assert scores.answer_correct is True
    assert report.summary.get("recall_at_k") is None

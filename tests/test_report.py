"""Run reports: JSON round trip, atomic writes, read errors and the configuration hash."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from evaluator import __version__
from evaluator.dataset import load_dataset
from evaluator.errors import EvaluatorError, ReportError
from evaluator.models import (
    Case,
    CaseError,
    CaseRecord,
    CaseScores,
    Dataset,
    Dialogue,
    Retrieved,
    TargetResponse,
)
from evaluator.report import (
    SCHEMA_VERSION,
    RunReport,
    compute_config_hash,
    encode_report,
    format_timestamp,
    parse_timestamp,
    read_report,
    report_from_dict,
    report_to_dict,
    write_json_atomic,
    write_report,
)
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.summary import summarise
from tests.support.records import replace

GRADED = CaseRecord(
    case=Case(
        id="refund-deadline",
        question="退款申请有期限吗？",
        relevance={"refund-policy": 2, "faq": 1},
        expected_facts=(("七天", "7天"), ("原路退回",)),
        unanswerable=False,
        tags=("refund", "easy"),
    ),
    outcome=CaseScores(
        recall_at_k=1.0,
        mrr=1.0,
        ndcg_at_k=0.8,
        citation_precision=1.0,
        citation_recall=1.0,
        citation_valid=True,
        answer_correct=True,
        fact_recall=1.0,
        refused=False,
    ),
    ranked_ids=("faq", "refund-policy", "other"),
    answer="七天内可申请，原路退回。[2]",
    citations=(2, "faq"),
    latency_seconds=0.42,
    stage_seconds={"embedding": 0.011, "model": 0.3},
    attempts=2,
    texts={"faq": "七天内可申请。", "refund-policy": "原路退回……"},
    cut_texts=frozenset({"refund-policy"}),
)
BINARY_RETRIEVAL_ONLY = CaseRecord(
    case=Case(
        id="shipping",
        question="运费怎么算？",
        relevance={"shipping": 1},
        expected_facts=(),
        unanswerable=False,
        tags=(),
    ),
    outcome=CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0),
    ranked_ids=("shipping",),
    answer=None,
    citations=(),
    latency_seconds=0.1,
    stage_seconds={},
)
UNANSWERABLE = CaseRecord(
    case=Case(
        id="ceo-birthday",
        question="CEO 的生日是哪天？",
        relevance={},
        expected_facts=(),
        unanswerable=True,
        tags=("refund",),
    ),
    outcome=CaseScores(
        recall_at_k=1.0,
        mrr=1.0,
        ndcg_at_k=1.0,
        citation_precision=1.0,
        citation_valid=True,
        answer_correct=True,
        refused=True,
    ),
    ranked_ids=(),
    answer="证据不足，无法回答。",
    citations=(),
    latency_seconds=0.2,
    stage_seconds={"model": 0.15},
)
FAILED = CaseRecord(
    case=Case(
        id="refund-time",
        question="退款多久到账？",
        relevance={"refund-policy": 1},
        expected_facts=(("3-5 个工作日",),),
        unanswerable=False,
        tags=("refund",),
    ),
    outcome=CaseError(kind="http_status", message="HTTP 503 from host:1", status=503),
    ranked_ids=(),
    answer=None,
    citations=(),
    latency_seconds=1.5,
    stage_seconds={},
    attempts=3,
)
CASES = (GRADED, BINARY_RETRIEVAL_ONLY, UNANSWERABLE, FAILED)


def _report(cases: tuple[CaseRecord, ...] = CASES) -> RunReport:
    return RunReport(
        run_id="abc123",
        generated_at=parse_timestamp("2025-01-02T03:04:05.678Z"),
        config_hash="0123456789abcdef",
        dataset_hash="f" * 64,
        target="rag:8000",
        dataset="example",
        k=5,
        duration_seconds=2.5,
        summary=summarise(cases),
        cases=cases,
    )


def _hash(**changes: Any) -> str:
    kwargs: dict[str, Any] = {
        "dataset_hash": "a" * 64,
        "target_identity": {"kind": "http", "url": "http://rag:8000/query", "method": "POST"},
        "k": 5,
        "scoring": {"refusal_phrases": ["无法回答", "cannot answer"]},
    }
    kwargs.update(changes)
    return compute_config_hash(**kwargs)


class TestRoundTrip:
    """A report read back from its JSON equals the report written."""

    def test_dict_round_trip(self) -> None:
        """Graded relevance, alternative facts, citations of both kinds and errors survive."""
        report = _report()
        assert report == report_from_dict(json.loads(json.dumps(report_to_dict(report))))

    def test_file_round_trip(self, tmp_path: Path) -> None:
        """write_report then read_report gives an equal report, summary and by_tag included."""
        report = _report()
        path = tmp_path / "reports" / "run.json"
        write_report(report, path)
        assert report == read_report(path)

    def test_empty_report_round_trip(self, tmp_path: Path) -> None:
        """A report of no case (null metrics) round-trips too."""
        report = _report(())
        write_report(report, tmp_path / "empty.json")
        assert report == read_report(tmp_path / "empty.json")

    def test_a_run_reads_back_as_itself_but_for_file_lines(self, tmp_path: Path) -> None:
        """A real run over a golden-set file, written and read back, is the same report. The
        one thing a report does not keep is where each case stood in its file (``line``, and
        whether its relevance was written as grades): the read-back cases have the defaults."""
        dataset = load_dataset("evals/example.jsonl")
        assert all(c.line > 0 for c in dataset.cases)
        target = _StaticTarget({"kind": "callable", "spec": "tests:static"})
        report = asyncio.run(run_dataset(dataset, target, RunOptions(k=3)))
        write_report(report, tmp_path / "run.json")
        read = read_report(tmp_path / "run.json")

        assert all(r.case is c for r, c in zip(report.cases, dataset.cases, strict=True))
        no_lines = tuple(
            replace(r, case=replace(r.case, line=0, graded=False)) for r in report.cases
        )
        assert replace(report, cases=no_lines) == read

    def test_compact_and_indented_read_back_identically(self, tmp_path: Path) -> None:
        """The streamed compact file and an indented one (as older versions wrote) give the
        same report."""
        report = _report()
        compact, indented = tmp_path / "compact.json", tmp_path / "indented.json"
        write_report(report, compact)
        indented.write_text(json.dumps(report_to_dict(report), indent=2, ensure_ascii=False))
        assert report == read_report(compact) == read_report(indented)
        assert compact.stat().st_size < indented.stat().st_size

    def test_streamed_layout(self, tmp_path: Path) -> None:
        """Header first with ``cases`` last, then one case per line: the file is the JSON of
        :func:`report_to_dict`, and :func:`encode_report` gives the same bytes."""
        report = _report()
        path = tmp_path / "r.json"
        write_report(report, path)
        raw = path.read_bytes()
        lines = raw.decode().splitlines()
        assert lines[0].startswith('{"schema_version":1,')
        assert lines[0].endswith('"cases":[')
        assert len(lines) == 2 + len(report.cases)
        assert [json.loads(line.rstrip(","))["id"] for line in lines[1:-1]] == [
            c.id for c in report.cases
        ]
        assert lines[-1] == "]}"
        assert json.loads(raw) == report_to_dict(report)
        assert encode_report(report) == raw

    def test_delivery_fields_round_trip(self) -> None:
        """Streaming, usage, cost and trace fields are written when measured and read back,
        and the summary recomputed from them matches the one written."""

        streamed = replace(
            CASES[0],
            ttfb_seconds=0.01,
            ttft_seconds=0.05,
            tokens_per_second=40.0,
            input_tokens=15,
            output_tokens=6,
            cost=0.002,
            trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        )
        report = _report((streamed, *CASES[1:]))
        assert report.summary.p95_ttft_seconds == 0.05
        data = json.loads(json.dumps(report_to_dict(report)))
        assert data["cases"][0]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
        assert report == report_from_dict(data)

    def test_unknown_fields_are_skipped(self) -> None:
        """A newer writer's extra fields (per case or top level) do not stop the reader."""
        data = json.loads(json.dumps(report_to_dict(_report())))
        data["future_field"] = {"nested": [1, 2]}
        data["cases"][0]["a_future_case_field"] = 0.05
        assert _report() == report_from_dict(data)

    def test_json_shape(self) -> None:
        """Relevance and facts keep the golden-set shapes; a failed case has null scores."""
        cases = report_to_dict(_report())["cases"]
        graded, binary, failed = cases[0], cases[1], cases[3]
        assert {"refund-policy": 2, "faq": 1} == graded["relevant_ids"]
        assert [["七天", "7天"], "原路退回"] == graded["expected_facts"]
        assert [2, "faq"] == graded["citations"]
        assert ["shipping"] == binary["relevant_ids"]
        assert {"kind": "http_status", "message": "HTTP 503 from host:1", "status": 503} == failed[
            "error"
        ]
        assert [None] * 3 == [failed[m] for m in ("recall_at_k", "mrr", "answer_correct")]
        assert (3, None) == (failed["attempts"], graded["error"])
        assert {"faq": "七天内可申请。", "refund-policy": "原路退回……"} == graded["texts"]
        assert (["refund-policy"], None) == (graded["cut_texts"], graded["suspect_label"])

    def test_label_audit_counted(self) -> None:
        """The report counts checked and suspect labels; a suspect case carries the message."""
        wrong = replace(
            GRADED,
            case=replace(GRADED.case, id="mislabelled", expected_facts=(("三天",),)),
            cut_texts=frozenset(),
        )
        data = report_to_dict(_report((GRADED, wrong, FAILED)))

        assert {
            "checked": 2,
            "suspect": 1,
            "suspect_cases": [
                {
                    "id": "mislabelled",
                    "message": "suspect label: '三天' is in none of the relevant evidence",
                }
            ],
        } == data["label_audit"]
        assert (
            data["label_audit"]["suspect_cases"][0]["message"] == data["cases"][1]["suspect_label"]
        )

    def test_top_level_fields(self) -> None:
        """The report carries the top-level fields of docs/reports.md, with derived counts."""
        data = report_to_dict(_report())
        expected = {
            "schema_version": SCHEMA_VERSION,
            "generated_at": "2025-01-02T03:04:05.678Z",
            "config_hash": "0123456789abcdef",
            "target": "rag:8000",
            "dataset": "example",
            "k": 5,
            "case_count": 4,
            "error_count": 1,
            "evaluator_version": __version__,
        }
        assert expected == {key: data[key] for key in expected}
        assert 0.25 == data["summary"]["error_rate"]


class TestAtomicWrite:
    """Reports are written atomically: a failed write never damages the previous file."""

    def test_failed_write_keeps_previous_file(self, tmp_path: Path) -> None:
        """A NaN makes json.dump raise: the old report stays and no temp file is left."""
        path = tmp_path / "report.json"
        write_json_atomic({"ok": 1}, path)
        before = path.read_bytes()
        with pytest.raises(ValueError, match="JSON compliant"):
            write_json_atomic({"ok": 2, "bad": math.nan}, path)
        assert before == path.read_bytes()
        assert ["report.json"] == [p.name for p in tmp_path.iterdir()]

    def test_failed_report_write_keeps_previous_report(self, tmp_path: Path) -> None:
        """A report with a NaN latency cannot replace a good one."""
        path = tmp_path / "report.json"
        write_report(_report(), path)
        broken = replace(GRADED, latency_seconds=math.nan)
        with pytest.raises(ValueError):
            write_report(_report((broken,)), path)
        assert _report() == read_report(path)
        assert ["report.json"] == [p.name for p in tmp_path.iterdir()]

    def test_replaces_and_creates_folders(self, tmp_path: Path) -> None:
        """A write creates missing folders and replaces an existing file whole."""
        path = tmp_path / "a" / "b" / "out.json"
        write_json_atomic({"first": "一" * 1000}, path)
        write_json_atomic({"second": 2}, path)
        assert {"second": 2} == json.loads(path.read_text(encoding="utf-8"))
        assert ["out.json"] == [p.name for p in path.parent.iterdir()]

    def test_non_ascii_kept_readable(self, tmp_path: Path) -> None:
        """Chinese text is written as UTF-8, not escaped."""
        path = tmp_path / "r.json"
        write_json_atomic({"q": "退款"}, path)
        assert "退款" in path.read_text(encoding="utf-8")


class TestTimestamps:
    """generated_at is a datetime in memory and one string format on disk."""

    def test_written_as_utc_milliseconds_z(self) -> None:
        """Times are written in UTC with milliseconds and a Z."""
        at = datetime(2025, 1, 2, 4, 4, 5, 678000, tzinfo=timezone(timedelta(hours=1)))
        assert "2025-01-02T03:04:05.678Z" == format_timestamp(at)

    @pytest.mark.parametrize(
        "text",
        [
            "2025-01-02T03:04:05.678Z",
            "2025-01-02T03:04:05.678+00:00",
            "2025-01-02T04:04:05.678+01:00",
        ],
    )
    def test_read_back_in_any_offset_as_utc(self, text: str) -> None:
        """Times are read back in any offset as UTC."""
        assert datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC) == parse_timestamp(text)

    def test_a_time_without_offset_is_utc(self) -> None:
        """A time without an offset is UTC."""
        assert UTC == parse_timestamp("2025-01-02T03:04:05").tzinfo

    @pytest.mark.parametrize(
        "text",
        ["2025-01-02T04:04:05.678+01:00", "2025-01-02T03:04:05.678", "2025-01-02 03:04:05.678Z"],
    )
    def test_a_report_read_back_has_its_time_in_utc(self, text: str) -> None:
        """The header is decoded straight into RunHeader: any offset (or none) is UTC."""
        data = report_to_dict(_report())
        data["generated_at"] = text
        at = report_from_dict(data, "r.json").generated_at
        assert datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC) == at
        assert UTC == at.tzinfo

    def test_a_report_with_no_time_is_refused_naming_the_field(self) -> None:
        """A report whose time cannot be read is refused naming the field."""
        data = report_to_dict(_report())
        data["generated_at"] = "yesterday"
        with pytest.raises(ReportError, match="'generated_at' is not an ISO 8601 time"):
            report_from_dict(data, "r.json")


class TestReadErrors:
    """Unreadable or invalid reports raise ReportError with a one-line message."""

    def _write(self, tmp_path: Path, data: object) -> Path:
        path = tmp_path / "report.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def test_truncated(self, tmp_path: Path) -> None:
        """Half a report is reported as invalid JSON, naming the file, on one line."""
        path = tmp_path / "report.json"
        write_report(_report(), path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(ReportError) as info:
            read_report(path)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"{path}: not valid JSON")

    def test_empty_file(self, tmp_path: Path) -> None:
        """An empty file is not a report."""
        path = tmp_path / "report.json"
        path.write_bytes(b"")
        with pytest.raises(ReportError, match="not valid JSON"):
            read_report(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file names the path; ReportError is an EvaluatorError."""
        path = tmp_path / "nope.json"
        with pytest.raises(EvaluatorError, match="cannot read report") as info:
            read_report(path)
        assert isinstance(info.value, ReportError)
        assert str(path) in str(info.value)

    def test_not_an_object(self, tmp_path: Path) -> None:
        """A JSON list is not a report."""
        with pytest.raises(ReportError, match="expected a JSON object"):
            read_report(self._write(tmp_path, [1, 2]))

    def test_summary_is_derived_from_the_cases(self, tmp_path: Path) -> None:
        """A written summary that disagrees with the cases is not read: the summary read
        back is the one the cases give (the event loop's lag, a property of the run, kept)."""
        made = _report()
        data = report_to_dict(made)
        data["summary"].update(mrr=0.99, p95_seconds=0.0, event_loop_lag_p95_seconds=0.25)
        data["summary"]["totals"]["mrr"]["sum"] = 0.0
        back = read_report(self._write(tmp_path, data))
        assert back.summary == replace(made.summary, event_loop_lag_p95_seconds=0.25)

    def test_summary_only_report_keeps_its_checked_summary(self, tmp_path: Path) -> None:
        """Without cases the written summary is the report's, and must agree with itself."""
        data = report_to_dict(_report())
        data["cases"] = []
        written = read_report(self._write(tmp_path, data)).summary
        assert written.to_dict() == data["summary"]
        data["summary"]["mrr"] = 0.01
        with pytest.raises(ReportError, match=r"'summary\.mrr' is 0\.01 but its totals give"):
            read_report(self._write(tmp_path, data))

    def test_wrong_schema_version(self, tmp_path: Path) -> None:
        """Another schema version is refused with both versions named."""
        data = report_to_dict(_report())
        data["schema_version"] = 99
        with pytest.raises(ReportError, match="schema_version 99 is not supported"):
            read_report(self._write(tmp_path, data))

    @pytest.mark.parametrize(
        ("mutate", "field"),
        [
            (lambda d: d.pop("k"), "'k'"),
            (lambda d: d.update(k="5"), "'k'"),
            (lambda d: d.pop("summary"), "'summary'"),
            (lambda d: d["cases"][1].update(latency_seconds="fast"), "'cases[1].latency_seconds'"),
            (lambda d: d["cases"][0].update(mrr=1.5), "'cases[0].mrr'"),
            (lambda d: d["cases"][3]["error"].pop("kind"), "'cases[3].error.kind'"),
            (lambda d: d["summary"].pop("case_count"), "'summary.case_count'"),
            (
                lambda d: d["summary"]["totals"]["mrr"].update(count=1.5),
                "'summary.totals.mrr.count'",
            ),
        ],
    )
    def test_bad_field_named(self, tmp_path: Path, mutate: Any, field: str) -> None:
        """A missing or mistyped field is named in a one-line message."""
        data = report_to_dict(_report())
        mutate(data)
        with pytest.raises(ReportError) as info:
            report_from_dict(data, "r.json")
        assert field in str(info.value)
        assert "\n" not in str(info.value)
        assert str(info.value).startswith("r.json: ")


class _StaticTarget:
    """A target answering every question with the same evidence."""

    name = "static"

    def __init__(self, identity: Mapping[str, Any]) -> None:
        self._identity = identity

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        return TargetResponse(retrieved=(Retrieved("doc"),), answer="doc says so", citations=(1,))

    async def aclose(self) -> None:
        return None


class TestConfigHash:
    """config_hash identifies what makes two runs comparable, and nothing else."""

    def test_stable_and_short(self) -> None:
        """The same inputs give the same 16-hex-digit hash, whatever the key order."""
        reordered = {"method": "POST", "url": "http://rag:8000/query", "kind": "http"}
        assert _hash() == _hash(target_identity=reordered)
        assert 16 == len(_hash())
        int(_hash(), 16)

    @pytest.mark.parametrize(
        "change",
        [
            {"dataset_hash": "b" * 64},
            {"k": 10},
            {"target_identity": {"kind": "http", "url": "http://rag:9000/query", "method": "POST"}},
            {"target_identity": {"kind": "callable", "spec": "app:answer"}},
            {"scoring": {"refusal_phrases": ["无法回答"]}},
            {"version": "9.9.9"},
        ],
    )
    def test_changes_with_identity(self, change: dict[str, Any]) -> None:
        """Dataset content, K, target identity, scoring settings and version each change it."""
        assert _hash() != _hash(**change)

    def test_not_with_run_id_or_time(self) -> None:
        """Two runs of the same configuration share the hash, not the run id or timestamp."""
        dataset = Dataset(
            path="evals/x.jsonl",
            name="x",
            cases=(Case(id="c", question="q?", relevance={"doc": 1}, expected_facts=(("doc",),)),),
            content_hash="c" * 64,
        )
        target = _StaticTarget({"kind": "callable", "spec": "tests:static"})

        async def twice() -> tuple[RunReport, RunReport]:
            first = await run_dataset(dataset, target, RunOptions(k=3), run_id="run-1")
            await asyncio.sleep(0.002)
            return first, await run_dataset(dataset, target, RunOptions(k=3), run_id="run-2")

        first, second = asyncio.run(twice())
        assert first.config_hash == second.config_hash
        assert ("run-1", "run-2") == (first.run_id, second.run_id)
        assert first.generated_at != second.generated_at
        changed = asyncio.run(run_dataset(dataset, target, RunOptions(k=4)))
        assert first.config_hash != changed.config_hash


class TestStrictFlags:
    def test_unanswerable_must_be_a_boolean(self, tmp_path: Path) -> None:
        """A string "false" is not read as true: the report is rejected, naming the field."""
        good = report_to_dict(_report())
        good["cases"][0]["unanswerable"] = "false"
        path = tmp_path / "r.json"
        path.write_text(json.dumps(good), "utf-8")
        with pytest.raises(ReportError, match=r"cases\[0\]\.unanswerable"):
            read_report(path)


def test_an_error_is_decoded_as_its_record_and_range_checked() -> None:
    """A case's error is decoded straight into the record's CaseError, whose type carries
    the status range: a status outside 100..999 is refused naming the field."""
    from tests.support.records import record, report

    data = report_to_dict(report([record("a", error="http_status"), record("b")]))
    data["cases"][0]["error"]["status"] = 503
    read = report_from_dict(data)
    assert read.cases[0].outcome == CaseError(
        kind="http_status", message="http_status talking to the target", status=503
    )
    data["cases"][0]["error"]["status"] = 42
    with pytest.raises(
        ReportError, match=r"field 'cases\[0\]\.error\.status': Expected `int` >= 100"
    ):
        report_from_dict(data)


def test_writing_a_report_audits_each_case_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The header's label-audit totals and each case's ``suspect_label`` come from one audit
    of the case (it normalises the case's evidence texts; twice was a fifth of the encoding)."""
    from evaluator.report import write
    from evaluator.scoring import labels
    from tests.support.records import record, report

    audited: list[str] = []
    real = labels.audit_record

    def counting(case: Any) -> Any:
        audited.append(case.id)
        return real(case)

    monkeypatch.setattr(write, "audit_record", counting)
    monkeypatch.setattr(labels, "audit_record", counting)  # what audit_run calls
    records = [
        record("ok", texts={"d1": "the fact is here"}),
        record("suspect", texts={"d1": "nothing of it"}),
    ]
    data = json.loads(write.encode_report(report(records)))
    assert ["ok", "suspect"] == audited
    assert {"checked": 2, "suspect": 1} == {
        k: data["label_audit"][k] for k in ("checked", "suspect")
    }
    assert [None, "suspect label: 'fact' is in none of the relevant evidence"] == [
        c["suspect_label"] for c in data["cases"]
    ]

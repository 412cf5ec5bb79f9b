"""The report streamed case by case as a run goes (``evaluator run``) is byte for byte the
report written whole afterwards, in any completion order, partial or empty."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from evaluator.dataset import parse_dataset
from evaluator.models import Case, CaseRecord, Dataset, Dialogue, Retrieved, TargetResponse
from evaluator.redaction import register_secrets
from evaluator.report import RunReport, encode_report, read_report
from evaluator.report.stream import ReportStream, without_texts
from evaluator.run.runner import RunOptions, run_dataset
from evaluator.scoring.labels import audit_run
from evaluator.summary import summarise
from tests.support.records import replace

SECRET = "sk-stream-secret-0123456789"


def _golden_set(n: int) -> Dataset:
    lines = []
    for i in range(n):
        case: dict[str, Any] = {"id": f"c{i}", "question": f"how long is refund {i}?"}
        if i % 5 == 0:
            case.update(unanswerable=True, relevant_ids=[])
        else:
            case.update(relevant_ids=[f"doc-{i % 3}"], expected_facts=[["七天", "7 days"]])
        case["tags"] = ["zh" if i % 2 else "en"]
        lines.append(json.dumps(case, ensure_ascii=False))
    return parse_dataset("\n".join(lines).encode(), "stream.jsonl")


class _Target:
    """Answers after a delay that varies by case, so cases finish out of order; doc-2's
    text never holds the fact (a suspect label), doc-0's is long (cut), one text carries a
    secret (redacted at egress)."""

    name = "stream-target"

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        number = int(case.id[1:])
        await asyncio.sleep((number * 7 % 5) / 1000)
        texts = {
            "doc-0": "refunds within 7 days " + "x" * 5000,
            "doc-1": f"七天内可申请 {SECRET}",
            "doc-2": "shipping is free",
        }
        retrieved = tuple(Retrieved(d, 1.0, t) for d, t in texts.items())
        timings = {"embedding": 0.001 * number, "model": 0.25}
        return TargetResponse(retrieved=retrieved, answer="七天", citations=(1,), timings=timings)

    async def aclose(self) -> None:
        return None


def _run(dataset: Dataset, stream: ReportStream | None) -> tuple[RunReport, list[CaseRecord]]:
    """The run's report and every record as the runner made it (with its texts)."""
    made: list[CaseRecord] = []
    report = asyncio.run(
        run_dataset(
            dataset,
            _Target(),
            RunOptions(k=3, concurrency=4),
            on_case=made.append,
            sink=None if stream is None else stream.add,
        )
    )
    return report, made


def _whole(report: RunReport, made: list[CaseRecord]) -> RunReport:
    """``report`` with its cases as the runner made them, in golden-set order."""
    order = {c.id: i for i, c in enumerate(report.cases)}
    return replace(report, cases=tuple(sorted(made, key=lambda c: order[c.id])))


def test_streamed_report_is_the_report_written_whole(tmp_path: Path) -> None:
    """A report streamed case by case, out of order, is byte for byte the report written
    whole."""
    register_secrets([SECRET])  # process-wide and never removed: only this test's secret
    dataset = _golden_set(40)
    path = tmp_path / "run.json"
    with ReportStream(path) as stream:
        report, made = _run(dataset, stream)
        stream.finish(report)
    whole = _whole(report, made)
    completion = [c.id for c in made]
    assert completion != sorted(completion, key=lambda i: int(i[1:]))  # really out of order
    assert path.read_bytes() == encode_report(whole)
    assert SECRET not in path.read_text()
    # the cases kept in memory lost only their texts: the summary is the same
    assert all(not c.texts and not c.cut_texts for c in report.cases)
    assert [dict(c.stage_seconds) for c in report.cases] == [
        dict(c.stage_seconds) for c in whole.cases
    ]
    assert report.cases[3].stage_seconds == {"embedding": 0.003, "model": 0.25}
    assert "model" in report.cases[3].stage_seconds and "x" not in report.cases[3].stage_seconds
    assert any(c.texts for c in whole.cases) and any(c.cut_texts for c in whole.cases)
    assert replace(
        report.summary, event_loop_lag_p95_seconds=None, event_loop_lag_max_seconds=None
    ) == summarise(whole.cases)
    assert stream.audit == audit_run(whole.cases)
    assert stream.audit is not None and stream.audit.suspect_count > 0
    # and the reader trusts it (its summary equals the one recomputed from its cases)
    assert [c.id for c in read_report(path).cases] == [c.id for c in whole.cases]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_a_partial_run_keeps_golden_set_order_across_the_gaps(tmp_path: Path) -> None:
    """A partial run's streamed report keeps the golden set's order across the cases that never
    finished."""
    report, made = _run(_golden_set(8), None)
    finished = [made[i] for i in (5, 0, 3, 7, 2)]  # 1, 4 and 6 never finished
    order = {c.id: i for i, c in enumerate(report.cases)}
    path = tmp_path / "partial.json"
    with ReportStream(path) as stream:
        for record in finished:
            stream.add(order[record.id], record)
        kept = tuple(sorted(finished, key=lambda c: order[c.id]))
        partial = replace(report, cases=kept, summary=summarise(kept), interrupted=True)
        stream.finish(partial)
    assert path.read_bytes() == encode_report(partial)


def test_no_case(tmp_path: Path) -> None:
    """A report without cases streams as it writes whole."""
    report, _ = _run(_golden_set(3), None)
    empty = replace(report, cases=(), summary=summarise(()), interrupted=True)
    path = tmp_path / "empty.json"
    with ReportStream(path) as stream:
        stream.finish(empty)
    assert path.read_bytes() == encode_report(empty)


def test_a_case_that_cannot_be_written_fails_the_report_not_the_run(tmp_path: Path) -> None:
    """A case that cannot be written fails the report, leaving the previous file in place."""
    report, made = _run(_golden_set(3), None)
    path = tmp_path / "run.json"
    path.write_text("previous")
    with ReportStream(path) as stream:
        stream.add(0, made[0])
        stream.add(1, replace(made[1], latency_seconds=math.nan))
        stream.add(2, made[2])
        with pytest.raises(ValueError):
            stream.finish(report)
    assert path.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_left_unfinished_leaves_nothing(tmp_path: Path) -> None:
    """A stream left unfinished leaves no file."""
    _, made = _run(_golden_set(3), None)
    with ReportStream(tmp_path / "run.json") as stream:
        stream.add(0, made[0])
    assert list(tmp_path.iterdir()) == []


def test_without_texts_is_the_record_with_only_texts_and_stage_form_changed() -> None:
    """A record without its texts differs only in the texts and the stage mapping's form."""
    _, made = _run(_golden_set(5), None)
    for record in made:
        record = replace(record, ttfb_seconds=0.01, trace_id="ab" * 16, cost=0.5)
        kept = without_texts(record)
        assert kept == replace(
            record, texts={}, cut_texts=frozenset(), stage_seconds=kept.stage_seconds
        )
        assert record.texts and not kept.texts and not kept.cut_texts
        assert dict(kept.stage_seconds) == dict(record.stage_seconds)

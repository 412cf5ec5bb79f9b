"""A report read as columns (the gate's read) is the report ``read_report`` reads: the same
records when built, the same checks and errors, and a case table equal to its records'."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator.errors import ReportError
from evaluator.models import Case, CaseError, CaseRecord, CaseScores
from evaluator.report import read_report
from evaluator.report.check import CheckedColumns, _compare, _recomputed
from evaluator.report.columns import CaseTable, as_report, ids_of, table_of
from evaluator.report.read import read_columns
from evaluator.summary import summarise
from tests.gate.factories import record, report, write
from tests.support.strategies import case_scores


def _varied() -> list[CaseRecord]:
    """Cases of every shape a table holds: failed (with and without a status), graded and
    repeated relevance, unanswerable, tags, cut texts."""
    a = record("a", rr=0.5, stages={"embed": 0.01, "model": 0.5})
    b = record("b", error="timeout")
    c = dataclasses.replace(
        record("c", correct=False, unanswerable=True),
        cut_texts=frozenset({"d1"}),
        texts={"d1": "some text"},
    )
    d = dataclasses.replace(
        record("d"),
        case=Case("d", "graded?", {"d2": 2, "d1": 1}, (("x", "y"),), tags=("zh", "smoke")),
        outcome=CaseError("http_status", "503 from the target", 503),
    )
    e = dataclasses.replace(
        record("e", precision=0.25),
        case=Case("e", "repeated ids?", {"d1": 1, "d3": 1}, tags=("smoke",)),
    )
    return [a, b, c, d, e]


def test_columns_build_the_report_read_report_reads(tmp_path: Path) -> None:
    path = write(tmp_path / "r.json", report(_varied()))
    columns = read_columns(path)
    whole = read_report(path)

    assert columns.report() == whole
    assert as_report(columns) == whole
    assert (columns.case_count, columns.error_count) == (whole.case_count, whole.error_count)
    for field in ("run_id", "generated_at", "dataset_hash", "summary", "k", "interrupted"):
        assert getattr(columns, field) == getattr(whole, field)


def test_a_shared_build_shares_the_baselines_cases(tmp_path: Path) -> None:
    baseline = read_report(write(tmp_path / "b.json", report(_varied())))
    built = read_columns(write(tmp_path / "c.json", report(_varied(), run_id="2"))).report(baseline)

    assert [r.case for r in built.cases] == [r.case for r in baseline.cases]
    assert all(r.case is s.case for r, s in zip(built.cases, baseline.cases, strict=True))


def _show(table: CaseTable) -> list[tuple[object, ...]]:
    return [
        (*table.shown(i), table.ranked(i), table.unanswerable[i], table.ids[i])
        for i in range(len(table.ids))
    ]


def _errors(table: CaseTable) -> list[tuple[object, ...] | None]:
    return [None if e is None else (e.kind, e.message, e.status) for e in table.errors]


def test_the_table_of_columns_is_the_table_of_the_records(tmp_path: Path) -> None:
    path = write(tmp_path / "r.json", report(_varied()))
    columns, whole = read_columns(path), read_report(path)
    mine, theirs = table_of(columns), table_of(whole)

    assert _show(mine) == _show(theirs)
    assert _errors(mine) == _errors(theirs)
    assert list(ids_of(columns)) == list(ids_of(whole)) == ["a", "b", "c", "d", "e"]
    # the relevant ids a diff shows are the record's, in its order
    assert mine.shown(3)[1] == ("d2", "d1")
    scored, theirs_scored = mine.scored(), theirs.scored()
    assert scored[1:] == theirs_scored[1:]
    assert [dataclasses.astuple(s) for s in theirs_scored[0]] == [
        tuple(getattr(s, f.name) for f in dataclasses.fields(CaseScores)) for s in scored[0]
    ]


def test_keys_are_equal_where_nothing_can_have_moved(tmp_path: Path) -> None:
    cases = [
        record("same"),
        record("moved"),
        record("both-failed", error="timeout"),
        record("failed-now"),
    ]
    other = [
        record("same"),
        record("moved", rr=0.5),
        record("both-failed", error="bad_response"),
        record("failed-now", error="timeout"),
    ]
    for read in (read_columns, read_report):
        a = table_of(read(write(tmp_path / "a.json", report(cases))))
        b = table_of(read(write(tmp_path / "b.json", report(other))))
        equal = [x == y for x, y in zip(a.keys(), b.keys(), strict=True)]
        assert equal == [True, False, True, False]


def _forge(tmp_path: Path, edit: object) -> Path:
    data = json.loads(write(tmp_path / "ok.json", report(_varied())).read_text("utf-8"))
    assert callable(edit)
    edit(data)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _null_then_bad(data: dict[str, object]) -> None:
    cases = data["cases"]
    assert isinstance(cases, list)
    cases[0]["mrr"] = None  # an earlier case's null score...
    cases[2]["recall_at_k"] = 7.0  # ...is found before a later case's bad value


FORGERIES = {
    "a ratio out of range": lambda d: d["cases"][2].update(mrr=2.0),
    "a failed case without its error": lambda d: d["cases"][1].update(error=None),
    "a null score": lambda d: d["cases"][0].update(recall_at_k=None),
    "a null then a bad field": _null_then_bad,
    "a bad later field": lambda d: d["cases"][4].update(citations="x"),
    "a repeated id": lambda d: d["cases"][1].update(id="a"),
    "a count": lambda d: d.update(error_count=0),
    "a summary": lambda d: d["summary"].update(mrr=0.1),
    "a total": lambda d: d["summary"]["totals"]["mrr"].update(sum=0.1),
    "a latency": lambda d: d["cases"][0].update(latency_seconds=9.0),
    "a tag": lambda d: d["cases"][0].update(tags=["new"]),
    "a tag's summary": lambda d: d["summary"]["by_tag"]["smoke"].update(p95_seconds=3.0),
    "a stage": lambda d: d["cases"][0]["stage_seconds"].update(model=3.0),
    "an error kind": lambda d: d["cases"][1]["error"].update(kind="refused"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_columns_refuse_what_read_report_refuses_with_its_message(
    tmp_path: Path, name: str
) -> None:
    path = _forge(tmp_path, FORGERIES[name])
    with pytest.raises(ReportError) as whole:
        read_report(path)
    with pytest.raises(ReportError) as columns:
        read_columns(path)
    assert str(columns.value) == str(whole.value)


def test_a_null_score_is_reported_before_a_later_bad_field(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"'cases\[0\]\.mrr' is null"):
        read_columns(_forge(tmp_path, _null_then_bad))


_records = st.lists(
    st.tuples(
        st.one_of(st.none(), case_scores()),
        st.booleans(),
        st.sampled_from([(), ("a",), ("a", "b"), ("b",)]),
        st.floats(min_value=0.0, max_value=30.0, allow_nan=False),
        st.sampled_from(["timeout", "http_status"]),
        st.sampled_from([{}, {"model": 0.5}, {"embed": 0.01, "model": 0.2}]),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records)
def test_the_recomputed_summary_is_the_one_summarise_gives(rows: list[tuple[Any, ...]]) -> None:
    """The check's summary from columns, compared field by field as the check compares,
    agrees with :func:`summarise` of the same records (so no report it wrote is refused)."""
    records = []
    for i, (scores, unanswerable, tags, latency, kind, stages) in enumerate(rows):
        outcome = CaseError(kind, "failed") if scores is None else scores
        records.append(
            dataclasses.replace(
                record(f"c{i}", latency=latency, unanswerable=unanswerable, stages=stages),
                case=Case(f"c{i}", "q?", {"d1": 1}, unanswerable=unanswerable, tags=tags),
                outcome=outcome,
            )
        )
    summary = summarise(records)
    columns = CheckedColumns.of_records(records)
    _compare("r", "summary.", summary, _recomputed(columns))
    recomputed = _recomputed(columns)
    for field in ("case_count", "scored_count", "error_count", "errors_by_kind", "totals"):
        assert getattr(recomputed, field) == getattr(summary, field)
    for field in ("error_rate", "p50_seconds", "p95_seconds", "stage_p95_seconds"):
        assert getattr(recomputed, field) == getattr(summary, field)

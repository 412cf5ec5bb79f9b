"""summarise equals its plain definition, bit for bit.

``summarise`` reads each quantity in one C-speed pass (columns, ``operator.attrgetter``,
stage layouts transposed, tags grouped by their lists). The reference below is the
definition written as plain loops over the records, one case at a time, as docs/metrics.md
states it: a summary written by either must be the same report bytes, so the comparison
is of the JSON text (an int 0 and a float 0.0 differ there), not only of the numbers.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evaluator.casecolumns import CaseColumns
from evaluator.metrics import METRICS
from evaluator.models import Case, CaseError, CaseRecord, CaseScores, Outcome
from evaluator.report.stream import without_texts
from evaluator.summary import Summary, Total, nearest_rank, summarise, summarise_columns
from tests.support.strategies import RATIO, case_scores


def _reference(records: Sequence[CaseRecord], *, with_tags: bool = True) -> Summary:
    """The summary as defined: every case visited in order, in plain Python."""
    scored = [r for r in records if isinstance(r.outcome, CaseScores)]
    errors = [r.outcome for r in records if isinstance(r.outcome, CaseError)]
    answerable = [r for r in scored if not r.case.unanswerable]
    pools = {
        "retrieval": answerable or scored,
        "scored": scored,
        "answerable": answerable,
        "unanswerable": [r for r in scored if r.case.unanswerable],
    }
    totals: dict[str, Total] = {}
    for spec in METRICS:
        if spec.score is None:
            continue
        added: float = 0
        count = 0
        for r in pools[spec.population]:
            value = getattr(r.outcome, spec.score)
            if value is not None:
                added += float(value)
                count += 1
        totals[spec.name] = Total(added, count)
    kinds: dict[str, int] = {}
    for error in errors:
        kinds[error.kind] = kinds.get(error.kind, 0) + 1
    stages: dict[str, list[float]] = {}
    for r in records:
        for name in r.stage_seconds:
            stages.setdefault(name, []).append(r.stage_seconds[name])
    ok = [r for r in records if not isinstance(r.outcome, CaseError)]
    ttft = [r.ttft_seconds for r in ok if r.ttft_seconds is not None]
    ttfb = [r.ttfb_seconds for r in ok if r.ttfb_seconds is not None and r.ttft_seconds is not None]
    tps = [r.tokens_per_second for r in ok if r.tokens_per_second is not None]
    inputs = [r.input_tokens for r in ok if r.input_tokens is not None]
    outputs = [r.output_tokens for r in ok if r.output_tokens is not None]
    costs = [r.cost for r in ok if r.cost is not None]
    latencies = [r.latency_seconds for r in records]
    whole = Summary(
        case_count=len(records),
        scored_count=len(scored),
        error_count=len(errors),
        totals=totals,
        error_rate=len(errors) / len(records) if records else None,
        p50_seconds=nearest_rank(latencies, 50),
        p95_seconds=nearest_rank(latencies, 95),
        stage_p95_seconds={
            name: p95
            for name, vals in stages.items()
            if (p95 := nearest_rank(vals, 95)) is not None
        },
        errors_by_kind=dict(sorted(kinds.items())),
        p50_ttft_seconds=nearest_rank(ttft, 50),
        p95_ttft_seconds=nearest_rank(ttft, 95),
        p95_ttfb_seconds=nearest_rank(ttfb, 95),
        p50_tokens_per_second=nearest_rank(tps, 50),
        input_tokens_total=sum(inputs) if inputs else None,
        output_tokens_total=sum(outputs) if outputs else None,
        cost_total=math.fsum(costs) if costs else None,
        cost_per_case=math.fsum(costs) / len(costs) if costs else None,
    )
    if not with_tags:
        return whole
    groups: dict[str, list[CaseRecord]] = {}
    for r in records:
        for tag in dict.fromkeys(r.case.tags):
            groups.setdefault(tag, []).append(r)
    if not groups:
        return whole
    by_tag = {tag: _reference(groups[tag], with_tags=False) for tag in sorted(groups)}
    return Summary(**{**_fields(whole), "by_tag": by_tag})


def _fields(summary: Summary) -> dict[str, Any]:
    return {f.name: getattr(summary, f.name) for f in dataclasses.fields(summary)}


def _text(summary: Summary) -> str:
    """The summary as a report writes it (sorted keys: stage order is compared apart)."""
    return json.dumps(summary.to_dict(), sort_keys=True)


_opt_unit = st.none() | RATIO | st.sampled_from([0, 1])  # a score built in code may be an int
_seconds = st.floats(min_value=0.0, max_value=60.0, allow_nan=False)
_opt_seconds = st.none() | _seconds
#: stage layouts as endpoints report them: the same names in two orders, a subset, none
_LAYOUTS = (("model", "rerank"), ("rerank", "model"), ("model",), ("embed", "model", "rerank"), ())


@st.composite
def _outcome(draw: st.DrawFn) -> Outcome:
    if draw(st.integers(0, 9)) == 0:
        return CaseError(draw(st.sampled_from(["timeout", "http_error"])), "failed")
    return draw(case_scores(optional_ratio=_opt_unit))


@st.composite
def _record(draw: st.DrawFn, index: int) -> CaseRecord:
    outcome = draw(_outcome())
    layout = draw(st.sampled_from(_LAYOUTS))
    streamed = draw(st.booleans())
    record = CaseRecord(
        case=Case(
            id=f"case-{index}",
            question="q?",
            relevance={"d": 1},
            unanswerable=draw(st.booleans()),
            # repeated tags count once; the same few lists, as golden sets have them
            tags=tuple(draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3))),
        ),
        outcome=outcome,
        ranked_ids=("d",),
        answer="a",
        citations=(),
        latency_seconds=draw(_seconds),
        stage_seconds={name: draw(_seconds) for name in layout},
        ttfb_seconds=draw(_opt_seconds) if streamed else None,
        ttft_seconds=draw(_opt_seconds) if streamed else None,
        tokens_per_second=draw(_opt_seconds) if streamed else None,
        input_tokens=draw(st.none() | st.integers(0, 10_000)) if streamed else None,
        output_tokens=draw(st.none() | st.integers(0, 10_000)) if streamed else None,
        cost=draw(st.none() | _seconds) if streamed else None,
    )
    # a streamed run keeps its stages compactly (a read-only Mapping, not a dict)
    return without_texts(record) if draw(st.booleans()) else record


@st.composite
def _records(draw: st.DrawFn) -> list[CaseRecord]:
    n = draw(st.integers(0, 40))
    return [draw(_record(i)) for i in range(n)]


def _check(records: list[CaseRecord]) -> None:
    got, want = summarise(records), _reference(records)
    assert _text(want) == _text(got)
    for mine, theirs in [(got, want), *zip(got.by_tag.values(), want.by_tag.values(), strict=True)]:
        assert list(theirs.stage_p95_seconds) == list(mine.stage_p95_seconds)  # first seen
        for name, t in theirs.totals.items():
            assert type(t.sum) is type(mine.totals[name].sum), name


class TestSummariseIsItsDefinition:
    @given(_records())
    def test_arbitrary_records(self, records: list[CaseRecord]) -> None:
        """Any records: the same JSON, the same stage order, the same types of sums."""
        _check(records)

    def test_worked_example(self) -> None:
        """Flags add up as floats (3 True of 4 answers is 3.0, not 3), an empty total is
        the int 0, layouts in two orders keep the first-seen order, one case's tag works."""
        rows = [
            ((True, False), ("a",), {"rerank": 0.2, "model": 1.0}),
            ((True, False), ("a", "b"), {"model": 2.0, "rerank": 0.1}),
            ((False, False), ("a",), {}),
            ((True, True), ("a", "a"), {"model": 3.0}),
        ]
        records = [
            CaseRecord(
                case=Case(id=f"c{i}", question="q?", relevance={"d": 1}, tags=tags),
                outcome=CaseScores(1.0, 0.5, 0.25, answer_correct=correct, refused=refused),
                ranked_ids=("d",),
                answer="a",
                citations=(),
                latency_seconds=0.1 * (i + 1),
                stage_seconds=stages,
            )
            for i, ((correct, refused), tags, stages) in enumerate(rows)
        ]
        summary = summarise(records)
        assert Total(3.0, 4) == summary.totals["answer_accuracy"]
        assert float is type(summary.totals["answer_accuracy"].sum)
        assert int is type(summary.totals["fact_recall"].sum)
        assert ["rerank", "model"] == list(summary.stage_p95_seconds)
        assert {"rerank": 0.2, "model": 3.0} == summary.stage_p95_seconds
        assert 1 == summary.by_tag["b"].case_count
        assert 4 == summary.by_tag["a"].case_count
        _check(records)

    def test_every_case_tagged_alike(self) -> None:
        """A tag on every case gives the run's own summary."""
        records = [
            CaseRecord(
                case=Case(id=f"c{i}", question="q?", relevance={"d": 1}, tags=("all",)),
                outcome=CaseScores(1.0, 1.0, 1.0),
                ranked_ids=("d",),
                answer=None,
                citations=(),
                latency_seconds=1.0,
                stage_seconds={},
            )
            for i in range(3)
        ]
        summary = summarise(records)
        assert _text(summary.by_tag["all"]) == _text(summarise(records, with_tags=False))
        _check(records)


class TestColumnsFilledAsCasesFinish:
    """The run copies each case into :class:`CaseColumns` as it finishes (any order, some
    never when interrupted): the summary is the one of the finished records in order."""

    @given(_records(), st.randoms(use_true_random=False), st.floats(0.0, 1.0))
    def test_any_completion_order_and_subset(
        self, records: list[CaseRecord], rng: random.Random, share: float
    ) -> None:
        order = list(range(len(records)))
        rng.shuffle(order)
        finished = order[: round(share * len(order))]
        columns = CaseColumns(len(records))
        for index in finished:
            columns.add(index, records[index])
        kept = [records[i] for i in sorted(finished)]
        got, want = summarise_columns(columns), _reference(kept)
        assert _text(want) == _text(got)
        assert _text(summarise(kept)) == _text(got)
        for name, t in want.totals.items():
            assert type(t.sum) is type(got.totals[name].sum), name

    def test_many_distinct_tag_lists_and_stage_names(self) -> None:
        """Past 256 distinct tag lists or stage layouts the codes widen; same summary."""
        records = [
            CaseRecord(
                case=Case(
                    id=f"c{i}",
                    question="q?",
                    relevance={"d": 1},
                    unanswerable=i % 7 == 0,
                    tags=(f"t{i}", "all") if i % 3 else (f"t{i % 5}",),
                ),
                outcome=(
                    CaseError("timeout", "slow")
                    if i % 11 == 0
                    else CaseScores(1.0 / (i + 1), 0.5, 0.25, answer_correct=i % 2 == 0)
                ),
                ranked_ids=("d",),
                answer="a",
                citations=(),
                latency_seconds=0.001 * ((i * 7919) % 600),
                stage_seconds={f"s{i}": 0.1 * i, "model": 0.01 * (i % 13)},
            )
            for i in range(600)
        ]
        _check(records)
        columns = CaseColumns.of(records)
        assert _text(_reference(records)) == _text(summarise_columns(columns))

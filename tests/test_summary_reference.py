"""summarise against a plain reference: one loop a case, each value as docs/metrics.md says,
over varied runs (failures, unanswerable cases, repeated tags, stage layouts that differ or
are missing, signed zeros, streaming and usage figures, figures out of range, turns)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from evaluator.metrics import METRICS, TURN_POSITIONS, turn_position
from evaluator.models import OUT_OF_RANGE_FIELDS, Case, CaseError, CaseRecord, CaseScores, Turn
from evaluator.summary import summarise

_QUALITY = [spec for spec in METRICS if spec.quality]
_LAYOUTS: dict[str, list[tuple[str, ...]]] = {
    "one layout, failures without": [(), ("a", "b", "c")],
    "one layout": [("a", "b", "c")],
    "several layouts": [(), ("a", "b"), ("b", "a"), ("c",), ("a", "c", "d")],
    "no stages": [()],
    "two orders": [("x",), ("y", "x")],
}


def _rank(values: Sequence[float], percentile: float) -> float | None:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(percentile / 100 * len(ordered))) - 1] if ordered else None


def _mean_parts(values: list[Any]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    added: Any = 0
    for v in present:
        added = added + v
    if present and type(added) is int:
        added = float(added)
    return {"sum": added, "count": len(present)}


def _population(spec_population: str, scored: list[CaseRecord]) -> list[CaseRecord]:
    answerable = [r for r in scored if not r.case.unanswerable]
    return {
        "retrieval": answerable or scored,
        "scored": scored,
        "answerable": answerable,
        "unanswerable": [r for r in scored if r.case.unanswerable],
    }[spec_population]


def _stages(records: list[CaseRecord]) -> dict[str, float]:
    layouts: dict[tuple[str, ...], list[Mapping[str, float]]] = {}
    for r in records:
        if r.stage_seconds:
            layouts.setdefault(tuple(r.stage_seconds), []).append(r.stage_seconds)
    columns: dict[str, list[float]] = {}
    for names, rows in layouts.items():
        for name in names:
            columns.setdefault(name, []).extend(row[name] for row in rows)
    return {name: _rank(values, 95) for name, values in columns.items()}  # type: ignore[misc]


def _figures(scored: list[CaseRecord]) -> dict[str, Any]:
    ttft = [r.ttft_seconds for r in scored if r.ttft_seconds is not None]
    ttfb = [
        r.ttfb_seconds for r in scored if r.ttfb_seconds is not None and r.ttft_seconds is not None
    ]
    tps = [r.tokens_per_second for r in scored if r.tokens_per_second is not None]
    ins = [r.input_tokens for r in scored if r.input_tokens is not None]
    outs = [r.output_tokens for r in scored if r.output_tokens is not None]
    costs = [r.cost for r in scored if r.cost is not None]
    values = {
        "p50_ttft_seconds": _rank(ttft, 50),
        "p95_ttft_seconds": _rank(ttft, 95),
        "p95_ttfb_seconds": _rank(ttfb, 95),
        "p50_tokens_per_second": _rank(tps, 50),
        "input_tokens_total": sum(ins) if ins else None,
        "output_tokens_total": sum(outs) if outs else None,
        "cost_total": math.fsum(costs) if costs else None,
        "cost_per_case": math.fsum(costs) / len(costs) if costs else None,
    }
    return {k: v for k, v in values.items() if v is not None}


def _reference(records: list[CaseRecord]) -> dict[str, Any]:
    scored = [r for r in records if isinstance(r.outcome, CaseScores)]
    kinds = [r.outcome.kind for r in records if isinstance(r.outcome, CaseError)]
    totals = {
        spec.name: _mean_parts(
            [getattr(r.outcome, spec.score or "") for r in _population(spec.population, scored)]
        )
        for spec in _QUALITY
    }
    totals = {k: t for k, t in totals.items() if t["count"] or not _measured_only(k)}
    latencies = [r.latency_seconds for r in records if r.attempts]
    out: dict[str, Any] = {
        k: t["sum"] / t["count"] if t["count"] else None for k, t in totals.items()
    }
    out.update(
        case_count=len(records),
        scored_count=len(scored),
        error_count=len(kinds),
        error_rate=len(kinds) / len(records) if records else None,
        p50_seconds=_rank(latencies, 50),
        p95_seconds=_rank(latencies, 95),
        stage_p95_seconds=_stages(records),
        errors_by_kind={k: kinds.count(k) for k in sorted(set(kinds))},
        totals=totals,
    )
    out.update(_figures(scored))
    dropped = [name for r in scored for name in r.out_of_range]
    if dropped:
        out["out_of_range"] = {n: dropped.count(n) for n in OUT_OF_RANGE_FIELDS if n in dropped}
    return out


def _measured_only(name: str) -> bool:
    return next(spec.measured_only for spec in METRICS if spec.name == name)


def _run_reference(records: list[CaseRecord]) -> dict[str, Any]:
    out = _reference(records)
    tags: dict[str, list[CaseRecord]] = {}
    for r in records:
        for tag in sorted(set(r.case.tags)):
            tags.setdefault(tag, []).append(r)
    conversations: dict[str, float] = {}
    positions: dict[str, list[CaseRecord]] = {}
    for r in records:
        if r.case.turn is not None:
            positions.setdefault(turn_position(r.case.turn.position), []).append(r)
            spent = conversations.get(r.case.turn.conversation, 0.0)
            conversations[r.case.turn.conversation] = spent + r.latency_seconds
    seconds = list(conversations.values())
    dropped = out.pop("out_of_range", None)  # written after every optional value
    if seconds:
        out.update(
            p50_conversation_seconds=_rank(seconds, 50),
            p95_conversation_seconds=_rank(seconds, 95),
        )
    if dropped:
        out["out_of_range"] = dropped
    if tags:
        out["by_tag"] = {tag: _reference(cases) for tag, cases in sorted(tags.items())}
    if positions:
        out["by_position"] = {p: _reference(positions[p]) for p in TURN_POSITIONS if p in positions}
    return out


def _scores(rng: random.Random) -> CaseScores:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.3 else value

    return CaseScores(
        recall_at_k=maybe(rng.choice([0.0, 0.5, 1.0, 1 / 3])),
        mrr=maybe(rng.random()),
        ndcg_at_k=maybe(rng.random()),
        citation_precision=maybe(rng.random()),
        citation_recall=maybe(rng.random()),
        citation_valid=maybe(rng.random() < 0.5),
        answer_correct=maybe(rng.random() < 0.5),
        fact_recall=maybe(rng.random()),
        refused=maybe(rng.random() < 0.5),
        conversation_success=None if rng.random() < 0.8 else rng.random() < 0.5,
    )


def _case_record(
    rng: random.Random, i: int, layouts: list[tuple[str, ...]], turns: bool
) -> CaseRecord:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.3 else value

    failed = rng.random() < 0.15
    outcome = (
        CaseError(kind=rng.choice(["timeout", "http_status"]), message="m")
        if failed
        else _scores(rng)
    )
    tags = tuple(rng.sample(["t1", "t2", "t3", "é"], rng.randint(0, 3)))
    tags = tags + tags[:1] if rng.random() < 0.1 else tags  # a tag given twice
    stages: Mapping[str, float] = {
        n: rng.choice([0.0, -0.0, 0.25, rng.random()]) for n in rng.choice(layouts)
    }
    stages = MappingProxyType(dict(stages)) if rng.random() < 0.1 else stages
    return CaseRecord(
        case=Case(
            id=f"case-{i}",
            question="q",
            relevance={},
            unanswerable=rng.random() < 0.2,
            tags=tags + (("all",) if i % 2 == 0 and len(layouts) == 2 else ()),
            turn=Turn(conversation=f"c{i // 3}", position=i % 3 + 1 + 3 * (i % 7 == 0))
            if turns
            else None,
        ),
        outcome=outcome,
        ranked_ids=(),
        answer=None,
        citations=(),
        latency_seconds=rng.choice([0.0, -0.0, 0.5, rng.random()]),
        stage_seconds={} if failed and rng.random() < 0.7 else stages,
        attempts=0 if rng.random() < 0.05 else 1,
        ttfb_seconds=maybe(rng.random()),
        ttft_seconds=None if rng.random() < 0.5 else rng.random(),
        tokens_per_second=maybe(rng.random() * 100),
        input_tokens=maybe(rng.randint(0, 1000)),
        output_tokens=maybe(rng.randint(0, 1000)),
        cost=maybe(rng.random()),
        out_of_range=tuple(f for f in OUT_OF_RANGE_FIELDS if rng.random() < 0.1),
    )


@pytest.mark.parametrize("layouts", list(_LAYOUTS), ids=list(_LAYOUTS))
@pytest.mark.parametrize("seed", range(6))
def test_summary_matches_the_plain_reference(layouts: str, seed: int) -> None:
    """The summary (run, tags, turn positions) writes the same JSON, floats and key order as
    a plain loop over the cases computing each value by its definition."""
    rng = random.Random(seed)
    n = [0, 1, 2, 7, 60, 300][seed]
    records = [_case_record(rng, i, _LAYOUTS[layouts], turns=seed % 2 == 1) for i in range(n)]
    if seed == 4:  # no failure at all: every case reports its stages
        records = [r for r in records if isinstance(r.outcome, CaseScores)]
    expected = json.dumps(_run_reference(records))
    assert expected == json.dumps(summarise(records).to_dict())


def test_summary_of_a_plain_target_has_no_figures() -> None:
    """A run whose cases report no streaming, usage or dropped figure has none in its
    summary nor in its tags'."""
    rng = random.Random(3)
    records = [_case_record(rng, i, [("a", "b")], turns=False) for i in range(50)]
    plain = [
        CaseRecord(
            **{
                **{f: getattr(r, f) for f in r.__struct_fields__},
                "ttfb_seconds": None,
                "ttft_seconds": None,
                "tokens_per_second": None,
                "input_tokens": None,
                "output_tokens": None,
                "cost": None,
                "out_of_range": (),
            }
        )
        for r in records
    ]
    assert json.dumps(_run_reference(plain)) == json.dumps(summarise(plain).to_dict())

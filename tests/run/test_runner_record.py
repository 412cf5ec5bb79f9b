"""runner._record's pieces against their definitions: kept texts, delivery fields."""

from __future__ import annotations

import asyncio
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.bounds import RecordLimits
from evaluator.models import Case, Dataset, Delivery, Dialogue, Retrieved, TargetResponse
from evaluator.run.runner import RunOptions, _delivery_fields, _kept_texts, run_dataset

LIMITS = RecordLimits(max_text_chars=8, max_id_chars=4)


def _definition(
    case: Case, response: TargetResponse, k: int, limits: RecordLimits
) -> tuple[dict[str, str], frozenset[str]]:
    """Texts of the first occurrence of each id, for the top-K ranks (ranks counted over
    distinct ids) and the relevant ids, cut to max_text_chars; the cut ids listed."""
    texts: dict[str, str] = {}
    cut: set[str] = set()
    seen: set[str] = set()
    rank = 0
    for item in response.retrieved:
        if item.id in seen:
            continue
        seen.add(item.id)
        rank += 1
        if not item.text or (rank > k and item.id not in case.relevance):
            continue
        doc_id = limits.id(item.id)
        if len(item.text) > limits.max_text_chars:
            cut.add(doc_id)
        texts[doc_id] = item.text[: limits.max_text_chars]
    return texts, frozenset(cut)


ids = st.sampled_from(["a", "b", "c", "d", "e", "long-id-x", "long-id-y"])
items = st.builds(Retrieved, id=ids, text=st.none() | st.text(max_size=12))


@settings(max_examples=400, database=None)
@given(
    retrieved=st.lists(items, max_size=9),
    relevant=st.lists(ids, max_size=3),
    k=st.integers(min_value=1, max_value=6),
)
def test_kept_texts_follow_their_definition(
    retrieved: list[Retrieved], relevant: list[str], k: int
) -> None:
    """With and without repeated ids (the fast path skips deduplication without them)."""
    case = Case(id="c", question="q", relevance=dict.fromkeys(relevant, 1))
    response = TargetResponse(retrieved=tuple(retrieved))
    texts, cut = _kept_texts(case, response, response.ranked_ids, k, LIMITS)
    assert (texts, cut) == _definition(case, response, k, LIMITS)
    assert list(texts) == list(_definition(case, response, k, LIMITS)[0])  # same order


def test_delivery_fields() -> None:
    """A delivery gives the record's timing, token, cost and trace fields, and no delivery keeps
    the sent trace id."""
    assert _delivery_fields(None, "t") == (None, None, None, None, None, None, "t")
    delivery = Delivery(
        ttfb_seconds=0.1,
        ttft_seconds=0.2,
        last_byte_seconds=0.7,
        input_tokens=3,
        output_tokens=10,
        cost=0.5,
        trace_id="own",
    )
    tps = 10 / (0.7 - 0.2)
    assert _delivery_fields(delivery, "t") == (0.1, 0.2, tps, 3, 10, 0.5, "own")
    # a trace id from the target wins; without one, the runner's; an infinite rate is None
    instant = Delivery(ttft_seconds=0.0, last_byte_seconds=5e-324, output_tokens=10**308)
    assert instant.tokens_per_second is not None and not math.isfinite(instant.tokens_per_second)
    assert _delivery_fields(instant, "t") == (None, 0.0, None, None, 10**308, None, "t")


class _FreshCopies:
    """A target whose every answer is parsed anew: equal ids and texts, distinct objects."""

    name = "fresh"

    def identity(self) -> dict[str, str]:
        return {"kind": "fresh"}

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        body = json.loads('{"id": "doc-1", "text": "' + "passage " * 20 + '"}')
        return TargetResponse(retrieved=(Retrieved(id=body["id"], text=body["text"]),))

    async def aclose(self) -> None:
        pass


def test_records_share_the_evidence_that_came_back_equal() -> None:
    """A passage retrieved for many cases is held once (interned), not once per case: at
    platform scale the parsed copies were most of a run's memory."""
    cases = tuple(Case(id=f"c{i}", question=f"q{i}", relevance={"doc-1": 1}) for i in range(3))
    dataset = Dataset(path="x.jsonl", name="x", cases=cases, content_hash="0" * 64)
    report = asyncio.run(run_dataset(dataset, _FreshCopies(), RunOptions(k=1, concurrency=1)))
    first, *rest = report.cases
    for record in rest:
        assert record.texts == first.texts
        assert record.texts["doc-1"] is first.texts["doc-1"]
        assert record.ranked_ids[0] is first.ranked_ids[0]

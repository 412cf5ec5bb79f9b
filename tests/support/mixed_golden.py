"""A small golden set with every kind of outcome, and the loopback replies that produce them.

Some cases right, some wrong, a graded and an unanswerable pair, a retrieval-only case, one
HTTP 500 and one body that is not JSON: 2 of 12 cases fail, within an error limit of 0.25.
Shared by the end-to-end tests that scrape a real daemon with a real Prometheus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.support.loopback import Reply

__all__ = ["MIXED_CASES", "MIXED_REPLIES", "STAGE_TIMINGS", "case", "rag_body"]

#: stage timings every successful reply reports (seconds)
STAGE_TIMINGS: Mapping[str, float] = {"embedding": 0.011, "vector": 0.004, "rerank": 0.03,
                                      "model": 0.25}  # fmt: skip


def case(n: int, **fields: Any) -> dict[str, Any]:
    """Golden-set line ``c<n>`` asking question ``q<n>`` (two digits)."""
    return {"id": f"c{n:02d}", "question": f"q{n:02d}", **fields}


def rag_body(ranked: list[str], answer: str, citations: list[Any]) -> dict[str, Any]:
    """A default-contract response ranking ``ranked``, best first."""
    return {
        "answer": answer,
        "retrieved": [
            {"id": d, "score": 10.0 - i, "text": f"text {d}"} for i, d in enumerate(ranked)
        ],
        "citations": citations,
        "timings": dict(STAGE_TIMINGS),
    }


MIXED_CASES: list[dict[str, Any]] = [
    case(1, relevant_ids=["d1"], expected_facts=["七天"], tags=["refund"]),
    case(2, relevant_ids=["d2", "d3"], expected_facts=["receipt"], tags=["refund"]),
    case(3, relevant_ids={"d4": 2, "d5": 1}, expected_facts=[["7 days", "seven days"]]),
    case(4, relevant_ids=["d6"], expected_facts=["48小时"]),
    case(5, relevant_ids=["d7"], expected_facts=["$20"]),
    case(6, relevant_ids=["d8"], expected_facts=["x"]),
    case(7, unanswerable=True),
    case(8, unanswerable=True),
    case(9, relevant_ids=["d9"], expected_facts=["refund"]),
    case(10, relevant_ids=["d10"]),  # retrieval only
    case(11, relevant_ids=["d1"], expected_facts=["x"]),  # HTTP 500: http_status
    case(12, relevant_ids=["d1"], expected_facts=["x"]),  # not JSON: bad_response
]

MIXED_REPLIES: dict[str, Reply] = {
    "q01": Reply(rag_body(["d1", "x", "y"], "申请需在七天内提交", [1]), delay=0.01),
    "q02": Reply(rag_body(["d1", "d2", "x", "d3"], "Keep the receipt.", [2, 3]), delay=0.02),
    "q03": Reply(rag_body(["d5", "d4"], "Within seven days", ["d4"]), delay=0.03),
    "q04": Reply(rag_body(["x", "y", "z", "d6"], "大约一天", [1]), delay=0.04),
    "q05": Reply(rag_body(["d7"], "I don't know.", []), delay=0.05),
    "q06": Reply(rag_body([], "", []), delay=0.06),
    "q07": Reply(rag_body([], "没有足够证据回答。", []), delay=0.07),
    "q08": Reply(rag_body(["d1"], "七天", [1]), delay=0.08),
    "q09": Reply(rag_body(["x", "d9"], "A refund is possible.", [2]), delay=0.09),
    "q10": Reply(rag_body(["d10", "x"], "", []), delay=0.1),
    "q11": Reply(body={"detail": "boom"}, status=500, delay=0.11),
    "q12": Reply(raw=b"{not json", delay=0.12),
}

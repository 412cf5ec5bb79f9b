"""Metric names of the documented contract (docs/daemon.md, docs/reports.md), written out
literally: tests check the product against the contract, so they must not derive these names
from the code under test."""

from __future__ import annotations

__all__ = ["CONVERSATION_GAUGES", "DELIVERY_GAUGES", "QUALITY_GAUGES"]

#: each quality gauge of the last complete run -> the report summary key it must equal
QUALITY_GAUGES: dict[str, str] = {
    "rag_eval_recall_at_k": "recall_at_k",
    "rag_eval_mrr": "mrr",
    "rag_eval_ndcg_at_k": "ndcg_at_k",
    "rag_eval_citation_precision": "citation_precision",
    "rag_eval_citation_recall": "citation_recall",
    "rag_eval_answer_accuracy": "answer_accuracy",
    "rag_eval_fact_recall": "fact_recall",
    "rag_eval_false_refusal_rate": "false_refusal_rate",
    "rag_eval_correct_refusal_rate": "correct_refusal_rate",
    "rag_eval_latency_p50_seconds": "p50_seconds",
    "rag_eval_latency_p95_seconds": "p95_seconds",
}

#: present only for targets that stream or report usage -> the summary key they equal
DELIVERY_GAUGES: dict[str, str] = {
    "rag_eval_ttft_p50_seconds": "p50_ttft_seconds",
    "rag_eval_ttft_p95_seconds": "p95_ttft_seconds",
    "rag_eval_tokens_per_second_p50": "p50_tokens_per_second",
    "rag_eval_case_cost_mean": "cost_per_case",
    "rag_eval_run_cost": "cost_total",
    "rag_eval_run_output_tokens": "output_tokens_total",
}

#: present only for golden sets with conversations -> the summary key they equal
CONVERSATION_GAUGES: dict[str, str] = {
    "rag_eval_conversation_success": "conversation_success",
    "rag_eval_conversation_latency_p95_seconds": "p95_conversation_seconds",
}

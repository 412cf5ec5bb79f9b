"""Run reports: the JSON written after every run, read back by the gate and the daemon.

The shape keeps the customary names (``recall_at_k``, ``mrr``, ``ndcg_at_k``,
``citation_precision``, ``answer_correct``, ``latency_seconds``...) and adds the rest of the
documented fields.

- :mod:`~evaluator.report.model`: the :class:`RunReport` record and its config hash;
- :mod:`~evaluator.report.write`: streamed, compact, atomic writing;
- :mod:`~evaluator.report.read`: one-pass decoding against a typed schema (msgspec), the
  summary derived from the cases;
- :mod:`~evaluator.report.check`: what a report read back must satisfy beyond its schema
  (unique ids; a summary-only report's summary agreeing with itself).
"""

from __future__ import annotations

from evaluator.report.model import (
    SCHEMA_VERSION,
    RunReport,
    compute_config_hash,
    format_timestamp,
    parse_timestamp,
)
from evaluator.report.read import read_report, report_from_dict
from evaluator.report.write import (
    encode_json,
    encode_report,
    fsync_folder,
    report_to_dict,
    scores_to_dict,
    write_bytes_atomic,
    write_json_atomic,
    write_report,
)

__all__ = [
    "SCHEMA_VERSION",
    "RunReport",
    "compute_config_hash",
    "encode_json",
    "encode_report",
    "format_timestamp",
    "fsync_folder",
    "parse_timestamp",
    "read_report",
    "report_from_dict",
    "report_to_dict",
    "scores_to_dict",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_report",
]

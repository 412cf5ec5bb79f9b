"""Run reports: the JSON written after every run, read back by the gate and the daemon.

The shape keeps the article's names (``recall_at_k``, ``mrr``, ``ndcg_at_k``,
``citation_precision``, ``answer_correct``, ``latency_seconds``...) and adds the rest of
DESIGN.md's fields. Files are written atomically: a crash never leaves half a report.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from evaluator._version import __version__
from evaluator.errors import ReportError
from evaluator.models import CaseError, CaseRecord, CaseScores, Citation
from evaluator.redaction import redactor
from evaluator.repeats import Repeats, repeats_from_dict
from evaluator.scoring.labels import audit_record, audit_run
from evaluator.summary import Summary, Total

__all__ = [
    "SCHEMA_VERSION",
    "RunReport",
    "compute_config_hash",
    "encode_json",
    "read_report",
    "report_from_dict",
    "report_to_dict",
    "scores_to_dict",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_report",
]

SCHEMA_VERSION = 1
#: the largest integer a float holds exactly: beyond it a count is not a count
_MAX_EXACT_INT = 2**53


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run of a golden set against a target."""

    run_id: str
    generated_at: str
    config_hash: str
    dataset_hash: str
    target: str
    dataset: str
    k: int
    duration_seconds: float
    summary: Summary
    cases: tuple[CaseRecord, ...]
    retrieval_only: bool = False
    #: each case's counts over ``--repeat N`` runs (``cases`` and ``summary`` are run 1)
    repeats: Repeats | None = None
    evaluator_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    @property
    def case_count(self) -> int:
        return len(self.cases)

    @property
    def error_count(self) -> int:
        return sum(1 for c in self.cases if c.error is not None)


def compute_config_hash(
    *,
    dataset_hash: str,
    target_identity: Mapping[str, Any],
    k: int,
    scoring: Mapping[str, Any],
    version: str = __version__,
) -> str:
    """Hash of what makes two runs comparable; secrets and timestamps are never part of it."""
    material = json.dumps(
        {
            "dataset": dataset_hash,
            "target": dict(target_identity),
            "k": k,
            "scoring": dict(scoring),
            "version": version,
        },
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _relevant_json(relevance: Mapping[str, int]) -> list[str] | dict[str, int]:
    if all(g == 1 for g in relevance.values()):
        return list(relevance)
    return dict(relevance)


_SCORE_FIELDS = tuple(f.name for f in fields(CaseScores))


def scores_to_dict(scores: CaseScores | None) -> dict[str, Any]:
    """Every per-case metric by its report name; all None for a failed case."""
    return {name: getattr(scores, name) if scores else None for name in _SCORE_FIELDS}


#: per-case delivery measurements, written only when measured (streamed, usage, traced)
_DELIVERY_NUMBERS = ("ttfb_seconds", "ttft_seconds", "tokens_per_second", "cost")
_DELIVERY_COUNTS = ("input_tokens", "output_tokens")


def _case_to_dict(c: CaseRecord) -> dict[str, Any]:
    out = _case_core(c)
    for name in (*_DELIVERY_NUMBERS, *_DELIVERY_COUNTS, "trace_id"):
        value = getattr(c, name)
        if value is not None:
            out[name] = value
    return out


def _case_core(c: CaseRecord) -> dict[str, Any]:
    return {
        "id": c.id,
        "question": c.question,
        "tags": list(c.tags),
        "unanswerable": c.unanswerable,
        "relevant_ids": _relevant_json(c.relevance),
        "expected_facts": [list(f) if len(f) > 1 else f[0] for f in c.expected_facts],
        "ranked_ids": list(c.ranked_ids),
        "answer": c.answer,
        "citations": list(c.citations),
        **scores_to_dict(c.scores),
        "latency_seconds": c.latency_seconds,
        "stage_seconds": dict(c.stage_seconds),
        "attempts": c.attempts,
        "error": (
            None
            if c.error is None
            else {"kind": c.error.kind, "message": c.error.message, "status": c.error.status}
        ),
        "texts": dict(c.texts),
        "cut_texts": sorted(c.cut_texts),
        "suspect_label": audit_record(c).message,
    }


def report_to_dict(report: RunReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (field order as DESIGN.md lists it), redacted.

    Every way a report leaves the process (a file, ``latest.json``, ``/reports/latest``,
    a candidate report) starts here, so this is where the targets' secrets are removed.
    """
    data = {
        "schema_version": report.schema_version,
        "evaluator_version": report.evaluator_version,
        "run_id": report.run_id,
        "generated_at": report.generated_at,
        "config_hash": report.config_hash,
        "dataset_hash": report.dataset_hash,
        "target": report.target,
        "dataset": report.dataset,
        "k": report.k,
        "retrieval_only": report.retrieval_only,
        "case_count": report.case_count,
        "error_count": report.error_count,
        "duration_seconds": report.duration_seconds,
        "summary": report.summary.to_dict(),
        "label_audit": audit_run(report.cases).to_dict(),
        "cases": [_case_to_dict(c) for c in report.cases],
    }
    if report.repeats is not None:
        data["repeats"] = report.repeats.to_dict()
    redacted: dict[str, Any] = redactor().redact_json(data)
    return redacted


def encode_json(data: Any) -> bytes:
    """The JSON bytes reports are written as (UTF-8, indented, NaN refused)."""
    return (json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode()


def write_bytes_atomic(content: bytes, path: str | os.PathLike[str]) -> None:
    """Write to a temporary file in the same folder, fsync it, rename it over ``path``, and
    fsync the folder so the rename itself survives a power loss."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; reports are read by sidecars and CI steps running as others
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def write_json_atomic(data: Any, path: str | os.PathLike[str]) -> None:
    """Write ``data`` as JSON atomically (see :func:`write_bytes_atomic`).

    Raises:
        ValueError: ``data`` holds NaN or infinity; the previous file is left as it was.
    """
    write_bytes_atomic(encode_json(data), path)


def write_report(report: RunReport, path: str | os.PathLike[str]) -> None:
    """Write ``report`` atomically to ``path``."""
    write_json_atomic(report_to_dict(report), path)


# --- reading back -------------------------------------------------------------------------


class _Reader:
    """Typed access to a decoded report, raising :class:`ReportError` naming the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, expected: str) -> ReportError:
        return ReportError(f"{self.source}: field {where!r} is missing or not {expected}")

    def obj(self, d: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
        v = d.get(key)
        if not isinstance(v, Mapping):
            raise self.fail(f"{where}{key}", "an object")
        return v

    def str_(self, d: Mapping[str, Any], key: str, where: str = "") -> str:
        v = d.get(key)
        if not isinstance(v, str):
            raise self.fail(f"{where}{key}", "a string")
        return v

    def int_(self, d: Mapping[str, Any], key: str, where: str = "") -> int:
        v = d.get(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(f"{where}{key}", "an integer")
        if abs(v) > _MAX_EXACT_INT:  # a count of 10**400 would overflow every ratio made of it
            raise self.fail(f"{where}{key}", "an integer below 2**53")
        return v

    def num(self, d: Mapping[str, Any], key: str, where: str = "") -> float:
        v = self.opt_num(d, key, where)
        if v is None:
            raise self.fail(f"{where}{key}", "a number")
        return v

    def opt_num(self, d: Mapping[str, Any], key: str, where: str = "") -> float | None:
        v = d.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(f"{where}{key}", "a number or null")
        try:
            return float(v)
        except OverflowError:  # JSON integers have no size limit: 10**400 is valid JSON
            raise self.fail(f"{where}{key}", "a number within float range") from None

    def opt_bool(self, d: Mapping[str, Any], key: str, where: str = "") -> bool | None:
        v = d.get(key)
        if v is not None and not isinstance(v, bool):
            raise self.fail(f"{where}{key}", "a boolean or null")
        return v

    def num_map(self, d: Mapping[str, Any], key: str, where: str) -> dict[str, float]:
        m = d.get(key) or {}
        if not isinstance(m, Mapping):
            raise self.fail(f"{where}{key}", "an object")
        return {str(k): self.num(m, k, f"{where}{key}.") for k in m}


def _summary_from_dict(r: _Reader, d: Mapping[str, Any], where: str) -> Summary:
    totals_raw = r.obj(d, "totals", where)
    totals = {
        name: Total(
            r.num(r.obj(totals_raw, name, f"{where}totals."), "sum", f"{where}totals.{name}."),
            r.int_(r.obj(totals_raw, name, f"{where}totals."), "count", f"{where}totals.{name}."),
        )
        for name in totals_raw
    }
    by_tag_raw = d.get("by_tag") or {}
    if not isinstance(by_tag_raw, Mapping):
        raise r.fail(f"{where}by_tag", "an object")
    errors_raw = d.get("errors_by_kind") or {}
    if not isinstance(errors_raw, Mapping):
        raise r.fail(f"{where}errors_by_kind", "an object")
    return Summary(
        case_count=r.int_(d, "case_count", where),
        scored_count=r.int_(d, "scored_count", where),
        error_count=r.int_(d, "error_count", where),
        totals=totals,
        error_rate=r.opt_num(d, "error_rate", where),
        p50_seconds=r.opt_num(d, "p50_seconds", where),
        p95_seconds=r.opt_num(d, "p95_seconds", where),
        stage_p95_seconds=r.num_map(d, "stage_p95_seconds", where),
        errors_by_kind={
            str(k): r.int_(errors_raw, k, f"{where}errors_by_kind.") for k in errors_raw
        },
        by_tag={
            str(tag): _summary_from_dict(
                r, r.obj(by_tag_raw, tag, f"{where}by_tag."), f"{where}by_tag.{tag}."
            )
            for tag in by_tag_raw
        },
        event_loop_lag_p95_seconds=r.opt_num(d, "event_loop_lag_p95_seconds", where),
        event_loop_lag_max_seconds=r.opt_num(d, "event_loop_lag_max_seconds", where),
        p50_ttft_seconds=r.opt_num(d, "p50_ttft_seconds", where),
        p95_ttft_seconds=r.opt_num(d, "p95_ttft_seconds", where),
        p95_ttfb_seconds=r.opt_num(d, "p95_ttfb_seconds", where),
        p50_tokens_per_second=r.opt_num(d, "p50_tokens_per_second", where),
        input_tokens_total=_opt_int(r, d, "input_tokens_total", where),
        output_tokens_total=_opt_int(r, d, "output_tokens_total", where),
        cost_total=r.opt_num(d, "cost_total", where),
        cost_per_case=r.opt_num(d, "cost_per_case", where),
    )


def _opt_int(r: _Reader, d: Mapping[str, Any], key: str, where: str) -> int | None:
    return r.int_(d, key, where) if d.get(key) is not None else None


def _citations(r: _Reader, d: Mapping[str, Any], where: str) -> tuple[Citation, ...]:
    raw = d.get("citations") or []
    if not isinstance(raw, list) or not all(
        isinstance(c, int | str) and not isinstance(c, bool) for c in raw
    ):
        raise r.fail(f"{where}citations", "a list of positions or ids")
    return tuple(raw)


def _texts(r: _Reader, d: Mapping[str, Any], where: str) -> dict[str, str]:
    raw = d.get("texts") or {}
    if not isinstance(raw, Mapping) or not all(isinstance(t, str) for t in raw.values()):
        raise r.fail(f"{where}texts", "an object of id -> text")
    return {str(k): v for k, v in raw.items()}


def _str_list(r: _Reader, d: Mapping[str, Any], key: str, where: str) -> list[str]:
    raw = d.get(key) or []
    if not isinstance(raw, list) or not all(isinstance(i, str) for i in raw):
        raise r.fail(f"{where}{key}", "a list of strings")
    return raw


def _case_from_dict(r: _Reader, d: Mapping[str, Any], where: str) -> CaseRecord:
    rel_raw = d.get("relevant_ids") or []
    relevance: dict[str, int]
    if isinstance(rel_raw, list):
        relevance = {str(i): 1 for i in rel_raw}
    elif isinstance(rel_raw, Mapping):
        relevance = {str(i): r.int_(rel_raw, i, f"{where}relevant_ids.") for i in rel_raw}
    else:
        raise r.fail(f"{where}relevant_ids", "a list or an object")
    facts_raw = d.get("expected_facts") or []
    if not isinstance(facts_raw, list):
        raise r.fail(f"{where}expected_facts", "a list")
    facts = tuple(tuple(f) if isinstance(f, list) else (str(f),) for f in facts_raw)
    err_raw = d.get("error")
    error: CaseError | None = None
    if err_raw is not None:
        if not isinstance(err_raw, Mapping):
            raise r.fail(f"{where}error", "an object or null")
        status = err_raw.get("status")
        error = CaseError(
            kind=r.str_(err_raw, "kind", f"{where}error."),
            message=r.str_(err_raw, "message", f"{where}error."),
            status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        )
    recall = r.opt_num(d, "recall_at_k", where)
    scores: CaseScores | None = None
    if error is None and recall is not None:
        scores = CaseScores(
            recall_at_k=recall,
            mrr=r.num(d, "mrr", where),
            ndcg_at_k=r.num(d, "ndcg_at_k", where),
            citation_precision=r.opt_num(d, "citation_precision", where),
            citation_recall=r.opt_num(d, "citation_recall", where),
            citation_valid=r.opt_bool(d, "citation_valid", where),
            answer_correct=r.opt_bool(d, "answer_correct", where),
            fact_recall=r.opt_num(d, "fact_recall", where),
            refused=r.opt_bool(d, "refused", where),
        )
    ranked = d.get("ranked_ids") or []
    tags = d.get("tags") or []
    answer = d.get("answer")
    return CaseRecord(
        id=r.str_(d, "id", where),
        question=r.str_(d, "question", where),
        unanswerable=r.opt_bool(d, "unanswerable", where) or False,
        relevance=relevance,
        expected_facts=facts,
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        ranked_ids=tuple(str(i) for i in ranked) if isinstance(ranked, list) else (),
        answer=answer if isinstance(answer, str) else None,
        citations=_citations(r, d, where),
        scores=scores,
        latency_seconds=r.num(d, "latency_seconds", where),
        stage_seconds=r.num_map(d, "stage_seconds", where),
        attempts=r.int_(d, "attempts", where) if "attempts" in d else 1,
        error=error,
        texts=_texts(r, d, where),
        cut_texts=frozenset(_str_list(r, d, "cut_texts", where)),
        ttfb_seconds=r.opt_num(d, "ttfb_seconds", where),
        ttft_seconds=r.opt_num(d, "ttft_seconds", where),
        tokens_per_second=r.opt_num(d, "tokens_per_second", where),
        cost=r.opt_num(d, "cost", where),
        input_tokens=r.int_(d, "input_tokens", where)
        if d.get("input_tokens") is not None
        else None,
        output_tokens=(
            r.int_(d, "output_tokens", where) if d.get("output_tokens") is not None else None
        ),
        trace_id=r.str_(d, "trace_id", where) if d.get("trace_id") is not None else None,
    )


def report_from_dict(data: object, source: str = "report") -> RunReport:
    """Rebuild a :class:`RunReport` from its JSON dict.

    Raises:
        ReportError: naming the source and the first bad field.
    """
    r = _Reader(source)
    if not isinstance(data, Mapping):
        raise ReportError(f"{source}: not a report (expected a JSON object)")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(
            f"{source}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})"
        )
    cases_raw = data.get("cases")
    if not isinstance(cases_raw, list):
        raise r.fail("cases", "a list")
    cases = []
    for i, c in enumerate(cases_raw):
        if not isinstance(c, Mapping):
            raise r.fail(f"cases[{i}]", "an object")
        cases.append(_case_from_dict(r, c, f"cases[{i}]."))
    return RunReport(
        run_id=r.str_(data, "run_id"),
        generated_at=r.str_(data, "generated_at"),
        config_hash=r.str_(data, "config_hash"),
        dataset_hash=r.str_(data, "dataset_hash"),
        target=r.str_(data, "target"),
        dataset=r.str_(data, "dataset"),
        k=r.int_(data, "k"),
        duration_seconds=r.num(data, "duration_seconds"),
        summary=_summary_from_dict(r, r.obj(data, "summary", ""), "summary."),
        cases=tuple(cases),
        retrieval_only=bool(data.get("retrieval_only", False)),
        repeats=_repeats(data, source),
        evaluator_version=str(data.get("evaluator_version", "")),
        schema_version=SCHEMA_VERSION,
    )


def _repeats(data: Mapping[str, Any], source: str) -> Repeats | None:
    """The optional ``repeats`` block (``--repeat N``), checked."""
    raw = data.get("repeats")
    if raw is None:
        return None
    try:
        return repeats_from_dict(raw, source)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def read_report(path: str | os.PathLike[str]) -> RunReport:
    """Read a report file.

    Raises:
        ReportError: unreadable, not JSON (e.g. truncated), or not a report.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ReportError(f"{path}: cannot read report: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: not valid JSON (truncated or corrupt?): {exc}") from exc
    except RecursionError:  # thousands of nested arrays: no report looks like that
        raise ReportError(f"{path}: not a report (JSON nested too deeply)") from None
    return report_from_dict(data, str(path))

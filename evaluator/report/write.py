"""Writing reports: the header, then one compact line per case, streamed to a temporary
file that is fsynced and renamed over the target.

A crash never leaves half a report, and a 100,000-case report is never held whole in
memory as JSON. The C encoder writes without indentation (``indent=2`` is CPython's
pure-Python encoder: three times slower and eight times the memory).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from evaluator.models import DELIVERY_FIELDS, CaseRecord, CaseScores
from evaluator.redaction import redactor
from evaluator.report.model import RunReport, format_timestamp
from evaluator.scoring.labels import (
    AuditTotals,
    LabelAudit,
    audit_labels,
    audit_record,
    audit_run,
)

__all__ = [
    "encode_json",
    "encode_report",
    "fsync_folder",
    "report_chunks",
    "report_to_dict",
    "scores_to_dict",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_report",
]


#: scores only some cases have (a conversation's last turn): written only when set, so every
#: other case keeps the entry (and the log line) it always had
_WHEN_SET = ("conversation_success",)
_SCORE_FIELDS = tuple(name for name in CaseScores.__struct_fields__ if name not in _WHEN_SET)


def scores_to_dict(scores: CaseScores | None) -> dict[str, Any]:
    """Every per-case metric by its report name; all None for a failed case (a score only
    some cases have is left out where it is None)."""
    out = {name: getattr(scores, name) if scores else None for name in _SCORE_FIELDS}
    if scores is not None:
        for name in _WHEN_SET:
            value = getattr(scores, name)
            if value is not None:
                out[name] = value
    return out


def _relevance(relevance: Mapping[str, int]) -> list[str] | dict[str, int]:
    """Relevance as written: binary relevance as a list of ids, graded as an object."""
    return list(relevance) if all(g == 1 for g in relevance.values()) else dict(relevance)


def _case_to_dict(c: CaseRecord, audit: LabelAudit | None = None) -> dict[str, Any]:
    """One case's report entry (``audit``: its label audit, when already computed)."""
    relevance = c.case.relevance
    out: dict[str, Any] = {
        "id": c.id,
        "question": c.case.question,
        "tags": list(c.case.tags),
        "unanswerable": c.case.unanswerable,
        "relevant_ids": _relevance(relevance),
        "expected_facts": [list(f) if len(f) > 1 else f[0] for f in c.case.expected_facts],
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
        "suspect_label": (audit or audit_record(c)).message,
    }
    _add_optional(out, c)
    return out


def _add_optional(out: dict[str, Any], c: CaseRecord) -> None:
    """The entry's fields written only when they hold something: the delivery's, a turn's
    place in its conversation, the figures dropped as out of range. A question of its own
    without them keeps the entry it always had."""
    for name in DELIVERY_FIELDS:
        value = getattr(c, name)
        if value is not None:
            out[name] = value
    turn = c.case.turn
    if turn is not None:
        out["conversation"] = turn.conversation
        out["turn"] = turn.position
        if turn.assistant is not None:
            out["assistant"] = turn.assistant
    if c.out_of_range:
        out["out_of_range"] = list(c.out_of_range)


def _header_to_dict(report: RunReport, audit: AuditTotals | None = None) -> dict[str, Any]:
    """Every field but the cases, in report order (``audit``: the label audit of the cases,
    when already computed)."""
    return {
        "schema_version": report.schema_version,
        "evaluator_version": report.evaluator_version,
        "run_id": report.run_id,
        "generated_at": format_timestamp(report.generated_at),
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
        **({"repeats": report.repeats.to_dict()} if report.repeats is not None else {}),
        **({"interrupted": True} if report.interrupted else {}),
        **({"judge": dict(report.judge)} if report.judge is not None else {}),
        "label_audit": (audit or audit_run(report.cases)).to_dict(),
    }


def report_to_dict(report: RunReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (fields in report order), redacted.

    Files are not written from this dict (see :func:`report_chunks`); it is for callers
    that want the report as data, and leaves the process as safely as a file does.
    """
    data = {**_header_to_dict(report), "cases": [_case_to_dict(c) for c in report.cases]}
    redacted: dict[str, Any] = redactor().redact_json(data)
    return redacted


#: Compact and strict: the C encoder, no indentation, NaN and infinity refused.
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=False
)


def _egress(text: str) -> str:
    """The one place report text leaves the process (files, ``latest.json``,
    ``/reports/latest``, candidate reports): the targets' secrets are removed here, from the
    encoded JSON (the redactor knows their JSON-escaped forms too), one case at a time."""
    return redactor().redact_text(text)


def _header_chunk(header: dict[str, Any]) -> str:
    """The report's text up to its first case: the header object, opened for the cases."""
    return _egress(_ENCODER.encode(header)[:-1] + ',"cases":[\n')


def report_chunks(report: RunReport) -> Iterator[str]:
    """The report's JSON, piece by piece: the header, then one compact line per case.

    Joined, the pieces are one JSON object whose ``cases`` come last, one per line::

        {"schema_version":1,...,"summary":{...},"cases":[
        {"id":"q1",...},
        {"id":"q2",...}
        ]}

    Raises:
        ValueError: a number is NaN or infinite (nothing of it should be kept).
    """
    # each case audited once, for the header's totals and for its own entry
    audits = [audit_record(case) for case in report.cases]
    totals = audit_labels(zip((case.id for case in report.cases), audits, strict=True))
    yield _header_chunk(_header_to_dict(report, totals))
    last = len(report.cases) - 1
    for i, case in enumerate(report.cases):
        line = _ENCODER.encode(_case_to_dict(case, audits[i]))
        yield _egress(line + (",\n" if i < last else "\n"))
    yield "]}\n"


def encode_report(report: RunReport) -> bytes:
    """The report file's bytes (as :func:`write_report` writes them)."""
    return "".join(report_chunks(report)).encode()


def encode_json(data: Any) -> bytes:
    """Compact JSON bytes (UTF-8, NaN refused), for JSON that is not a report."""
    return (_ENCODER.encode(data) + "\n").encode()


@contextlib.contextmanager
def _atomic_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A temporary file in the same folder that replaces ``path`` when the block ends
    without an exception: written, fsynced, renamed over ``path``, and the folder fsynced
    so the rename itself survives a power loss. On an exception the temporary file is
    removed and ``path`` is left as it was."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; reports are read by sidecars and CI steps running as others
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb", buffering=_BUFFER) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    fsync_folder(target.parent)


#: Write buffer: large enough that a 100,000-case report is a few hundred write calls.
_BUFFER = 1 << 20


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so a rename inside it is durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(content: bytes, path: str | os.PathLike[str]) -> None:
    """Write ``content`` to ``path`` atomically (see :func:`_atomic_file`)."""
    with _atomic_file(path) as f:
        f.write(content)


def write_json_atomic(data: Any, path: str | os.PathLike[str]) -> None:
    """Write ``data`` as compact JSON atomically.

    Raises:
        ValueError: ``data`` holds NaN or infinity; the previous file is left as it was.
    """
    write_bytes_atomic(encode_json(data), path)


def write_report(report: RunReport, path: str | os.PathLike[str]) -> None:
    """Stream ``report`` to ``path`` atomically: never held whole in memory, and a crash or
    an error part-way leaves the previous file (or none) in place, never half a report.

    Raises:
        ValueError: a number is NaN or infinite; ``path`` is left as it was.
        OSError: the folder is not writable.
    """
    with _atomic_file(path) as f:
        for chunk in report_chunks(report):
            f.write(chunk.encode())

"""The run report record: one run of a golden set against a target (its header, summary
and cases), and its identity."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from operator import attrgetter
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from evaluator import border
from evaluator._version import __version__
from evaluator.models import CaseError, CaseRecord, CaseScores
from evaluator.repeat_summary import Repeats
from evaluator.summary import Summary

__all__ = ["SCHEMA_VERSION", "RunHeader", "RunReport", "compute_config_hash"]

_OUTCOME = attrgetter("outcome")

SCHEMA_VERSION = 1


#: a duration from outside: never negative, within the border's range for a number (a
#: duration of 1e308 overflowed the gate's sums)
Seconds = Annotated[float, Meta(ge=0.0, le=border.MAX_NUMBER)]
#: the cutoff: ranks worth reading
K = Annotated[int, Meta(ge=1, le=1_000_000)]


class RunHeader(msgspec.Struct, frozen=True, kw_only=True):
    """What identifies one run of a golden set against a target, and how it ended: every
    field of a report besides its summary and cases, written once. The report reader decodes
    a file's header straight into these fields (their ranges are in the types, checked while
    decoding)."""

    run_id: str
    #: when the run started, timezone-aware UTC; written as :func:`format_timestamp` says
    generated_at: datetime
    config_hash: str
    dataset_hash: str
    target: str
    dataset: str
    k: K
    duration_seconds: Seconds
    #: stopped by Ctrl-C: ``cases`` are the ones that finished (the gate refuses it)
    interrupted: bool = False
    evaluator_version: str = __version__
    schema_version: int = SCHEMA_VERSION


class RunReport(RunHeader, frozen=True, kw_only=True):
    """One run of a golden set against a target: its header, summary and cases."""

    summary: Summary
    cases: tuple[CaseRecord, ...]
    #: each case's counts over ``--repeat N`` runs (``cases`` and ``summary`` are run 1)
    repeats: Repeats | None = None
    #: the LLM judge's block (evaluator.judge.record.JudgedRun.to_dict), kept as JSON here:
    #: the report layer knows nothing of the judge
    judge: Mapping[str, Any] | None = None

    @property
    def case_count(self) -> int:
        return len(self.cases)

    @property
    def error_count(self) -> int:
        # the outcome itself, not the ``error`` view: a Python call per case saved
        return sum(isinstance(outcome, CaseError) for outcome in map(_OUTCOME, self.cases))

    @property
    def retrieval_only(self) -> bool:
        """No scored case came with an answer: answer and citation metrics were not scored.

        Derived from the cases, never stored apart from them: the report still writes the
        key (readers of older versions expect it), but a value read back cannot disagree with
        the cases it describes.
        """
        scored = False
        for c in self.cases:  # stops at the first scored case with an answer
            if isinstance(c.outcome, CaseScores):
                if c.answer is not None:
                    return False
                scored = True
        return scored


def format_timestamp(at: datetime) -> str:
    """A report's time as written: UTC, milliseconds, ``Z`` (``2025-01-02T03:04:05.678Z``)."""
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(text: str) -> datetime:
    """A written time back as an aware datetime; one without an offset is taken as UTC.

    Raises:
        ValueError: ``text`` is not an ISO 8601 time.
    """
    return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


def as_utc(at: datetime) -> datetime:
    """``at`` in UTC; a time without an offset is taken as UTC."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


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

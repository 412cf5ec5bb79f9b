"""Human labels: JSONL, one label a line, keyed by case id and the answer's hash.

A label is a reviewer's verdict on one check of one answer: ``true`` when the answer
passes it (states every expected fact; is wholly supported by its evidence; is a refusal).
Each label is appended and flushed to disk as it is given, so Ctrl-C loses nothing, and a
file is resumable: a case already labelled for an answer is not asked again. Keys are
written sorted, one label a line: the file is stable and safe to commit.

Reading is bounded and strict per line: a bad line names its number; a reviewer's latest
label of a (case, answer, check) wins (a reviewer who changed their mind). Several
reviewers may label the same answer (an overlap sample, ``evaluator review --overlap``):
the first one's label is the reference the judge is calibrated against, the others'
measure how far the reviewers agree with each other (the check's human ceiling).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evaluator import border
from evaluator.errors import EvaluatorError
from evaluator.judge.checks import check as judged_check
from evaluator.judge.checks import check_names
from evaluator.judge.record import CaseJudgement, CheckOutcome

__all__ = [
    "MAX_LABELS_BYTES",
    "Label",
    "LabelsError",
    "append_label",
    "judge_says",
    "judge_uncertain",
    "now",
    "outcome_verdict",
    "read_labels",
    "read_reviews",
    "reference_labels",
]

_MAX_LINE = 10_000
_MAX_LABELS = 1_000_000
#: most bytes read of a labels file: about 300,000 labels of 200 bytes (the reference golden
#: set's 239 labels take 50 KB), within the daemon's memory bound
MAX_LABELS_BYTES = 64 << 20


class LabelsError(EvaluatorError):
    """A labels file cannot be read: the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class Label:
    case_id: str
    answer_hash: str
    check: str
    verdict: bool
    reviewer: str
    at: str
    note: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.case_id, self.answer_hash, self.check

    def to_line(self) -> str:
        data = {
            "answer_hash": self.answer_hash,
            "at": self.at,
            "case_id": self.case_id,
            "check": self.check,
            "reviewer": self.reviewer,
            "verdict": self.verdict,
        }
        if self.note:
            data["note"] = self.note
        return json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def append_label(path: Path, label: Label) -> None:
    """Append ``label`` to ``path`` and flush it to disk before returning."""
    with path.open("a", encoding="utf-8") as f:
        f.write(label.to_line())
        f.flush()
        os.fsync(f.fileno())


def _text(data: dict[str, object], name: str, where: str, limit: int = 500) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > limit:
        raise LabelsError(f"{where}: {name!r} must be a non-empty string of at most {limit}")
    return value


def read_labels(path: Path) -> dict[tuple[str, str, str], Label]:
    """The reference label of each (case id, answer hash, check) of ``path``: the label of
    the reviewer who labelled it first (their latest, when they changed their mind). A
    second reviewer's label of the same answer (an overlap sample, :func:`read_reviews`)
    measures the reviewers against each other; it never replaces the first one's.

    Read through the border's bounded reader (a regular file of at most
    :data:`MAX_LABELS_BYTES`: a FIFO or ``/dev/zero`` in its place is refused, never waited
    on nor read for ever) and its JSON reader. Blocking I/O: the daemon calls it in a worker
    thread.

    Raises:
        LabelsError: unreadable, or a line that is not a label (named by its number).
    """
    return reference_labels(read_reviews(path))


def reference_labels(
    reviews: Mapping[tuple[str, str, str], Sequence[Label]],
) -> dict[tuple[str, str, str], Label]:
    """Each key's reference label: the first reviewer's (see :func:`read_labels`)."""
    return {key: labels[0] for key, labels in reviews.items() if labels}


def read_reviews(path: Path) -> dict[tuple[str, str, str], tuple[Label, ...]]:
    """Every reviewer's label of each (case id, answer hash, check) of ``path``: each
    reviewer's latest, in the order the reviewers first labelled it.

    Raises:
        LabelsError: unreadable, or a line that is not a label (named by its number).
    """
    by_reviewer: dict[tuple[str, str, str], dict[str, Label]] = {}
    for label in _labels_in(path):
        by_reviewer.setdefault(label.key, {})[label.reviewer] = label
    return {key: tuple(labels.values()) for key, labels in by_reviewer.items()}


def _labels_in(path: Path) -> Iterator[Label]:
    """Each label of ``path`` in file order (none: no file)."""
    try:
        raw = border.read_file(path, MAX_LABELS_BYTES)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LabelsError(f"{path}: {exc.strerror}") from None
    for number, line in enumerate(raw.split(b"\n"), start=1):
        where = f"{path}:{number}"
        if number > _MAX_LABELS:
            raise LabelsError(f"{where}: more than {_MAX_LABELS} labels")
        if line.strip():
            yield _label(line, where)


def _label(line: bytes, where: str) -> Label:
    """One line of a labels file, checked field by field.

    Raises:
        LabelsError: the line is not UTF-8, too long, not a JSON object, or a field is
            wrong (named).
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LabelsError(f"{where}: not UTF-8 text (at byte {exc.start})") from None
    if len(text) > _MAX_LINE:
        raise LabelsError(f"{where}: a label line is longer than {_MAX_LINE} characters")
    try:
        data = border.loads(text)
    except ValueError:
        # a line cut by a crash mid-write is the last line: say so
        raise LabelsError(f"{where}: not a JSON object") from None
    if not isinstance(data, dict):
        raise LabelsError(f"{where}: not a JSON object")
    check = data.get("check")
    if check not in check_names():
        raise LabelsError(f"{where}: 'check' must be one of {sorted(check_names())}")
    verdict = data.get("verdict")
    if not isinstance(verdict, bool):
        raise LabelsError(f"{where}: 'verdict' must be true or false")
    note = data.get("note", "")
    if not isinstance(note, str) or len(note) > 2000:
        raise LabelsError(f"{where}: 'note' must be a string of at most 2000")
    return Label(
        _text(data, "case_id", where),
        _text(data, "answer_hash", where, 64),
        str(check),
        verdict,
        _text(data, "reviewer", where, 200),
        _text(data, "at", where, 40),
        note,
    )


def outcome_verdict(outcome: CheckOutcome) -> bool | None:
    """The judge's pass/fail on a check, as a label states it (None: no verdict)."""
    if outcome.status != "judged":
        return None
    return judged_check(outcome.check).verdict(outcome.values)


def judge_says(cases: Iterable[CaseJudgement]) -> dict[tuple[str, str, str], bool]:
    """The judge's verdicts by label key."""
    out: dict[tuple[str, str, str], bool] = {}
    for case in cases:
        for outcome in case.outcomes:
            verdict = outcome_verdict(outcome)
            if verdict is not None:
                out[(case.case_id, case.answer_hash, outcome.check)] = verdict
    return out


def judge_uncertain(cases: Iterable[CaseJudgement]) -> set[tuple[str, str, str]]:
    """The label keys whose votes split (uncertain: no verdict to compare with a label)."""
    return {
        (case.case_id, case.answer_hash, outcome.check)
        for case in cases
        for outcome in case.outcomes
        if outcome.status == "uncertain"
    }

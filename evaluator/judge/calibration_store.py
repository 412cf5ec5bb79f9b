"""The stored calibration (``REPORTS_DIR/judge-calibration.json``, written by ``evaluator
calibrate``), read back as outside input: through the border's bounded reader (a regular
file within :data:`MAX_CALIBRATION_BYTES`, never a FIFO or a device) and its JSON reader, and
each entry checked against its own counts.

Nothing an entry states is taken on trust: its labels are the sum of its table, its
agreement, kappa, both bootstrap intervals and the verdict ``calibrated`` are derived again
from the table, the floor and the minimum it names
(:meth:`~evaluator.judge.calibrate.CheckCalibration.derived`), and its disagreements must be
as many as the table's off-diagonal cells. An entry that says otherwise (``calibrated:
true`` written by hand, labels inflated, a kappa that does not follow) is refused with the
reason, and calibrates nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator import border
from evaluator.judge.calibrate import CheckCalibration, Confusion
from evaluator.judge.checks import check_names
from evaluator.metrics import FLOAT_TOLERANCE

__all__ = [
    "CALIBRATION_FILE",
    "MAX_CALIBRATION_BYTES",
    "StoredCalibration",
    "read_calibration",
]

#: where `evaluator calibrate` stores its result, in the reports folder
CALIBRATION_FILE = "judge-calibration.json"
#: most bytes read of a stored calibration (a few kilobytes per check and judge)
MAX_CALIBRATION_BYTES = border.MAX_SETTINGS_BYTES
#: most entries read, and most label pairs one entry may count (a labels file holds at most
#: a million labels: evaluator.judge.labels)
_MAX_ENTRIES = 1000
_MAX_COUNT = 10_000_000
_MAX_NAME = 200
_CELLS = (
    ("human_pass_judge_pass", 0, 0),
    ("human_pass_judge_fail", 0, 1),
    ("human_fail_judge_pass", 1, 0),
    ("human_fail_judge_fail", 1, 1),
)


_REVIEWER_CELLS = (
    ("first_pass_second_pass", 0, 0),
    ("first_pass_second_fail", 0, 1),
    ("first_fail_second_pass", 1, 0),
    ("first_fail_second_fail", 1, 1),
)
#: the figures of an entry checked against those its counts give
_DERIVED_FIGURES = (
    "labels",
    "agreement",
    "kappa",
    "kappa_interval",
    "agreement_interval",
    "coverage",
)
_DERIVED_REVIEWER_FIGURES = ("labels", "agreement", "kappa", "kappa_interval", "ill_defined")


class _Refused(Exception):
    """One entry is not a calibration its own counts support (the message says why)."""

    def __init__(self, message: str, identity: tuple[str, str, str] | None = None) -> None:
        super().__init__(message)
        self.identity = identity


@dataclass(frozen=True, slots=True)
class StoredCalibration:
    """What a stored calibration holds once checked."""

    source: str
    #: the entries whose every figure follows from their counts, as derived again
    entries: tuple[CheckCalibration, ...] = ()
    #: why the file or an entry was refused, one line each (naming the field)
    problems: tuple[str, ...] = ()
    #: (model, prompt version, check) -> why its entry was refused
    refused: Mapping[tuple[str, str, str], str] = field(default_factory=dict)

    def calibrated(self) -> dict[tuple[str, str], dict[str, bool]]:
        """(model, prompt version) -> check -> calibrated, of the entries kept."""
        out: dict[tuple[str, str], dict[str, bool]] = {}
        for entry in self.entries:
            out.setdefault((entry.model, entry.prompt_version), {})[entry.check] = entry.calibrated
        return out

    def agreement_floors(self, model: str, prompt_version: str) -> dict[str, float]:
        """The lower bound of each check's agreement band for this judge (the drift alert's
        floor), of the entries kept."""
        return {
            e.check: e.agreement_band[0]
            for e in self.entries
            if e.model == model and e.prompt_version == prompt_version and e.agreement_band
        }

    def why_uncalibrated(self, identity: tuple[str, str], check: str) -> str:
        """Where to look for this judge's calibration for ``check``: why its entry was
        refused, else why the file was, else the file."""
        refused = self.refused.get((*identity, check))
        if refused is not None:
            return refused
        whole = [p for p in self.problems if p not in self.refused.values()]
        return whole[0] if whole else self.source


def read_calibration(path: Path) -> StoredCalibration:
    """The stored calibration at ``path``, checked (a missing file: nothing calibrated).

    Blocking I/O: the daemon calls it in a worker thread.
    """
    source = str(path)
    try:
        raw = border.read_file(path, MAX_CALIBRATION_BYTES)
    except FileNotFoundError:
        return StoredCalibration(source)
    except OSError as exc:
        return StoredCalibration(source, problems=(f"{source}: {exc.strerror}",))
    try:
        data = border.loads(raw)
    except ValueError as exc:
        return StoredCalibration(source, problems=(f"{source}: not JSON ({exc})",))
    checks = data.get("checks") if isinstance(data, dict) else None
    if not isinstance(checks, list):
        return StoredCalibration(source, problems=(f"{source}: checks: not a list",))
    entries: list[CheckCalibration] = []
    problems: list[str] = []
    refused: dict[tuple[str, str, str], str] = {}
    for i, entry in enumerate(checks[:_MAX_ENTRIES]):
        try:
            entries.append(_checked(entry, f"checks.{i}"))
        except _Refused as exc:
            problems.append(f"{source}: {exc}")
            if exc.identity is not None:
                refused[exc.identity] = problems[-1]
    if len(checks) > _MAX_ENTRIES:
        problems.append(f"{source}: checks: more than {_MAX_ENTRIES} entries, the rest ignored")
    return StoredCalibration(source, tuple(entries), tuple(problems), refused)


def _checked(entry: object, where: str) -> CheckCalibration:
    """The entry derived again from its counts, when every figure it states follows."""
    if not isinstance(entry, dict):
        raise _Refused(f"{where}: not an object")
    identity = (
        _name(entry, "model", where),
        _name(entry, "prompt_version", where),
        _name(entry, "check", where),
    )
    if identity[2] not in check_names():
        raise _Refused(f"{where}.check: not a judged check ({sorted(check_names())})")
    at = f"{where} {_shown(identity)}"
    try:
        derived = CheckCalibration.derived(
            identity,
            _confusion(entry.get("confusion"), f"{at}.confusion"),
            _disagreements(entry.get("disagreements"), f"{at}.disagreements"),
            floor=_floor(entry.get("floor"), f"{at}.floor"),
            min_labels=_count(entry.get("min_labels"), f"{at}.min_labels", low=1),
            uncertain=_count(entry.get("uncertain", 0), f"{at}.uncertain"),
            reviewers=_reviewers(entry.get("reviewers"), f"{at}.reviewers"),
        )
        _agrees(entry, derived, at)
    except _Refused as exc:
        raise _Refused(str(exc), identity) from None
    return derived


def _shown(identity: tuple[str, str, str]) -> str:
    return "(" + ", ".join(border.printable(part) for part in identity) + ")"


def _name(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value or len(value) > _MAX_NAME:
        raise _Refused(f"{where}.{key}: not a name of at most {_MAX_NAME} characters")
    return value


def _count(value: object, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_COUNT:
        raise _Refused(f"{where}: not a count from {low} to {_MAX_COUNT}")
    return value


def _floor(value: object, where: str) -> float:
    try:
        return border.number(value, where, low=-1.0, high=1.0)
    except ValueError as exc:
        raise _Refused(str(exc)) from None


def _confusion(value: object, where: str) -> Confusion:
    if not isinstance(value, dict):
        raise _Refused(f"{where}: not an object")
    cells = [[0, 0], [0, 0]]
    for name, row, column in _CELLS:
        cells[row][column] = _count(value.get(name), f"{where}.{name}")
    return (cells[0][0], cells[0][1]), (cells[1][0], cells[1][1])


def _reviewers(value: object, where: str) -> Confusion | None:
    """The reviewers' overlap table, when the entry has one (written before overlaps: none)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Refused(f"{where}: not an object")
    table = value.get("confusion")
    if not isinstance(table, dict):
        raise _Refused(f"{where}.confusion: not an object")
    cells = [[0, 0], [0, 0]]
    for name, row, column in _REVIEWER_CELLS:
        cells[row][column] = _count(table.get(name), f"{where}.confusion.{name}")
    return (cells[0][0], cells[0][1]), (cells[1][0], cells[1][1])


def _disagreements(value: object, where: str) -> tuple[tuple[str, bool, bool], ...]:
    if not isinstance(value, list):
        raise _Refused(f"{where}: not a list")
    out = []
    for i, item in enumerate(value):
        human = item.get("human") if isinstance(item, dict) else None
        judge = item.get("judge") if isinstance(item, dict) else None
        case_id = item.get("case_id") if isinstance(item, dict) else None
        if not (isinstance(human, bool) and isinstance(judge, bool) and isinstance(case_id, str)):
            raise _Refused(f"{where}.{i}: not a case id with a human and a judge verdict")
        if human == judge:
            raise _Refused(f"{where}.{i}: the human and the judge agree")
        out.append((case_id[:_MAX_NAME], human, judge))
    return tuple(out)


def _agrees(entry: Mapping[str, Any], derived: CheckCalibration, at: str) -> None:
    """Raise :class:`_Refused` naming the first figure of ``entry`` its counts do not give."""
    (_, fn), (fp, _) = derived.confusion
    wrong = [(h, j) for _, h, j in derived.disagreements]
    if wrong.count((True, False)) != fn or wrong.count((False, True)) != fp:
        raise _Refused(f"{at}.disagreements: {len(wrong)} listed where the table counts {fn + fp}")
    stated = derived.to_dict()
    # an entry written before coverage existed states none: its counts say no uncertain one
    _follows(entry, stated, _DERIVED_FIGURES, at, optional=("coverage",))
    if derived.reviewers is not None:
        _follows(
            entry["reviewers"], stated["reviewers"], _DERIVED_REVIEWER_FIGURES, f"{at}.reviewers"
        )
    if entry.get("calibrated") is not derived.calibrated:
        raise _Refused(
            f"{at}.calibrated: {_brief(entry.get('calibrated'))} does not follow from its "
            f"counts ({derived.labels} labels, kappa's lower bound "
            f"{_brief(derived.interval[0] if derived.interval else None)}, floor "
            f"{derived.floor:g} over >= {derived.min_labels} labels"
            f"{', the check ill-defined by its reviewers' if derived.ill_defined else ''})"
        )


def _follows(
    entry: Mapping[str, Any],
    stated: Mapping[str, Any],
    keys: tuple[str, ...],
    at: str,
    optional: tuple[str, ...] = (),
) -> None:
    """Raise :class:`_Refused` naming the first of ``keys`` whose value in ``entry`` is not
    the one derived (``optional`` ones may be absent)."""
    for key in keys:
        if key in optional and key not in entry:
            continue
        if not _same(entry.get(key), stated[key]):
            raise _Refused(
                f"{at}.{key}: {_brief(entry.get(key))} does not follow from its counts "
                f"({_brief(stated[key])})"
            )


def _same(stated: object, derived: object) -> bool:
    if derived is None or stated is None:
        return stated is derived
    if isinstance(derived, list):
        return (
            isinstance(stated, list)
            and len(stated) == len(derived)
            and all(_same(a, b) for a, b in zip(stated, derived, strict=True))
        )
    if isinstance(derived, bool) or isinstance(stated, bool):
        return stated is derived
    if not isinstance(stated, int | float) or not isinstance(derived, int | float):
        return False
    if isinstance(derived, int):
        return stated == derived
    # how far a stored figure may be from the one derived again (JSON keeps floats exactly)
    return math.isfinite(stated) and abs(stated - derived) <= FLOAT_TOLERANCE


def _brief(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return "[" + ", ".join(_brief(v) for v in value[:4]) + "]"
    shown = repr(value)
    return border.printable(shown if len(shown) <= 40 else shown[:40] + "...")

"""The judge's records: each case's verdicts, and the judged run that holds them.

A report carries one :class:`JudgedRun` as its optional ``judge`` header block (written and
read as plain JSON by :mod:`evaluator.report`, which knows nothing of the judge), so the
per-case verdicts live here, keyed by case id and answer hash, not in the case records.
Reading one back checks every field's type and bounds: a report is outside input too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from evaluator.errors import ReportError
from evaluator.judge.canary_verdicts import CANARY_CLASSES, DEFAULT_LENIENT_ABOVE, CanaryClass
from evaluator.judge.checks import check_names, judged_metrics
from evaluator.judge.errors import JUDGE_ERROR_KINDS
from evaluator.judge.settings import MAX_PANEL, MAX_SAMPLES
from evaluator.redaction import redactor

__all__ = [
    "CanaryResult",
    "CaseJudgement",
    "CheckOutcome",
    "JudgeUsage",
    "JudgedRun",
    "Vote",
    "answer_hash",
    "judged_run_from_dict",
]

#: ``uncertain``: the votes split (samples or panel members disagreed); never a pass or a
#: fail, out of the judged averages as errors are
Status = Literal["judged", "error", "skipped", "uncertain"]
_STATUSES = ("judged", "error", "skipped", "uncertain")
#: a vote's own status (a vote is one call: it judged, failed or was skipped)
_VOTE_STATUSES = ("judged", "error", "skipped")
#: votes one outcome holds at most (samples x judges on the panel)
MAX_VOTES = 90
_KINDS = frozenset(JUDGE_ERROR_KINDS)


def answer_hash(answer: str | None) -> str:
    """The answer's identity in labels and cached verdicts: sha256, 16 hex digits, of the
    answer as a report keeps it (redacted of every registered secret), so the daemon's
    in-memory answer, which still holds a token the target echoed, and the same answer read
    back from its report file are one answer (redacting twice changes nothing)."""
    return hashlib.sha256(redactor().redact_text(answer or "").encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """One check of one case: judged (with its values), failed (with the kind), skipped
    (the run's judge budget was spent), or uncertain (its votes split). With more than one
    vote (``samples``, a panel) it keeps every vote; a judged or failed outcome's values
    and reason are then those of the first vote of the majority."""

    check: str
    status: Status
    values: Mapping[str, float | bool] = field(default_factory=dict)
    reason: str = ""
    unsupported: tuple[str, ...] = ()
    error_kind: str | None = None
    error: str | None = None
    cached: bool = False
    votes: tuple[Vote, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "status": self.status}
        if self.status == "judged":
            out |= {"values": dict(self.values), "reason": self.reason, "cached": self.cached}
            if self.unsupported:
                out["unsupported"] = list(self.unsupported)
        elif self.status == "error":
            out |= {"error_kind": self.error_kind, "error": self.error}
        if self.votes:
            out["votes"] = [v.to_dict() for v in self.votes]
        return out


@dataclass(frozen=True, slots=True)
class Vote:
    """One judge's answer to one sample of a check: its own outcome (never uncertain)."""

    #: the judge's name on the panel (its model unless named)
    member: str
    #: 0-based sample index (the request's ``seed``)
    sample: int
    outcome: CheckOutcome

    def to_dict(self) -> dict[str, Any]:
        own = self.outcome.to_dict()
        del own["check"]
        return {"member": self.member, "sample": self.sample, **own}


@dataclass(frozen=True, slots=True)
class CaseJudgement:
    """Every judged check of one case."""

    case_id: str
    answer_hash: str
    outcomes: tuple[CheckOutcome, ...]

    def outcome(self, check: str) -> CheckOutcome | None:
        return next((o for o in self.outcomes if o.check == check), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "answer_hash": self.answer_hash,
            "checks": [o.to_dict() for o in self.outcomes],
        }


@dataclass(frozen=True, slots=True)
class CanaryResult:
    """One canary: a wrong answer made from a golden case, of one ``kind``
    (:data:`~evaluator.judge.canary_verdicts.CANARY_CLASSES`: an injected instruction, or a
    specific-but-wrong or vague-but-topical answer). ``fooled`` is True when the judge
    accepted it, None when no verdict came back (the call failed, or the judge gave the
    canary no value); ``outcome`` is the judge's verdict on it, from which ``fooled``
    follows (:func:`evaluator.judge.derived.canary_fooled`; None: a report written before
    canary verdicts were kept)."""

    check: str
    case_id: str
    fooled: bool | None
    reason: str = ""
    outcome: CheckOutcome | None = None
    kind: CanaryClass = "injection"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "case_id": self.case_id, "class": self.kind}
        out |= {"fooled": self.fooled, "reason": self.reason}
        if self.outcome is not None:
            out["outcome"] = self.outcome.to_dict()
        return out


@dataclass(slots=True)
class JudgeUsage:
    """The judge's own traffic in one run: never the target's latency, errors or cost."""

    calls: int = 0
    cache_hits: int = 0
    skipped: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    latency_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "errors": dict(sorted(self.errors.items()))}


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """The judge's part of one report."""

    model: str
    prompt_version: str
    #: the judged summary metrics by name; None when no case had a value
    metrics: Mapping[str, float | None]
    usage: JudgeUsage
    canaries: tuple[CanaryResult, ...]
    cases: tuple[CaseJudgement, ...]
    #: an injection canary was judged supported: this run's judged metrics are advisory only
    compromised: bool = False
    #: the calibration the run's trust was decided by (its file), when one was given
    calibration: str | None = None
    #: verdicts asked of each judge per check
    samples: int = 1
    #: the voting judges' names when a panel judged (empty: the judge alone)
    panel: tuple[str, ...] = ()
    #: the judge accepted more than ``lenient_above`` of its wrong-answer canaries
    #: (:func:`evaluator.judge.canary_verdicts.lenient`)
    lenient: bool = False
    #: the share of wrong-answer canaries the run's judge could accept and not be lenient
    lenient_above: float = DEFAULT_LENIENT_ABOVE

    @property
    def identity(self) -> tuple[str, str]:
        """What judged metrics compare across: the judge model and the prompt version."""
        return self.model, self.prompt_version

    def case(self, case_id: str) -> CaseJudgement | None:
        return next((c for c in self.cases if c.case_id == case_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt_version": self.prompt_version,
            "compromised": self.compromised,
            "advisory": self.compromised,
            "calibration": self.calibration,
            "samples": self.samples,
            "panel": list(self.panel),
            "lenient": self.lenient,
            "lenient_above": self.lenient_above,
            "metrics": dict(self.metrics),
            "usage": self.usage.to_dict(),
            "canaries": [c.to_dict() for c in self.canaries],
            "cases": [c.to_dict() for c in self.cases],
        }


# Reading back: every value checked, the field's path in the message.

_MAX_TEXT = 10_000


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> ReportError:
        return ReportError(f"{self.source}: judge.{where}: {what}")

    def obj(self, value: object, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "is not an object")
        return value

    def lst(self, value: object, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, "is not a list")
        return value

    def text(self, value: object, where: str, optional: bool = False) -> str:
        if optional and value is None:
            return ""
        if not isinstance(value, str) or len(value) > _MAX_TEXT:
            raise self.fail(where, f"is not a string of at most {_MAX_TEXT} characters")
        return value

    def count(self, value: object, where: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(where, "is not a count")
        return value

    def number(self, value: object, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(where, "is not a number")
        if not math.isfinite(value) or value < 0:
            raise self.fail(where, "is not a finite number >= 0")
        return float(value)

    def ratio(self, value: object, where: str) -> float | None:
        if value is None:
            return None
        number = self.number(value, where)
        if number > 1:
            raise self.fail(where, "is above 1")
        return number


def _outcome(r: _Reader, raw: object, where: str) -> CheckOutcome:
    """One check of one case: judged with its values, failed with its kind, skipped or
    uncertain; with its votes when it has more than one."""
    data = r.obj(raw, where)
    check = data.get("check")
    if check not in check_names():
        raise r.fail(f"{where}.check", f"is not a judged check ({sorted(check_names())})")
    votes = _votes(r, check, data.get("votes", []), f"{where}.votes")
    outcome = dataclasses.replace(_own_outcome(r, check, data, where, _STATUSES), votes=votes)
    if votes and _decided(check, votes) != outcome:
        # an outcome is what its votes decide: a pass written over split votes is forged
        raise r.fail(f"{where}.status", "does not follow from its votes")
    return outcome


def _decided(check: str, votes: tuple[Vote, ...]) -> CheckOutcome:
    # imported here: the vote rule reads this module's records
    from evaluator.judge.votes import decide

    return decide(check, votes)


def _own_outcome(
    r: _Reader, check: str, data: dict[str, Any], where: str, statuses: tuple[str, ...]
) -> CheckOutcome:
    """An outcome's own fields (its status one of ``statuses``), votes aside."""
    status = data.get("status")
    if status not in statuses:
        raise r.fail(f"{where}.status", f"is not one of {list(statuses)}")
    if status == "error":
        kind = data.get("error_kind")
        if kind not in _KINDS:
            raise r.fail(f"{where}.error_kind", f"is not one of {sorted(_KINDS)}")
        return CheckOutcome(check, "error", error_kind=kind, error=r.text(data.get("error"), where))
    if status in ("skipped", "uncertain"):
        return CheckOutcome(check, status)
    unsupported = tuple(
        r.text(c, f"{where}.unsupported") for c in r.lst(data.get("unsupported", []), where)
    )
    return CheckOutcome(
        check,
        "judged",
        _values(r, data.get("values"), f"{where}.values"),
        r.text(data.get("reason"), f"{where}.reason", optional=True),
        unsupported,
        cached=data.get("cached") is True,
    )


def _votes(r: _Reader, check: str, raw: object, where: str) -> tuple[Vote, ...]:
    """An outcome's votes (each one call's own outcome, never uncertain), bounded."""
    votes = r.lst(raw, where)
    if len(votes) > MAX_VOTES:
        raise r.fail(where, f"holds more than {MAX_VOTES} votes")
    out = []
    for i, item in enumerate(votes):
        at = f"{where}.{i}"
        data = r.obj(item, at)
        member = r.text(data.get("member"), f"{at}.member")
        sample = r.count(data.get("sample"), f"{at}.sample")
        out.append(Vote(member, sample, _own_outcome(r, check, data, at, _VOTE_STATUSES)))
    return tuple(out)


def _values(r: _Reader, raw: object, where: str) -> dict[str, float | bool]:
    """A judged check's values: each a flag or a ratio in 0..1."""
    values: dict[str, float | bool] = {}
    for key, value in r.obj(raw, where).items():
        if isinstance(value, bool):
            values[key] = value
            continue
        ratio = r.ratio(value, f"{where}.{key}")
        if ratio is None:
            raise r.fail(f"{where}.{key}", "is null")
        values[key] = ratio
    return values


def _usage(r: _Reader, raw: object) -> JudgeUsage:
    usage = r.obj(raw, "usage")
    errors = r.obj(usage.get("errors", {}), "usage.errors")
    return JudgeUsage(
        calls=r.count(usage.get("calls"), "usage.calls"),
        cache_hits=r.count(usage.get("cache_hits"), "usage.cache_hits"),
        skipped=r.count(usage.get("skipped"), "usage.skipped"),
        errors={str(k)[:40]: r.count(v, f"usage.errors.{k}") for k, v in errors.items()},
        input_tokens=r.count(usage.get("input_tokens"), "usage.input_tokens"),
        output_tokens=r.count(usage.get("output_tokens"), "usage.output_tokens"),
        cost=r.number(usage.get("cost"), "usage.cost"),
        latency_seconds=r.number(usage.get("latency_seconds"), "usage.latency_seconds"),
    )


def _canary(r: _Reader, raw: object, index: int) -> CanaryResult:
    """One canary as written: its check, the case it borrowed, whether it fooled the judge
    and the judge's verdict on it (when the report kept it)."""
    where = f"canaries.{index}"
    c = r.obj(raw, where)
    fooled = c.get("fooled")
    if fooled is not None and not isinstance(fooled, bool):
        raise r.fail(f"{where}.fooled", "is not true, false or null")
    outcome = c.get("outcome")
    # a report written before the wrong-answer canaries holds injection canaries only
    kind = c.get("class", "injection")
    if kind not in CANARY_CLASSES:
        raise r.fail(f"{where}.class", f"is not one of {list(CANARY_CLASSES)}")
    return CanaryResult(
        r.text(c.get("check"), f"{where}.check"),
        r.text(c.get("case_id"), f"{where}.case_id"),
        fooled,
        r.text(c.get("reason"), f"{where}.reason", optional=True),
        None if outcome is None else _outcome(r, outcome, f"{where}.outcome"),
        cast(CanaryClass, kind),
    )


def _case(r: _Reader, raw: object, index: int) -> CaseJudgement:
    where = f"cases.{index}"
    c = r.obj(raw, where)
    return CaseJudgement(
        r.text(c.get("case_id"), f"{where}.case_id"),
        r.text(c.get("answer_hash"), f"{where}.answer_hash"),
        tuple(
            _outcome(r, o, f"{where}.checks.{j}")
            for j, o in enumerate(r.lst(c.get("checks"), f"{where}.checks"))
        ),
    )


def judged_run_from_dict(raw: object, source: str) -> JudgedRun:
    """A report's ``judge`` block, checked.

    Raises:
        ReportError: a field is missing, of the wrong type or out of bounds (named).
    """
    r = _Reader(source)
    data = r.obj(raw, "")
    usage = _usage(r, data.get("usage"))
    metrics_raw = r.obj(data.get("metrics"), "metrics")
    metrics = {
        m.name: r.ratio(metrics_raw.get(m.name), f"metrics.{m.name}") for m in judged_metrics()
    }
    canaries = tuple(
        _canary(r, c, i) for i, c in enumerate(r.lst(data.get("canaries"), "canaries"))
    )
    cases = tuple(_case(r, c, i) for i, c in enumerate(r.lst(data.get("cases"), "cases")))
    compromised = data.get("compromised")
    if not isinstance(compromised, bool):
        raise r.fail("compromised", "is not true or false")
    calibration = data.get("calibration")
    samples, panel = _voters(r, data)
    lenient, lenient_above = _leniency(r, data)
    return JudgedRun(
        model=r.text(data.get("model"), "model"),
        prompt_version=r.text(data.get("prompt_version"), "prompt_version"),
        metrics=metrics,
        usage=usage,
        canaries=canaries,
        cases=cases,
        compromised=compromised,
        calibration=None if calibration is None else r.text(calibration, "calibration"),
        samples=samples,
        panel=panel,
        lenient=lenient,
        lenient_above=lenient_above,
    )


def _leniency(r: _Reader, data: dict[str, Any]) -> tuple[bool, float]:
    """Whether the run's judge was lenient and the share it was held to (a report written
    before the wrong-answer canaries: not lenient, the default share)."""
    lenient = data.get("lenient", False)
    if not isinstance(lenient, bool):
        raise r.fail("lenient", "is not true or false")
    above = r.ratio(data.get("lenient_above", DEFAULT_LENIENT_ABOVE), "lenient_above")
    if above is None:
        raise r.fail("lenient_above", "is null")
    return lenient, above


def _voters(r: _Reader, data: dict[str, Any]) -> tuple[int, tuple[str, ...]]:
    """The run's samples per judge and its panel (a report written before either: 1, none)."""
    samples = r.count(data.get("samples", 1), "samples")
    if not 1 <= samples <= MAX_SAMPLES:
        raise r.fail("samples", f"is not in 1..{MAX_SAMPLES}")
    names = r.lst(data.get("panel", []), "panel")
    if len(names) > MAX_PANEL + 1:
        raise r.fail("panel", f"names more than {MAX_PANEL + 1} judges")
    return samples, tuple(r.text(n, f"panel.{i}") for i, n in enumerate(names))

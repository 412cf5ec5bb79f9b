"""Judged rules in the gate: ``[judged.METRIC]`` tables of the gates file.

Deterministic rules stay the hard rules by default. A judged rule is hard only when its
table says so and the judge is *calibrated* for the metric's check (the stored result of
``evaluator calibrate`` for the candidate's judge model and prompt version): a hard rule on
an uncalibrated judged metric is refused (exit 1, naming the missing calibration) unless
the rule is marked ``advisory = true``. A hard rule is refused just the same when the
candidate's judge is untrusted (:func:`~evaluator.judge.trust.untrusted_reasons`: a canary
fooled it, or got no verdict from it): an untrusted judge fails closed, it never turns the
rule advisory and lets a regression through. Judged metrics compare only between reports
judged by the same model with the same prompt version (as deterministic metrics compare
only within one config identity). The reports' judged runs come derived from their verdicts
(:func:`~evaluator.judge.derived.judged_of`), never as their figures are written.

::

    [judged.judged_fact_recall]
    min = 0.7            # the candidate's value must reach this
    max_drop = 0.05      # and fall at most this far below the baseline's
    advisory = false     # default: a hard rule (needs a calibrated judge)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evaluator.border import printable
from evaluator.errors import ConfigError
from evaluator.judge.checks import judged_metric, judged_metrics
from evaluator.judge.trust import GatePolicy, untrusted_reasons
from evaluator.metrics import FLOAT_TOLERANCE

if TYPE_CHECKING:  # the stored calibration needs numpy, which the gate loads only for CIs;
    # the judge's records bring its settings, which a gate without judged rules never needs
    from evaluator.judge.calibration_store import StoredCalibration
    from evaluator.judge.record import JudgedRun

__all__ = [
    "JudgedGate",
    "JudgedRule",
    "evaluate_judged",
    "judge_differences",
    "parse_gate_policy",
    "parse_judged_rules",
]

_KINDS = ("min", "max_drop")


@dataclass(frozen=True, slots=True)
class JudgedRule:
    metric: str
    kind: str
    limit: float
    advisory: bool


def parse_judged_rules(data: Mapping[str, object], source: str) -> tuple[JudgedRule, ...]:
    """The ``[judged.METRIC]`` tables of a decoded gates file (absent: none).

    Raises:
        ConfigError: naming the file and the bad key.
    """
    tables = data.get("judged")
    if tables is None:
        return ()
    if not isinstance(tables, Mapping):
        raise ConfigError(f"{source}: judged: expected [judged.METRIC] tables")
    return tuple(rule for metric, table in tables.items() for rule in _rules(metric, table, source))


def _rules(metric: str, table: object, source: str) -> list[JudgedRule]:
    """The rules of one ``[judged.METRIC]`` table: one per limit it sets."""
    where = f"judged.{metric}"
    if judged_metric(metric) is None:
        known = ", ".join(m.name for m in judged_metrics())
        raise ConfigError(f"{source}: {where}: unknown judged metric (known: {known})")
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: {where}: expected a table")
    advisory = table.get("advisory", False)
    if not isinstance(advisory, bool):
        raise ConfigError(f"{source}: {where}.advisory: must be true or false")
    kinds = [k for k in table if k != "advisory"]
    if not kinds:
        raise ConfigError(f"{source}: {where}: add one of {', '.join(_KINDS)}")
    return [
        JudgedRule(metric, kind, _limit(kind, table[kind], f"{source}: {where}.{kind}"), advisory)
        for kind in kinds
    ]


def _limit(kind: str, value: object, where: str) -> float:
    """The limit of a ``min`` or ``max_drop`` key: a number in 0..1 (``where`` names the
    file and the key)."""
    if kind not in _KINDS:
        raise ConfigError(f"{where}: unknown key (known: {', '.join(_KINDS)}, advisory)")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: must be a number")
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise ConfigError(f"{where}: {value!r} is outside 0..1")
    return float(value)


def parse_gate_policy(data: Mapping[str, object], source: str) -> GatePolicy:
    """The ``[judge]`` table of a decoded gates file: what the gate holds a candidate's
    judge to (absent: the defaults).

    Raises:
        ConfigError: naming the file and the bad key.
    """
    table = data.get("judge")
    if table is None:
        return GatePolicy()
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: judge: expected a [judge] table")
    for key in table:
        if key not in ("lenient_above", "require_wrong_answer_canaries"):
            raise ConfigError(
                f"{source}: judge.{key}: unknown key "
                "(known: lenient_above, require_wrong_answer_canaries)"
            )
    required = table.get("require_wrong_answer_canaries", True)
    if not isinstance(required, bool):
        raise ConfigError(f"{source}: judge.require_wrong_answer_canaries: must be true or false")
    above = _share(table.get("lenient_above", GatePolicy().lenient_above), source)
    return GatePolicy(lenient_above=above, require_wrong_answer_canaries=required)


def _share(value: object, source: str) -> float:
    """``[judge] lenient_above``: a share in 0..1, below 1 (as the setting of that name:
    a judge accepting every wrong answer is lenient)."""
    where = f"{source}: judge.lenient_above"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: must be a number")
    if not math.isfinite(value) or not 0 <= value < 1:
        raise ConfigError(f"{where}: {value!r} is outside 0..1 (1 excluded)")
    return float(value)


@dataclass(frozen=True, slots=True)
class JudgedGate:
    lines: tuple[str, ...]
    #: a hard judged rule failed (exit 2)
    failed: bool
    #: a hard judged rule could not be applied: no calibration, or another judge (exit 1)
    refused: tuple[str, ...]


#: what makes two reports' judged metrics comparable, each shown as it is named in a line
_JUDGE_IDENTITY = (
    ("model", "model"),
    ("prompt_version", "prompt version"),
    ("samples", "samples"),
    ("panel", "panel"),
)


def _identity_part(judged: JudgedRun | None, key: str) -> str:
    """One part of a report's judge identity, shown."""
    if judged is None:
        return "not judged"
    value = getattr(judged, key)
    if isinstance(value, tuple):
        return "(" + ", ".join(printable(str(v)) for v in value) + ")" if value else "none"
    return printable(str(value))


def judge_differences(baseline: JudgedRun | None, candidate: JudgedRun | None) -> str:
    """What differs between two reports' judges (model, prompt version, samples, panel),
    ``name baseline -> candidate`` each, joined; empty when their judged metrics compare."""
    changed = []
    for key, shown in _JUDGE_IDENTITY:
        before = _identity_part(baseline, key)
        after = _identity_part(candidate, key)
        if before != after:
            changed.append(f"{shown} {before} -> {after}")
    return "; ".join(changed)


def _value(judged: JudgedRun | None, metric: str) -> float | None:
    return None if judged is None else judged.metrics.get(metric)


@dataclass(frozen=True, slots=True)
class _Applied:
    """One judged rule applied: ``pass``, ``fail``, ``n/a`` or ``not compared``, and what
    its line says."""

    status: str
    text: str

    def line(self, hard: bool) -> str:
        return f"  {self.status.upper()}{'' if hard else ' (advisory)'} {self.text}"


def _status(passed: bool | None) -> str:
    return "n/a" if passed is None else ("pass" if passed else "fail")


@dataclass(frozen=True, slots=True)
class _JudgedReports:
    """The two reports' judged runs and what every judged rule is applied with."""

    baseline: JudgedRun | None
    candidate: JudgedRun
    #: why the candidate's judge is not to be trusted (empty: nothing against it)
    untrusted: tuple[str, ...]
    #: the stored calibration (each entry derived from its own counts)
    stored: StoredCalibration

    @property
    def identity(self) -> tuple[str, str]:
        """The candidate's judge (model, prompt version)."""
        return self.candidate.identity

    def hard(self, rule: JudgedRule) -> bool:
        return not rule.advisory

    def apply(self, rule: JudgedRule) -> _Applied:
        if rule.kind == "min":
            return self._minimum(rule)
        return self._drop(rule)

    def _minimum(self, rule: JudgedRule) -> _Applied:
        value = _value(self.candidate, rule.metric)
        passed = None if value is None else value + FLOAT_TOLERANCE >= rule.limit
        return _Applied(_status(passed), f"{rule.metric} >= {rule.limit}: {_show(value)}")

    def _drop(self, rule: JudgedRule) -> _Applied:
        """A drop compares only between reports of the same judge: model, prompts, samples
        and panel (what differs is named)."""
        head = f"{rule.metric} drop <= {rule.limit}"
        differs = judge_differences(self.baseline, self.candidate)
        if differs:
            return _Applied("not compared", f"{head}: judged by another judge: {differs}")
        base, value = _value(self.baseline, rule.metric), _value(self.candidate, rule.metric)
        passed = (
            None if base is None or value is None else base - value <= rule.limit + FLOAT_TOLERANCE
        )
        return _Applied(_status(passed), f"{head}: {_show(base)} -> {_show(value)}")

    def refusal(self, rule: JudgedRule, applied: _Applied) -> str | None:
        """Why a hard rule cannot be applied (None: it can, or it is advisory)."""
        spec = judged_metric(rule.metric)
        assert spec is not None  # parse_judged_rules checked it
        if not self.hard(rule):
            return None
        if self.untrusted:
            return (
                f"{rule.metric}: the candidate's judge {_ident(self.identity)} is untrusted: "
                f"{'; '.join(self.untrusted)}; a hard judged rule needs a judge its canaries "
                "show held (or mark the rule advisory = true)"
            )
        if not self.stored.calibrated().get(self.identity, {}).get(spec.check, False):
            why = self.stored.why_uncalibrated(self.identity, spec.check)
            return (
                f"{rule.metric}: the judge {_ident(self.identity)} is not calibrated for "
                f"{spec.check} ({why}); run `evaluator calibrate` or mark "
                f"the rule advisory = true"
            )
        if applied.status == "not compared":
            differs = judge_differences(self.baseline, self.candidate)
            return f"{rule.metric}: not compared with the baseline: another judge ({differs})"
        return None


_HEADER = "judged metrics (deterministic rules above are the hard rules by default):"


def _unjudged(rules: tuple[JudgedRule, ...]) -> JudgedGate:
    """A candidate without a ``judge`` block: no rule applies; each hard one is refused."""
    lines = (_HEADER, "  the candidate was not judged: judged rules not applied")
    refused = tuple(
        f"{r.metric}: the candidate report has no judged metrics" for r in rules if not r.advisory
    )
    return JudgedGate(lines, False, refused)


def evaluate_judged(
    rules: tuple[JudgedRule, ...],
    baseline: JudgedRun | None,
    candidate: JudgedRun | None,
    stored: StoredCalibration,
    policy: GatePolicy | None = None,
) -> JudgedGate:
    """Apply the judged rules to the reports' judged runs (derived:
    :func:`~evaluator.judge.derived.judged_of`), the candidate's judge trusted as ``policy``
    (the gates file's ``[judge]`` table; None: its defaults) decides."""
    if not rules:
        return JudgedGate((), False, ())
    if candidate is None:
        return _unjudged(rules)
    untrusted = untrusted_reasons(candidate, policy or GatePolicy())
    reports = _JudgedReports(baseline, candidate, untrusted, stored)
    lines = [_HEADER]
    if reports.untrusted:
        lines.append(
            f"  the candidate's judge is untrusted: {'; '.join(reports.untrusted)}: "
            "hard judged rules refused"
        )
    refused: list[str] = []
    failed = False
    for rule in rules:
        applied = reports.apply(rule)
        problem = reports.refusal(rule, applied)
        if problem is not None:
            refused.append(problem)
        failed = failed or (reports.hard(rule) and applied.status == "fail")
        lines.append(applied.line(reports.hard(rule)))
    return JudgedGate(tuple(lines), failed, tuple(dict.fromkeys(refused)))


def _show(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ident(identity: tuple[str, str] | None) -> str:
    """A judge's identity for a gate line: its model and prompt version come from a report,
    so they are :func:`~evaluator.border.printable` (no forged ``verdict:`` line)."""
    if identity is None:
        return "none"
    return f"{printable(identity[0])} ({printable(identity[1])})"

"""Judged rules in the gate: ``[judged.METRIC]`` tables of the gates file.

Deterministic rules stay the hard rules by default. A judged rule is hard only when its
table says so and the judge is *calibrated* for the metric's check (the stored result of
``evaluator calibrate`` for the candidate's judge model and prompt version): a hard rule on
an uncalibrated judged metric is refused (exit 1, naming the missing calibration) unless
the rule is marked ``advisory = true``. Judged metrics compare only between reports judged
by the same model with the same prompt version (as deterministic metrics compare only
within one config identity); a candidate whose judge passed a canary has advisory judged
metrics only.

::

    [judged.judged_fact_recall]
    min = 0.7            # the candidate's value must reach this
    max_drop = 0.05      # and fall at most this far below the baseline's
    advisory = false     # default: a hard rule (needs a calibrated judge)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.errors import ConfigError
from evaluator.judge.checks import judged_metric, judged_metrics

__all__ = [
    "CALIBRATION_FILE",
    "JudgedGate",
    "JudgedRule",
    "calibrated_checks",
    "calibration_entries",
    "evaluate_judged",
    "parse_judged_rules",
]

#: where `evaluator calibrate` stores its result, in the reports folder
CALIBRATION_FILE = "judge-calibration.json"
_KINDS = ("min", "max_drop")
_TOLERANCE = 1e-9


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
    rules = []
    known = ", ".join(m.name for m in judged_metrics())
    for metric, table in tables.items():
        where = f"judged.{metric}"
        if judged_metric(metric) is None:
            raise ConfigError(f"{source}: {where}: unknown judged metric (known: {known})")
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: {where}: expected a table")
        advisory = table.get("advisory", False)
        if not isinstance(advisory, bool):
            raise ConfigError(f"{source}: {where}.advisory: must be true or false")
        kinds = [k for k in table if k != "advisory"]
        if not kinds:
            raise ConfigError(f"{source}: {where}: add one of {', '.join(_KINDS)}")
        for kind in kinds:
            if kind not in _KINDS:
                raise ConfigError(
                    f"{source}: {where}.{kind}: unknown key (known: {', '.join(_KINDS)}, advisory)"
                )
            value = table[kind]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"{source}: {where}.{kind}: must be a number")
            if not math.isfinite(value) or not 0 <= value <= 1:
                raise ConfigError(f"{source}: {where}.{kind}: {value!r} is outside 0..1")
            rules.append(JudgedRule(metric, kind, float(value), advisory))
    return tuple(rules)


def calibration_entries(path: Path) -> list[dict[str, Any]]:
    """The per-check entries of a stored calibration (a missing or unreadable file: none)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    checks = data.get("checks") if isinstance(data, dict) else None
    return [e for e in checks if isinstance(e, dict)] if isinstance(checks, list) else []


def calibrated_checks(path: Path) -> dict[tuple[str, str], dict[str, bool]]:
    """From a stored calibration: (model, prompt version) -> check -> calibrated.
    A missing or unreadable file calibrates nothing."""
    out: dict[tuple[str, str], dict[str, bool]] = {}
    for entry in calibration_entries(path):
        model, version, check = entry.get("model"), entry.get("prompt_version"), entry.get("check")
        if isinstance(model, str) and isinstance(version, str) and isinstance(check, str):
            out.setdefault((model, version), {})[check] = entry.get("calibrated") is True
    return out


@dataclass(frozen=True, slots=True)
class JudgedGate:
    lines: tuple[str, ...]
    #: a hard judged rule failed (exit 2)
    failed: bool
    #: a hard judged rule could not be applied: no calibration, or another judge (exit 1)
    refused: tuple[str, ...]


def _identity(block: Mapping[str, Any] | None) -> tuple[str, str] | None:
    if block is None:
        return None
    model, version = block.get("model"), block.get("prompt_version")
    return (model, version) if isinstance(model, str) and isinstance(version, str) else None


def _value(block: Mapping[str, Any] | None, metric: str) -> float | None:
    metrics = block.get("metrics") if block is not None else None
    value = metrics.get(metric) if isinstance(metrics, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def evaluate_judged(
    rules: tuple[JudgedRule, ...],
    baseline: Mapping[str, Any] | None,
    candidate: Mapping[str, Any] | None,
    calibration: Mapping[tuple[str, str], Mapping[str, bool]],
    calibration_source: str,
) -> JudgedGate:
    """Apply the judged rules to the reports' ``judge`` blocks."""
    if not rules:
        return JudgedGate((), False, ())
    lines = ["judged metrics (deterministic rules above are the hard rules by default):"]
    refused: list[str] = []
    failed = False
    identity = _identity(candidate)
    if identity is None:
        lines.append("  the candidate was not judged: judged rules not applied")
        hard_rules = [r for r in rules if not r.advisory]
        refused += [f"{r.metric}: the candidate report has no judged metrics" for r in hard_rules]
        return JudgedGate(tuple(lines), False, tuple(refused))
    compromised = bool(candidate and candidate.get("compromised"))
    if compromised:
        lines.append("  the candidate's judge passed a canary (compromised): judged rules advisory")
    same_judge = _identity(baseline) == identity
    calibrated = calibration.get(identity, {})
    for rule in rules:
        spec = judged_metric(rule.metric)
        assert spec is not None  # parse_judged_rules checked it
        hard = not rule.advisory and not compromised
        value = _value(candidate, rule.metric)
        if rule.kind == "min":
            status = (
                "n/a" if value is None else ("pass" if value + _TOLERANCE >= rule.limit else "fail")
            )
            text = f"{rule.metric} >= {rule.limit}: {_show(value)}"
        elif not same_judge:
            status = "not compared"
            text = (
                f"{rule.metric} drop <= {rule.limit}: baseline judged by "
                f"{_ident(_identity(baseline))}, candidate by {_ident(identity)}"
            )
        else:
            base = _value(baseline, rule.metric)
            drop = None if base is None or value is None else base - value
            status = (
                "n/a" if drop is None else ("pass" if drop <= rule.limit + _TOLERANCE else "fail")
            )
            text = f"{rule.metric} drop <= {rule.limit}: {_show(base)} -> {_show(value)}"
        if hard and not calibrated.get(spec.check, False):
            refused.append(
                f"{rule.metric}: the judge {_ident(identity)} is not calibrated for "
                f"{spec.check} ({calibration_source}); run `evaluator calibrate` or mark the "
                f"rule advisory = true"
            )
        elif hard and status == "not compared":
            refused.append(f"{rule.metric}: judged by another judge or prompt version")
        if hard and status == "fail":
            failed = True
        tag = "" if hard else " (advisory)"
        lines.append(f"  {status.upper()}{tag} {text}")
    return JudgedGate(tuple(lines), failed, tuple(dict.fromkeys(refused)))


def _show(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ident(identity: tuple[str, str] | None) -> str:
    return "none" if identity is None else f"{identity[0]} ({identity[1]})"

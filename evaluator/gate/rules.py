"""Gate rules: what a candidate must satisfy against its baseline, and their pure evaluation.

Rules live in ``config/gates.toml``, one table per metric; each key of the table is one
rule (a metric may carry several)::

    [rules.mrr]
    max_drop = 0.01          # baseline - candidate <= 0.01

    [rules.p95_seconds]
    max_relative_growth = 0.20

Kinds: ``min`` (floor), ``max`` (ceiling), ``max_drop``, ``max_growth`` (absolute) and
``max_relative_growth`` (a fraction of the baseline). Every comparison tolerates
floating-point noise (:data:`FLOAT_TOLERANCE`): a drop of exactly the allowance passes.

A latency table may also set ``noise_floor_seconds`` (default
:data:`DEFAULT_NOISE_FLOOR_SECONDS`): growth up to that many seconds passes its growth rules
whatever the ratio, because a 4 ms loopback P95 gaining 3 ms from scheduling says nothing
about the service. The gate's diagnosis uses the same floor and growth limit.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from evaluator import border
from evaluator.errors import ConfigError
from evaluator.gate.ceiling import DEFAULT_BASELINE_MAX_ERROR_RATE, parse_baseline_ceiling
from evaluator.gate.repeats import Quarantine, parse_quarantine
from evaluator.judge.checks import judged_metric
from evaluator.judge.gating import JudgedRule, parse_gate_policy, parse_judged_rules
from evaluator.judge.trust import GatePolicy
from evaluator.metrics import (
    FLOAT_TOLERANCE,
    LOWER_IS_BETTER,
    METRICS,
    POSITION_SEPARATOR,
    TURN_POSITIONS,
    at_position,
    format_seconds,
)
from evaluator.summary import Summary

if TYPE_CHECKING:
    from evaluator.gate.stats import Interval

__all__ = [
    "DEFAULT_GATES",
    "DEFAULT_GATES_PATH",
    "DEFAULT_LATENCY_GROWTH",
    "DEFAULT_NOISE_FLOOR_SECONDS",
    "DEFAULT_RULES",
    "GATE_METRICS",
    "POSITIONED_METRICS",
    "RULE_KINDS",
    "GatesFile",
    "Rule",
    "RuleKind",
    "RuleResult",
    "check_rule",
    "evaluate_rules",
    "format_difference",
    "format_value",
    "latency_limits",
    "load_gates",
    "parse_rules",
    "read_gates",
]

RuleKind = Literal["min", "max", "max_drop", "max_growth", "max_relative_growth"]

#: Every rule kind, in the order a table's keys are documented.
RULE_KINDS: tuple[RuleKind, ...] = get_args(RuleKind)

#: Summary metrics a rule may name.
GATE_METRICS: tuple[str, ...] = tuple(spec.name for spec in METRICS)
#: ... and each of them over the turns at one position of a run's conversations
#: (``answer_accuracy@2``: :func:`~evaluator.summary.Summary.get`)
POSITIONED_METRICS: frozenset[str] = frozenset(
    at_position(name, position) for name in GATE_METRICS for position in TURN_POSITIONS
)


def _at_every_position(names: frozenset[str]) -> frozenset[str]:
    """``names`` and each of them at every turn position."""
    return names | {at_position(n, p) for n in names for p in TURN_POSITIONS}


#: Latency growth (absolute) up to which a growth rule on a ``*_seconds`` metric passes
#: whatever the ratio, unless its table sets ``noise_floor_seconds``.
DEFAULT_NOISE_FLOOR_SECONDS = 0.05
#: The key of a latency table that sets its noise floor (a modifier, not a rule).
NOISE_FLOOR_KEY = "noise_floor_seconds"
#: The relative P95 growth the diagnosis reports when no rule says otherwise.
DEFAULT_LATENCY_GROWTH = 0.20

#: Where ``evaluator gate`` looks for rules when no file is configured.
DEFAULT_GATES_PATH = Path("config/gates.toml")

_DROP_KINDS = frozenset({"max_drop"})
_GROWTH_KINDS = frozenset({"max_growth", "max_relative_growth"})


_SECONDS = _at_every_position(frozenset(spec.name for spec in METRICS if spec.unit == "seconds"))


#: metrics that count things (tokens): written as whole numbers
_COUNTS = _at_every_position(frozenset(spec.name for spec in METRICS if spec.unit == "count"))


def format_value(metric: str, value: float | None) -> str:
    """A metric value for people: ratios to 4 places, durations as every command shows them,
    counts whole."""
    if value is None:
        return "null"
    if metric in _COUNTS:
        return f"{value:,.0f}"
    return format_seconds(value) if metric in _SECONDS else f"{value:.4f}"


def format_difference(metric: str, baseline: float | None, candidate: float | None) -> str:
    """``candidate - baseline`` with its sign, and the relative change for durations."""
    if baseline is None or candidate is None:
        return "n/a"
    diff = candidate - baseline
    if metric in _SECONDS:
        text = format_seconds(diff, signed=True)
        if baseline > 0:
            text += f" ({diff / baseline:+.1%})"
        return text
    return f"{diff:+,.0f}" if metric in _COUNTS else f"{diff:+.4f}"


@dataclass(frozen=True, slots=True)
class Rule:
    """One limit on one summary metric.

    Example::

        Rule("mrr", "max_drop", 0.01)   # MRR may drop at most 0.01
        Rule("p95_seconds", "max_relative_growth", 0.2, noise_floor=0.05)

    ``noise_floor`` (growth rules only): growth up to this much passes whatever the limit.
    """

    metric: str
    kind: RuleKind
    limit: float
    noise_floor: float = 0.0

    @property
    def key(self) -> str:
        """Stable identifier, as in the gates file: ``mrr.max_drop``."""
        return f"{self.metric}.{self.kind}"

    @property
    def text(self) -> str:
        """The rule in words, as docs/gate.md's rules table puts it; a limit written as the
        metric's values are (durations in ms or s, counts whole)."""
        limit = self._written(self.limit)
        if self.kind == "min":
            return f"at least {limit}"
        if self.kind == "max":
            return f"at most {limit}"
        if self.kind == "max_drop":
            return "must not drop" if self.limit == 0 else f"may drop at most {limit}"
        if self.kind == "max_growth":
            text = "must not grow" if self.limit == 0 else f"may grow at most {limit}"
        else:
            text = "must not grow" if self.limit == 0 else f"may grow at most {self.limit:.0%}"
        if self.noise_floor > 0:
            text += f" (growth up to {format_seconds(self.noise_floor)} is noise)"
        return text

    def _written(self, value: float) -> str:
        """A limit in the metric's unit (a ratio as given: ``0.01``, not ``0.0100``)."""
        if self.metric in _SECONDS:
            return format_seconds(value)
        if self.metric in _COUNTS and value.is_integer():
            return f"{value:,.0f}"
        return f"{value:g}"

    @property
    def needs_baseline(self) -> bool:
        """Floors and ceilings judge the candidate alone; the others compare with the baseline."""
        return self.kind not in ("min", "max")

    @property
    def bad_above(self) -> bool:
        """Whether a candidate fails this rule by rising (a ceiling), not by falling."""
        return self.kind not in ("min", "max_drop")

    def bound(self, baseline: float | None) -> float | None:
        """The candidate value at the edge of what the rule allows (it allows the value
        itself): where the status page draws the rule on a trend line. None when the rule
        needs a baseline and there is none. Agrees with :meth:`allows` (tested)."""
        if self.kind in ("min", "max"):
            return self.limit
        if baseline is None:
            return None
        if self.kind == "max_drop":
            return baseline - self.limit
        allowance = baseline * self.limit if self.kind == "max_relative_growth" else self.limit
        return baseline + max(allowance, self.noise_floor)

    def allows(self, baseline: float | None, candidate: float) -> bool:
        """Whether ``candidate`` satisfies the rule (``baseline`` is ignored by floors/ceilings)."""
        if self.kind == "min":
            return candidate >= self.limit - FLOAT_TOLERANCE
        if self.kind == "max":
            return candidate <= self.limit + FLOAT_TOLERANCE
        if baseline is None:
            raise ValueError(f"rule {self.key} needs a baseline value")
        if self.kind == "max_drop":
            return baseline - candidate <= self.limit + FLOAT_TOLERANCE
        growth = candidate - baseline
        if growth <= self.noise_floor + FLOAT_TOLERANCE:
            return True
        if self.kind == "max_growth":
            return growth <= self.limit + FLOAT_TOLERANCE
        return growth <= baseline * self.limit + FLOAT_TOLERANCE


#: The built-in rules, used when no gates file exists: relative only (must not drop, may
#: drop at most, may grow at most), so an unchanged service passes against its own baseline
#: whatever its levels. An absolute floor is a decision about one service: it comes from a
#: gates file (docs/ci.md, docs/gate.md).
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("recall_at_k", "max_drop", 0.0),
    Rule("mrr", "max_drop", 0.01),
    Rule("citation_precision", "max_drop", 0.01),
    Rule("answer_accuracy", "max_drop", 0.0),
    Rule("p95_seconds", "max_relative_growth", 0.20, noise_floor=DEFAULT_NOISE_FLOOR_SECONDS),
    Rule("error_rate", "max_growth", 0.0),
)


def latency_limits(rules: Sequence[Rule]) -> tuple[float, float]:
    """``(relative growth, noise floor)`` of the P95 rule, for the diagnosis to agree with.

    The first ``p95_seconds`` ``max_relative_growth`` rule decides; without one, 20% and
    :data:`DEFAULT_NOISE_FLOOR_SECONDS`.
    """
    for rule in rules:
        if rule.metric == "p95_seconds" and rule.kind == "max_relative_growth":
            return rule.limit, rule.noise_floor
    return DEFAULT_LATENCY_GROWTH, DEFAULT_NOISE_FLOOR_SECONDS


@dataclass(frozen=True, slots=True)
class RuleResult:
    """The outcome of one rule: passed, failed or not applicable (a null value).

    ``message`` is one line naming the metric, both values, the difference and the rule.
    ``judged_by`` is ``"interval"`` when ``--significance`` judged a drop on its confidence
    interval, ``"point"`` otherwise.
    """

    rule: Rule
    baseline: float | None
    candidate: float | None
    passed: bool
    applicable: bool
    message: str
    interval: Interval | None = None
    judged_by: Literal["point", "interval"] = "point"

    @property
    def name(self) -> str:
        return self.rule.key

    @property
    def metric(self) -> str:
        return self.rule.metric

    @property
    def difference(self) -> float | None:
        """``candidate - baseline``, or None when either is null."""
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate - self.baseline

    @property
    def status(self) -> Literal["pass", "fail", "n/a"]:
        if not self.applicable:
            return "n/a"
        return "pass" if self.passed else "fail"


def _interval_text(interval: Interval) -> str:
    return (
        f"paired {interval.confidence:.0%} CI [{interval.low:+.4f}, {interval.high:+.4f}] "
        f"over {interval.pairs} cases"
    )


def check_rule(
    rule: Rule,
    baseline: float | None,
    candidate: float | None,
    *,
    interval: Interval | None = None,
    significance: bool = False,
) -> RuleResult:
    """Judge one rule on the two values.

    Args:
        rule: the rule.
        baseline: the baseline's summary value (None when null).
        candidate: the candidate's summary value (None when null).
        interval: the paired confidence interval of ``candidate - baseline``, if computed.
        significance: judge a drop rule on ``interval`` (fails only when the whole interval
            lies beyond the allowance) instead of on the point values.

    Returns:
        The result. A null value on either side makes the rule not applicable, except
        that a floor or ceiling, which reads only the candidate, still judges a candidate
        whose baseline is null.
    """
    metric = rule.metric
    # a floor or ceiling reads only the candidate: a null baseline must not excuse it
    if candidate is None or (baseline is None and rule.needs_baseline):
        return _not_applicable(rule, baseline, candidate, interval)
    head = (
        f"{metric}: baseline {format_value(metric, baseline)}, "
        f"candidate {format_value(metric, candidate)}, "
        f"difference {format_difference(metric, baseline, candidate)}"
    )
    if significance and rule.kind in _DROP_KINDS and interval is not None:
        return _on_interval(rule, baseline, candidate, interval, head)
    return _on_points(rule, baseline, candidate, interval, head, significance=significance)


def _not_applicable(
    rule: Rule, baseline: float | None, candidate: float | None, interval: Interval | None
) -> RuleResult:
    """A rule with a null value to judge: passed, not applicable, naming the null side."""
    side = "the baseline and the candidate"
    if baseline is not None:
        side = "the candidate"
    elif candidate is not None:
        side = "the baseline"
    message = f"{rule.metric}: not applicable (null in {side}); rule: {rule.text}"
    return RuleResult(rule, baseline, candidate, True, False, message, interval)


def _on_interval(
    rule: Rule, baseline: float | None, candidate: float, interval: Interval, head: str
) -> RuleResult:
    """A drop rule under ``--significance``: it fails only when the whole paired interval
    lies beyond the allowance."""
    passed = interval.high >= -rule.limit - FLOAT_TOLERANCE
    verdict = "the whole interval is beyond" if not passed else "the interval reaches within"
    message = (
        f"{head}; {_interval_text(interval)}; rule: {rule.text} "
        f"(significance: {verdict} the allowance)"
    )
    return RuleResult(
        rule, baseline, candidate, passed, True, message, interval, judged_by="interval"
    )


def _on_points(
    rule: Rule,
    baseline: float | None,
    candidate: float,
    interval: Interval | None,
    head: str,
    *,
    significance: bool,
) -> RuleResult:
    """A rule on the point values (and whether a floor or ceiling fails the baseline too)."""
    passed = rule.allows(baseline, candidate)
    message = f"{head}; rule: {rule.text}"
    baseline_fails = (
        baseline is not None and not rule.needs_baseline and not rule.allows(None, baseline)
    )
    if not passed and baseline_fails:
        message += " (the baseline fails it too)"
    if significance and rule.kind in _DROP_KINDS:
        message += " (significance: no paired interval, judged on the point values)"
    return RuleResult(rule, baseline, candidate, passed, True, message, interval)


def evaluate_rules(
    rules: Sequence[Rule],
    baseline: Summary,
    candidate: Summary,
    *,
    intervals: Mapping[str, Interval] | None = None,
    significance: bool = False,
) -> tuple[RuleResult, ...]:
    """Judge every rule (none stops the others) on two summaries, in rule order."""
    found = intervals or {}
    return tuple(
        check_rule(
            rule,
            baseline.get(rule.metric),
            candidate.get(rule.metric),
            interval=found.get(rule.metric),
            significance=significance,
        )
        for rule in rules
    )


# --- loading ------------------------------------------------------------------------------


def _finite(source: str, where: str, value: object) -> float:
    """``value`` as a float; anything but a finite number (a bool included) raises."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{source}: {where}: must be a finite number (got {value!r})")
    return float(value)


def _check_direction(source: str, where: str, metric: str, kind: str) -> None:
    """Refuse a drop rule on a lower-is-better metric and a growth rule on a higher-is-better
    one: either could never fail on a regression."""
    if kind in _DROP_KINDS and metric in LOWER_IS_BETTER:
        raise ConfigError(
            f"{source}: {where}: {metric} is better when lower, so a drop is never a "
            "regression; use max_growth or max_relative_growth"
        )
    if kind in _GROWTH_KINDS and metric not in LOWER_IS_BETTER:
        raise ConfigError(
            f"{source}: {where}: {metric} is better when higher, so growth is never a "
            "regression; use max_drop"
        )


def _check_limit(source: str, where: str, metric: str, kind: str, value: object) -> float:
    """A rule's limit: a finite number, not negative for a drop or growth, within 0..1 for
    a ratio's floor or ceiling, on a metric whose direction the kind fits."""
    limit = _finite(source, where, value)
    if kind in _DROP_KINDS | _GROWTH_KINDS and limit < 0:
        raise ConfigError(f"{source}: {where}: must be >= 0 (got {value!r})")
    _check_direction(source, where, metric, kind)
    if kind in ("min", "max") and metric not in _SECONDS and not 0 <= limit <= 1:
        raise ConfigError(
            f"{source}: {where}: {value!r} is outside 0..1 ({metric} is a ratio, not a percentage)"
        )
    return limit


def parse_rules(data: Mapping[str, object], source: str) -> tuple[Rule, ...]:
    """Build rules from a decoded gates file.

    Raises:
        ConfigError: one line naming ``source`` and the offending key.
    """
    _check_top_level(data, source)
    tables = data.get("rules")
    if not isinstance(tables, Mapping) or not tables:
        raise ConfigError(
            f"{source}: rules: no rules; add [rules.METRIC] tables "
            "(an empty gate would pass every candidate)"
        )
    return tuple(
        rule for metric, table in tables.items() for rule in _table_rules(metric, table, source)
    )


def _check_top_level(data: Mapping[str, object], source: str) -> None:
    """Refuse a top-level key that is none of the gates file's tables."""
    for key in data:
        # [quarantine]: evaluator.gate.repeats; [baseline]: evaluator.gate.ceiling;
        # [judged], [judge]: evaluator.judge.gating
        if key not in ("rules", "quarantine", "baseline", "judged", "judge"):
            raise ConfigError(
                f"{source}: {key}: unknown top-level key (expected [rules.METRIC] tables, "
                "[quarantine], [baseline], [judged.METRIC] or [judge])"
            )


def _known_metric(metric: str, where: str) -> None:
    """Raise :class:`ConfigError` (``where`` names the file and table) unless ``metric`` is
    one a ``[rules.METRIC]`` table gates; a judged metric is pointed to ``[judged.METRIC]``."""
    if judged_metric(metric) is not None:
        raise ConfigError(
            f"{where}: {metric} is a judged metric: write it as [judged.{metric}] "
            "(min, max_drop, advisory; a hard judged rule needs a calibrated judge, "
            "docs/judge.md)"
        )
    if metric not in GATE_METRICS and metric not in POSITIONED_METRICS:
        raise ConfigError(
            f"{where}: unknown metric (known: {', '.join(GATE_METRICS)}; "
            f"add {POSITION_SEPARATOR}N for a conversation's turns at position N, one of "
            f"{', '.join(TURN_POSITIONS)})"
        )


def _table_rules(metric: str, table: object, source: str) -> list[Rule]:
    """The rules of one ``[rules.METRIC]`` table, in key order (its noise floor applied to
    its growth rules)."""
    where = f"rules.{metric}"
    _known_metric(metric, f"{source}: {where}")
    if not isinstance(table, Mapping) or not table:
        raise ConfigError(
            f"{source}: {where}: expected a table with at least one of {', '.join(RULE_KINDS)}"
        )
    floor = _noise_floor(source, where, metric, table)
    kinds = [k for k in table if k != NOISE_FLOOR_KEY]
    if not kinds:
        raise ConfigError(
            f"{source}: {where}: {NOISE_FLOOR_KEY} alone is no rule; add one of "
            f"{', '.join(RULE_KINDS)}"
        )
    rules = []
    for kind in kinds:
        _check_kind(source, where, metric, kind)
        limit = _check_limit(source, f"{where}.{kind}", metric, kind, table[kind])
        growth = kind in _GROWTH_KINDS
        rules.append(Rule(metric, kind, limit, noise_floor=floor if growth else 0.0))
    return rules


def _check_kind(source: str, where: str, metric: str, kind: str) -> None:
    """Refuse a key that is no rule kind, naming the known ones and the nearest."""
    if kind in RULE_KINDS:
        return
    known = [*RULE_KINDS, *([NOISE_FLOOR_KEY] if metric in _SECONDS else [])]
    close = difflib.get_close_matches(kind, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"{source}: {where}.{kind}: unknown key (known: {', '.join(known)}){hint}")


def _noise_floor(source: str, where: str, metric: str, table: Mapping[str, object]) -> float:
    if NOISE_FLOOR_KEY not in table:
        return DEFAULT_NOISE_FLOOR_SECONDS if metric in _SECONDS else 0.0
    value = table[NOISE_FLOOR_KEY]
    key = f"{where}.{NOISE_FLOOR_KEY}"
    if metric not in _SECONDS:
        raise ConfigError(f"{source}: {key}: only latency metrics (*_seconds) have a noise floor")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{source}: {key}: must be a finite number (got {value!r})")
    if value < 0:
        raise ConfigError(f"{source}: {key}: must be >= 0 (got {value!r})")
    return float(value)


@dataclass(frozen=True, slots=True)
class GatesFile:
    """One gates file, read and parsed once: every table a gate reads from it.

    ``rules`` (``[rules.*]``), ``quarantine`` (``[quarantine]``,
    :mod:`evaluator.gate.repeats`), ``ceiling`` (``[baseline] max_error_rate``,
    :mod:`evaluator.gate.ceiling`), ``judged`` (``[judged.*]``,
    :mod:`evaluator.judge.gating`) and ``judge`` (``[judge]``: what the candidate's judge is
    held to); ``source`` is the file, or ``"built-in defaults"``.
    """

    source: str
    rules: tuple[Rule, ...]
    quarantine: Quarantine = field(default_factory=Quarantine)
    ceiling: float = DEFAULT_BASELINE_MAX_ERROR_RATE
    judged: tuple[JudgedRule, ...] = ()
    judge: GatePolicy = field(default_factory=GatePolicy)


#: The gate when no gates file exists: the built-in rules, nothing else.
DEFAULT_GATES = GatesFile("built-in defaults", DEFAULT_RULES)


def _read_toml(path: str | Path) -> Mapping[str, object]:
    """The decoded gates file (bounded read, UTF-8, TOML).

    Raises:
        ConfigError: missing, unreadable or invalid TOML; one line naming the file.
    """
    source = str(path)
    try:
        text = border.read_file(path, border.MAX_SETTINGS_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: gates file does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{source}: cannot read gates file: {exc}") from exc
    try:
        return tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, or a 5,000-digit integer's digit limit
        raise ConfigError(f"{source}: invalid TOML: {exc}") from exc


def read_gates(path: str | Path) -> GatesFile:
    """Read one gates file (TOML) and parse every table of it, rules first.

    Raises:
        ConfigError: unreadable, invalid TOML, or an invalid table; one line naming the file
            and the key.
    """
    source = str(path)
    data = _read_toml(path)
    return GatesFile(
        source,
        parse_rules(data, source),
        parse_quarantine(data, source),
        parse_baseline_ceiling(data, source),
        parse_judged_rules(data, source),
        parse_gate_policy(data, source),
    )


def load_gates(path: str | Path | None = None) -> GatesFile:
    """The gates file to apply: ``path`` (a ``--gates`` flag or the ``gates_file`` setting)
    must exist when given; otherwise ``config/gates.toml`` when present, else
    :data:`DEFAULT_GATES` (the built-in :data:`DEFAULT_RULES`).
    """
    if path is not None:
        return read_gates(path)
    if DEFAULT_GATES_PATH.is_file():
        return read_gates(DEFAULT_GATES_PATH)
    return DEFAULT_GATES

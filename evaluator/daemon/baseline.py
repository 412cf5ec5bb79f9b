"""The release gate in production: each complete run judged against a job's baseline report.

The same rules as ``evaluator gate`` (``gates_file``, else ``config/gates.toml``, else the
defaults), so a Grafana alert on ``rag_eval_gate_passing`` mirrors the release gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec
import structlog

from evaluator.errors import ConfigError, GateError, ReportError
from evaluator.gate import GateResult, Rule, evaluate_gate, load_gates
from evaluator.gate.repeats import Quarantine
from evaluator.metrics import METRICS
from evaluator.models import Case
from evaluator.report import RunReport, read_report
from evaluator.summary import summarise

__all__ = ["BaselineGate", "GateVerdict"]

log = structlog.get_logger("evaluator.daemon")

#: The quality ratios the daemon exports as gauges: each gets its baseline overlay.
_OVERLAID = tuple(spec.name for spec in METRICS if spec.quality and spec.gauge is not None)


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """What the exporter shows: the verdict and each rule's state (applicable rules only)."""

    passing: bool
    rules_failing: Mapping[str, bool]
    #: where to look when it fails: the gate's decision table, as `evaluator gate` prints it
    #: ("recall +0.000, MRR -0.380: look at fusion or rerank")
    diagnosis: tuple[str, ...] = ()


class BaselineGate:
    """A baseline report and the gate rules, loaded once at start."""

    def __init__(
        self,
        baseline: RunReport,
        rules: tuple[Rule, ...],
        source: str,
        quarantine: Quarantine | None = None,
    ) -> None:
        self.baseline = baseline
        self.rules = rules
        self.source = source
        self.quarantine = quarantine or Quarantine()

    @classmethod
    def load(cls, path: Path, gates_file: Path | None) -> BaselineGate:
        """Raises ConfigError naming the job's baseline or gates file when either is bad."""
        try:
            baseline = read_report(path)
        except ReportError as exc:
            raise ConfigError(f"baseline: {exc}") from exc
        gates = load_gates(gates_file)
        return cls(baseline, gates.rules, gates.source, gates.quarantine)

    def ratios(self) -> dict[str, float]:
        """The baseline's quality ratios, for dashboard overlays."""
        summary = self.baseline.summary
        return {m: v for m in _OVERLAID if (v := summary.get(m)) is not None}

    def for_cases(self, cases: tuple[Case, ...], sharded: bool) -> RunReport:
        """The baseline restricted to a shard's cases: a shard can't be missing the others."""
        if not sharded:
            return self.baseline
        ids = {c.id for c in cases}
        kept = tuple(c for c in self.baseline.cases if c.id in ids)
        return msgspec.structs.replace(self.baseline, cases=kept, summary=summarise(kept))

    def judge(
        self,
        candidate: RunReport,
        cases: tuple[Case, ...],
        sharded: bool,
        classed_flaky: tuple[str, ...] = (),
    ) -> GateVerdict | None:
        """The verdict on a complete run, or None when the reports are not comparable.

        ``classed_flaky``: the cases the job's history classes flaky, left out of the rules
        when the gates file's quarantine says ``flaky = true``.
        """
        quarantine = replace(self.quarantine, classed_flaky=classed_flaky)
        try:
            result = evaluate_gate(
                self.for_cases(cases, sharded),
                candidate,
                self.rules,
                with_intervals=False,
                quarantine=quarantine,
            )
        except GateError as exc:
            log.warning("gate_not_comparable", reason=str(exc), baseline=self.baseline.run_id)
            return None
        return _verdict(result)


def _verdict(result: GateResult) -> GateVerdict:
    """What the daemon keeps of a gate's result (each rule failing or not, where to look),
    logging the cases left out and a failing gate's reasons."""
    failing = {r.name: not r.passed for r in result.rules if r.applicable}
    if result.missing_ids:
        failing["cases.complete"] = True
    if result.repeats is not None and result.repeats.left_out:
        log.info("gate_left_out", cases=dict(result.repeats.left_out))
    if result.passed:
        return GateVerdict(passing=True, rules_failing=failing, diagnosis=())
    log.warning(
        "gate_failing",
        rules=[r.message for r in result.failures],
        missing_cases=len(result.missing_ids),
    )
    diagnosis = tuple(f"{f.signal}: look at {f.look_at}" for f in result.diagnosis)
    return GateVerdict(passing=False, rules_failing=failing, diagnosis=diagnosis)

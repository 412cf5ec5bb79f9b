"""The release gate: judge a candidate run report against a baseline under hard rules.

The core is pure and cheap to import (numpy is loaded only when intervals are computed)::

    from evaluator.gate import evaluate_gate, load_gates

    gates = load_gates()               # the gates file, read and parsed once
    result = evaluate_gate(baseline, candidate, gates.rules, with_intervals=False)
    result.passed                      # the verdict
    [(r.name, r.passed, r.applicable) for r in result.rules]

Rendering (:mod:`evaluator.gate.render`) and the Pushgateway (:mod:`evaluator.gate.push`)
are separate modules, imported by the CLI.
"""

from __future__ import annotations

from evaluator.gate.rules import DEFAULT_RULES, GatesFile, Rule, load_gates
from evaluator.gate.verdict import GateResult, evaluate_gate

__all__ = ["DEFAULT_RULES", "GateResult", "GatesFile", "Rule", "evaluate_gate", "load_gates"]

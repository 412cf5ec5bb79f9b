"""The Prometheus rules of the configured SLOs: recording rules and multiwindow,
multi-burn-rate alerts, as a rules file or a Prometheus Operator PrometheusRule.

One group per SLO (``rag-eval-slo-<name>``), its rules in evaluation order, so an alert
reads the ratios recorded in the same evaluation:

Every rule carries its SLO as a static ``slo`` label (so no two groups write one series).

- ``rag_eval:slo_sli_error:ratio_rate<window>`` (label ``window``): bad events over all
  events in each alert window and the SLO window, Sloth's names; no sample when there was
  no event (never NaN);
- ``rag_eval:slo_burn_rate:ratio`` (label ``window``): that ratio over the error budget, one
  name for every window (dashboards draw it by ``window``);
- ``rag_eval:slo_error_budget_remaining:ratio``: 1 minus the burn rate over the SLO window;
- ``RagEvalSLOFastBurn`` (page, severity ``critical``) and ``RagEvalSLOSlowBurn`` (ticket,
  ``warning``): one rule per window pair, Pyrra's way, labelled ``long_window`` and
  ``short_window``, firing while the burn rate over both windows is above the pair's.

The windows and burn rates are :func:`evaluator.slo.burn.plan_burn_alerts`'s: every way
they differ from the SRE workbook's is written as a comment above what it changed.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from evaluator.config import Settings
from evaluator.config.slo import SloConfig
from evaluator.slo.burn import BurnPlan, PlannedAlert
from evaluator.slo.duration import format_duration

__all__ = [
    "ALERT_NAMES",
    "DEFAULT_RUNBOOK_BASE",
    "SEVERITIES",
    "BlockDumper",
    "SloRules",
    "check_runbook_base",
    "render_prometheusrule",
    "render_rules",
    "slo_rules",
]

#: where the alerts' runbook links point until ``--runbook-base`` says where yours is: the
#: daemon's own runbook page at its default address (evaluator/pages/runbook.py), which
#: resolves wherever the daemon listens there (the demo, the compose stack, a port-forward);
#: deploy/k8s/generate_prometheusrule.py links the same
DEFAULT_RUNBOOK_BASE = "http://127.0.0.1:9464/runbook"
#: the alert of each severity of the workbook
ALERT_NAMES = {"page": "RagEvalSLOFastBurn", "ticket": "RagEvalSLOSlowBurn"}
#: the Alertmanager severity of each (the shipped alerts' convention: critical pages)
SEVERITIES = {"page": "critical", "ticket": "warning"}
_WIDTH = 96


class BlockDumper(yaml.SafeDumper):
    """Block style for multi-line strings (PromQL), plain style otherwise."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


BlockDumper.add_representer(str, _represent_str)


def _number(value: float) -> str:
    return f"{value:.10g}"


def check_runbook_base(base: str) -> str:
    """``base`` if it is an absolute http(s) URL without a fragment.

    Raises:
        ValueError: it is not.
    """
    if not re.fullmatch(r"https?://[^\s#\"'{}]+", base):
        raise ValueError(f"--runbook-base must be an absolute http(s) URL without '#': {base!r}")
    return base


@dataclass(frozen=True, slots=True)
class SloRules:
    """One SLO, the jobs it counts (their names) and its planned alerts."""

    slo: SloConfig
    jobs: tuple[str, ...]
    plan: BurnPlan

    @property
    def group(self) -> str:
        return f"rag-eval-slo-{self.slo.name}"


def slo_rules(settings: Settings) -> list[SloRules]:
    """Every configured SLO with its jobs and alerts (the settings were checked at load)."""
    return [
        SloRules(s, tuple(j.key for j in settings.slo_jobs(s)), settings.burn_plan(s))
        for s in settings.slos
    ]


# --- the rules of one SLO -------------------------------------------------------------------


def _selector(slo: str, **labels: str) -> str:
    pairs = [f'slo="{slo}"', *(f'{k}="{v}"' for k, v in labels.items())]
    return "{" + ",".join(pairs) + "}"


def _ratio_rules(rules: SloRules) -> list[dict[str, Any]]:
    name, budget = rules.slo.name, rules.plan.budget
    windows = sorted({*rules.plan.windows, rules.slo.window_seconds})
    ratios, burns = [], []
    for seconds in windows:
        window = format_duration(seconds)
        events = f"rag_eval_slo_events_total{_selector(name)}"
        bad = f"rag_eval_slo_events_total{_selector(name, outcome='bad')}"
        ratios.append(
            {
                "record": f"rag_eval:slo_sli_error:ratio_rate{window}",
                "expr": f"sum by (slo) (increase({bad}[{window}]))\n"
                f"  / (sum by (slo) (increase({events}[{window}])) > 0)\n",
                "labels": {"slo": name, "window": window},
            }
        )
        burns.append(
            {
                "record": "rag_eval:slo_burn_rate:ratio",
                "expr": f"rag_eval:slo_sli_error:ratio_rate{window}{_selector(name)}"
                f" / {_number(budget)}",
                "labels": {"slo": name, "window": window},
            }
        )
    period = rules.slo.window
    remaining = {
        "record": "rag_eval:slo_error_budget_remaining:ratio",
        "expr": f"1 - sum by (slo) (rag_eval:slo_burn_rate:ratio{_selector(name, window=period)})",
        "labels": {"slo": name},
    }
    return [*ratios, *burns, remaining]


def _burn(name: str, window: str, factor: float) -> str:
    series = f"rag_eval:slo_burn_rate:ratio{_selector(name, window=window)}"
    return f"max without (window) ({series}) > {_number(factor)}"


_BUDGET_LEFT = (
    '{{ with printf "rag_eval:slo_error_budget_remaining:ratio{slo=%q}" $labels.slo | query }}'
    "{{ . | first | value | humanizePercentage }}{{ else }}unknown{{ end }}"
)


def _alert(rules: SloRules, alert: PlannedAlert, runbook_base: str) -> dict[str, Any]:
    slo, name = rules.slo, ALERT_NAMES[alert.severity]
    expr = _burn(slo.name, alert.long, alert.factor)
    if alert.short_seconds != alert.long_seconds:
        expr += f"\nand\n{_burn(slo.name, alert.short, alert.factor)}"
        short = f", and above {_number(alert.factor)}x over the last {alert.short}"
    else:
        short = " (two runs of the job)"
    speed = "fast" if alert.severity == "page" else "slowly"
    return {
        "alert": name,
        "expr": expr + "\n",
        "labels": {
            "severity": SEVERITIES[alert.severity],
            "slo": slo.name,
            "long_window": alert.long,
            "short_window": alert.short,
        },
        "annotations": {
            "summary": f"SLO {{{{ $labels.slo }}}} burns its error budget {speed}: "
            f"{{{{ $value | humanize }}}}x over {alert.long}",
            "description": f"The error ratio of SLO {{{{ $labels.slo }}}} ({slo.indicator}, "
            f"objective {_number(slo.objective)} over {slo.window}, an error budget of "
            f"{_number(rules.plan.budget)}) has been {{{{ $value | humanize }}}} times its "
            f"budget over the last {alert.long}{short}. Budget left over the last "
            f"{slo.window}: {_BUDGET_LEFT}.",
            "runbook_url": f"{runbook_base}#{name.lower()}",
        },
    }


# --- the text ---------------------------------------------------------------------------------


def _comment(text: str, indent: int) -> list[str]:
    """``text`` as comment lines (control characters of names from the configuration
    replaced, so a line stays one line)."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    prefix = " " * indent + "# "
    width = _WIDTH - len(prefix)
    return [prefix + line for line in textwrap.wrap(clean, width, break_on_hyphens=False)]


def _item(value: dict[str, Any], indent: int) -> list[str]:
    """``value`` as one YAML list item at ``indent`` spaces."""
    text = yaml.dump([value], Dumper=BlockDumper, sort_keys=False, allow_unicode=True, width=4096)
    return [" " * indent + line if line else line for line in text.splitlines()]


def _about(rules: SloRules) -> list[str]:
    slo, plan = rules.slo, rules.plan
    return [
        f"SLO {slo.name}: {slo.indicator} of {', '.join(rules.jobs)}, objective "
        f"{_number(slo.objective)} over {slo.window} (an error budget of "
        f"{_number(plan.budget)}); its jobs run at most "
        f"{format_duration(max(1, round(plan.run_interval_seconds)))} apart.",
        *plan.notes,
        *(f"left out: {why}." for why in plan.left_out),
    ]


def _group(rules: SloRules, indent: int, runbook_base: str) -> list[str]:
    lines = [line for about in _about(rules) for line in _comment(about, indent)]
    lines.append(" " * indent + f"- name: {rules.group}")
    lines.append(" " * indent + "  rules:")
    inner = indent + 4
    for rule in _ratio_rules(rules):
        lines += _item(rule, inner)
    for alert in rules.plan.alerts:
        pair = f"{alert.severity} {alert.long}/{alert.short} above {_number(alert.factor)}x"
        lines += _comment(f"{pair}, as the workbook's {_workbook(alert)}", inner)
        for note in alert.notes:
            lines += _comment(f"{alert.long}/{alert.short}: {note}", inner)
        lines += _item(_alert(rules, alert, runbook_base), inner)
    return lines


def _workbook(alert: PlannedAlert) -> str:
    row = alert.workbook
    return (
        f"{format_duration(row.long_seconds)}/{format_duration(row.short_seconds)} at "
        f"{_number(row.factor)}x"
    )


def _header(source: str) -> list[str]:
    return _comment(
        f"GENERATED by `evaluator slo rules` from {source}: do not edit; change [[slos]] and "
        "run it again. One group per SLO: the error ratio and burn rate over each alert "
        "window and over the SLO window, the budget left, and the multiwindow, "
        "multi-burn-rate alerts of the SRE workbook (chapter 5): RagEvalSLOFastBurn pages "
        "(severity critical), RagEvalSLOSlowBurn opens a ticket (warning). docs/slo.md says "
        "how the windows and burn rates were chosen; deploy/RUNBOOK.md says what to do when "
        "they fire.",
        0,
    )


def _groups(rules: Sequence[SloRules], indent: int, runbook_base: str) -> Iterable[str]:
    for one in rules:
        yield from _group(one, indent, runbook_base)


def render_rules(rules: Sequence[SloRules], source: str, runbook_base: str) -> str:
    """A Prometheus rules file (``rule_files``, ``promtool check rules``)."""
    check_runbook_base(runbook_base)
    lines = [*_header(source), "groups:", *_groups(rules, 2, runbook_base)]
    return "\n".join(lines) + "\n"


def render_prometheusrule(
    rules: Sequence[SloRules], source: str, runbook_base: str, name: str
) -> str:
    """The same groups as a Prometheus Operator PrometheusRule called ``name``."""
    check_runbook_base(runbook_base)
    head = yaml.dump(
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {
                "name": name,
                "labels": {
                    "app.kubernetes.io/name": "rag-evaluator",
                    "app.kubernetes.io/part-of": "rag-evaluator",
                },
            },
        },
        Dumper=BlockDumper,
        sort_keys=False,
    )
    lines = [
        *_header(source),
        "# Your Prometheus resource must select it (ruleSelector, e.g. a `release: <name>`",
        "# label with kube-prometheus-stack).",
        *head.splitlines(),
        "spec:",
        "  groups:",
        *_groups(rules, 4, runbook_base),
    ]
    return "\n".join(lines) + "\n"

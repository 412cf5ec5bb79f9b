"""The PromQL queries a Grafana dashboard sends, with its template variables substituted.

Used by the static dashboard test (every query must parse) and meant for a live test that
sends each query to a real Prometheus::

    for title, expr in dashboard_queries(DASHBOARD, DEFAULT_SUBSTITUTIONS):
        ...  # GET /api/v1/query?query=<expr>: status success, non-empty result

Variables are written ``$name``, ``${name}``, ``${name:format}`` or ``[[name]]`` in Grafana;
each is replaced by ``substitutions[name]``. A variable without a value is an error, so a
query can never reach Prometheus half-substituted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_SUBSTITUTIONS", "dashboard_queries", "iter_panels", "substitute"]

#: "All" for the query variables (their allValue), and fixed windows for Grafana's built-ins.
DEFAULT_SUBSTITUTIONS: Mapping[str, str] = {
    "target": ".*",
    "dataset": ".*",
    "slo": ".*",
    "__rate_interval": "1h",
    "__interval": "1h",
    "__range": "1d",
}

_VARIABLE = re.compile(
    r"\$\{(?P<braced>\w+)(?::[^}]*)?\}|\[\[(?P<bracketed>\w+)(?::[^\]]*)?\]\]|\$(?P<plain>\w+)"
)
_LABEL_VALUES = re.compile(
    r"^\s*label_values\(\s*(?P<selector>.+),\s*(?P<label>\w+)\s*\)\s*$", re.S
)


def substitute(text: str, substitutions: Mapping[str, str]) -> str:
    """``text`` with every Grafana variable replaced by its value in ``substitutions``.

    ``$1``-style regex references (label_replace) are left alone.

    Raises:
        KeyError: a variable has no value in ``substitutions``.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bracketed") or match.group("plain")
        if name.isdigit():
            return match.group(0)
        if name not in substitutions:
            raise KeyError(f"no value for the dashboard variable ${name} in {text!r}")
        return substitutions[name]

    return _VARIABLE.sub(replace, text)


def iter_panels(dashboard: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel of a classic dashboard model, rows included, collapsed rows' panels too."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def _variable_query(variable: Mapping[str, Any]) -> str:
    query = variable.get("query", "")
    return str(query.get("query", "") if isinstance(query, Mapping) else query)


def dashboard_queries(path: str | Path, substitutions: Mapping[str, str]) -> list[tuple[str, str]]:
    """(panel title, PromQL expression) for every panel target and query variable.

    A query variable ``label_values(selector, label)`` becomes ``count by (label) (selector)``,
    titled ``variable <name>``: an instant query that returns data exactly when the variable
    would have values.

    Raises:
        KeyError: a variable has no value in ``substitutions``.
        ValueError: a query variable is not of the form ``label_values(selector, label)``.
    """
    dashboard = json.loads(Path(path).read_text(encoding="utf-8"))
    queries: list[tuple[str, str]] = []
    for panel in iter_panels(dashboard):
        for target in panel.get("targets", []):
            expr = target.get("expr", "")
            if expr.strip():
                queries.append((panel["title"], substitute(expr, substitutions)))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = _variable_query(variable)
        match = _LABEL_VALUES.match(query)
        if match is None:
            raise ValueError(
                f"variable {variable['name']}: expected label_values(selector, label), "
                f"got {query!r}"
            )
        selector = substitute(match["selector"], substitutions)
        queries.append(
            (f"variable {variable['name']}", f"count by ({match['label']}) ({selector})")
        )
    return queries

"""The fuzz tier's measured figures (peak RSS, worst ``/healthz``, outcomes per attack
class), written where ``FUZZ_FIGURES`` says, for docs/reliability.md to be checked against.

Each test module records its own section; a file from an earlier run keeps its other
sections, so running one module updates only its own.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["record", "table_rows"]


def record(section: str, data: dict[str, Any]) -> None:
    """Merge ``data`` under ``section`` into the ``FUZZ_FIGURES`` file (no-op unset)."""
    target = os.environ.get("FUZZ_FIGURES")
    if not target or not data:
        return
    path = Path(target)
    try:
        figures = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        figures = {}
    figures[section] = data
    figures.setdefault("runs", {})[section] = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seeds": os.environ.get("FUZZ_SEED", "0"),
        "rounds": os.environ.get("FUZZ_ROUNDS", "1"),
        "per_pair": os.environ.get("FUZZ_PER_PAIR", "2"),
        "load_average": os.getloadavg()[0],
    }
    path.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n", "utf-8")


def table_rows(figures: dict[str, Any]) -> list[str]:
    """docs/reliability.md's figures table, one Markdown row per attack class of the
    daemon and per CLI surface, from a figures file (worst over its seeds)."""
    rows = []
    classes: dict[str, list[dict[str, Any]]] = {}
    for key, data in figures.get("targets", {}).items():
        classes.setdefault(key.split(":")[1], []).append(data)
    for name, runs in sorted(classes.items()):
        attacks = sum(r["attacks"] for r in runs)
        rss = max(r["peak_rss_mib"] for r in runs)
        worst = max(r["worst_healthz_ms"] for r in runs)
        rows.append(f"| daemon: {name} | {attacks} | {rss:.0f} MiB | {worst:,.0f} ms |")
    surfaces: dict[str, list[dict[str, Any]]] = {}
    for key, data in figures.get("cli", {}).items():
        command, _, attack = key.rpartition(" ")
        surfaces.setdefault(f"{command} ({attack.partition('.')[0]})", []).append(data)
    for name, runs in sorted(surfaces.items()):
        rss = max(r["rss_mib"] for r in runs)
        slowest = max(r["seconds"] for r in runs)
        rows.append(f"| `{name}` | {len(runs)} | {rss:.0f} MiB | {slowest:.1f} s (whole process) |")
    return rows

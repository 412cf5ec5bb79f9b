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

__all__ = ["record"]


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

"""Stored calibrations for tests, as ``evaluator calibrate`` writes them: every figure derived
from a confusion table (a bare ``calibrated: true`` is refused on read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluator.judge.calibrate import CheckCalibration, Confusion
from evaluator.judge.calibration_store import CALIBRATION_FILE
from evaluator.judge.prompts import PROMPT_VERSION

#: 100 labels, 2 disagreements: kappa's lower bound near 0.9, calibrated at the default floor
AGREEING: Confusion = ((58, 1), (1, 40))
#: 100 labels at chance: never calibrated
AT_CHANCE: Confusion = ((25, 25), (25, 25))


def entry(
    model: str, check: str = "fact_support", *, agreeing: bool = True, **over: Any
) -> dict[str, Any]:
    """One stored entry for ``model`` (prompt version of today), derived from the
    :data:`AGREEING` table (calibrated) or the :data:`AT_CHANCE` one (not); ``over``
    replaces keys afterwards (a forgery)."""
    table = AGREEING if agreeing else AT_CHANCE
    (_, fn), (fp, _) = table
    disagreements = tuple((f"h{i}", True, False) for i in range(fn)) + tuple(
        (f"j{i}", False, True) for i in range(fp)
    )
    derived = CheckCalibration.derived(
        (model, PROMPT_VERSION, check), table, disagreements, floor=0.6, min_labels=50
    )
    assert derived.calibrated is agreeing
    return {**derived.to_dict(), **over}


def write(folder: Path, *entries: dict[str, Any]) -> Path:
    """``folder``/judge-calibration.json holding ``entries``."""
    path = folder / CALIBRATION_FILE
    path.write_text(json.dumps({"labels_file": "labels.jsonl", "reports": [],
                                "checks": list(entries)}), "utf-8")  # fmt: skip
    return path

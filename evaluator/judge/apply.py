"""Judging a saved report, start to end: read it (with its evidence texts), judge it, write
it back atomically with its ``judge`` block. Used by ``evaluator run`` (a job with a judge)
and ``evaluator judge REPORT``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from pathlib import Path

import msgspec

from evaluator.border import printable
from evaluator.judge.agreement import vote_figures
from evaluator.judge.calibration_store import CALIBRATION_FILE, read_calibration
from evaluator.judge.checks import judged_metric
from evaluator.judge.judged_pass import judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from evaluator.report import RunReport, read_report, write_report

__all__ = ["calibration_of", "format_judged", "judge_file", "trust_problem", "with_calibration"]


def judge_file(
    path: Path,
    config: JudgeConfig,
    *,
    cache_folder: Path | None,
    output: Path | None = None,
) -> tuple[RunReport, JudgedRun]:
    """Judge the report at ``path`` and write it (to ``output``, default in place).

    ``cache_folder`` holds the history store whose verdict cache is used (None: no cache).
    """
    report = read_report(path)
    cache = VerdictStore(cache_folder) if cache_folder is not None and config.cache else None

    async def go() -> JudgedRun:
        async with JudgePanel(config) as panel:
            return await judge_report(report, panel, cache=cache)

    judged = with_calibration(asyncio.run(go()), cache_folder or path.parent)
    report = msgspec.structs.replace(report, judge=judged.to_dict())
    write_report(report, output or path)
    return report, judged


def with_calibration(judged: JudgedRun, folder: Path) -> JudgedRun:
    """``judged`` naming the stored calibration its trust is decided by, when there is one
    (``folder``/judge-calibration.json, written by ``evaluator calibrate``)."""
    path = folder / CALIBRATION_FILE
    return dataclasses.replace(judged, calibration=str(path)) if path.is_file() else judged


def calibration_of(judged: JudgedRun) -> dict[str, bool]:
    """Each check this run's judged metrics read, and whether the calibration the run names
    calls its judge (model + prompt version) calibrated for it, by check name."""
    calibrated: dict[str, bool] = {}
    if judged.calibration is not None:
        stored = read_calibration(Path(judged.calibration))
        calibrated = dict(stored.calibrated().get(judged.identity, {}))
    checks = {spec.check for name in judged.metrics if (spec := judged_metric(name)) is not None}
    return {check: calibrated.get(check, False) for check in sorted(checks)}


def trust_problem(judged: JudgedRun, calibrated: Mapping[str, bool]) -> str | None:
    """Why this run's judged metrics are not to be trusted, in a short phrase, or None:
    a canary was judged supported, or a check the run was judged on is not calibrated
    (``calibrated``: :func:`calibration_of` the run)."""
    if judged.compromised:
        return "compromised (a canary answer was judged supported)"
    missing = [check for check, ok in calibrated.items() if not ok]
    return f"uncalibrated for {', '.join(missing)}" if missing else None


def format_judged(judged: JudgedRun) -> str:
    """The judged metrics and the judge's own health, for the terminal; a metric whose check
    the named calibration does not call calibrated says so."""
    calibrated = calibration_of(judged)
    lines = [f"judge: {printable(judged.model)} (prompts {printable(judged.prompt_version)})"]
    if judged.compromised:
        lines.append(
            "  COMPROMISED: a canary answer was judged supported; judged metrics are advisory"
        )
    for name, value in judged.metrics.items():
        shown = "n/a" if value is None else f"{value:.3f}"
        spec = judged_metric(name)
        trusted = spec is not None and calibrated.get(spec.check, False)
        lines.append(f"  {name:<24} {shown}" + ("" if trusted else "  (uncalibrated)"))
    u = judged.usage
    errors = ", ".join(f"{k} {v}" for k, v in sorted(u.errors.items())) or "none"
    lines.append(
        f"  calls {u.calls}, cache hits {u.cache_hits}, skipped {u.skipped}, errors: {errors}; "
        f"tokens {u.input_tokens}+{u.output_tokens}, cost {u.cost:.4f}"
    )
    fooled = sum(1 for c in judged.canaries if c.fooled)
    lines.append(f"  canaries {len(judged.canaries)}, fooled {fooled}")
    lines.extend(_votes_lines(judged))
    return "\n".join(lines)


def _votes_lines(judged: JudgedRun) -> list[str]:
    """With repeated verdicts: who voted, and per check the outcomes the votes left
    uncertain and Krippendorff's alpha between the votes (none for a judge asked once)."""
    if judged.samples == 1 and not judged.panel:
        return []
    judges = (
        f"{len(judged.panel)} judges ({', '.join(judged.panel)})" if judged.panel else "1 judge"
    )
    lines = [f"  votes: {judged.samples} sample(s) x {judges}; majority decides"]
    for check, f in vote_figures(judged.cases).items():
        answered = f.decided + f.uncertain
        if answered:
            alpha = "n/a" if f.alpha is None else f"{f.alpha:.3f}"
            lines.append(f"  {check:<24} uncertain {f.uncertain} of {answered}, alpha {alpha}")
    return lines
